// Reads the Parquet files gpipe's writer wrote (sink/testdata/parquet-writer)
// with DuckDB and compares them with expected.json there: each column's
// type and every value, and each row group's statistics (min, max, null
// count) as DuckDB's parquet_metadata reads them.
//
// Usage: node scripts/parquet-readback/duckdb-check.mjs DIR
// finds @duckdb/node-api in $GPIPE_DUCKDB_MODULES (a node_modules folder),
// else in .duckdb/node_modules (scripts/parquet-readback/install-duckdb.sh).
// Prints one line per file and "N passed, M failed" last; exits 1 on a
// failure.
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const dir = process.argv[2] ?? 'sink/testdata/parquet-writer';
const modules = process.env.GPIPE_DUCKDB_MODULES ?? path.resolve('.duckdb/node_modules');
const require = createRequire(path.join(modules, 'x.js'));
const { DuckDBInstance } = await import(pathToFileURL(require.resolve('@duckdb/node-api')).href);

const db = await DuckDBInstance.create(':memory:');
const con = await db.connect();
const files = JSON.parse(fs.readFileSync(path.join(dir, 'expected.json'), 'utf8'));

// parseFloatText reads a float as expected.json writes it (Go's form).
function parseFloatText(s) {
  switch (s.toLowerCase()) {
    case 'nan': return NaN;
    case '+inf': case 'inf': case 'infinity': return Infinity;
    case '-inf': case '-infinity': return -Infinity;
  }
  return Number(s);
}

function sameFloat(a, b) {
  return (Number.isNaN(a) && Number.isNaN(b)) || Object.is(a, b);
}

// same says whether DuckDB's value v is the expected text want.
function same(physical, v, want) {
  if (want === null || v === null || v === undefined) return want === null && (v === null || v === undefined);
  switch (physical) {
    case 'int': return BigInt(v) === BigInt(want);
    case 'float': return sameFloat(Math.fround(Number(v)), Math.fround(parseFloatText(want)));
    case 'double': return sameFloat(Number(v), parseFloatText(want));
    case 'string': return v === want;
    case 'binary': return Buffer.from(v.bytes).toString('hex') === want;
  }
  throw new Error(`unknown kind ${physical}`);
}

// sameStat compares a statistic as parquet_metadata prints it.
// DuckDB prints an infinite float min or max as null.
function sameStat(physical, v, want) {
  if (v === null && (physical === 'float' || physical === 'double') && want !== null && !Number.isFinite(parseFloatText(want))) return true;
  if (want === null || v === null) return want === null && v === null;
  switch (physical) {
    case 'int': return BigInt(v) === BigInt(want);
    case 'float': return sameFloat(Math.fround(parseFloatText(v)), Math.fround(parseFloatText(want)));
    case 'double': return sameFloat(parseFloatText(v), parseFloatText(want));
    case 'string': return v === want;
  }
  return true; // binary statistics print escaped; the values are compared above
}

const sql = (s) => s.replaceAll("'", "''");
let passed = 0, failed = 0;
for (const f of files) {
  const file = sql(path.join(dir, f.file));
  const problems = [];
  try {
    const desc = (await con.runAndReadAll(`DESCRIBE SELECT * FROM read_parquet('${file}')`)).getRowObjects();
    const rows = (await con.runAndReadAll(`SELECT * FROM read_parquet('${file}')`)).getRows() ?? [];
    if (rows.length !== f.rows) problems.push(`${rows.length} rows, want ${f.rows}`);
    f.columns.forEach((c, j) => {
      if (desc[j]?.column_name !== c.name || desc[j]?.column_type !== c.duckdb) {
        problems.push(`column ${j}: ${desc[j]?.column_name} ${desc[j]?.column_type}, want ${c.name} ${c.duckdb}`);
        return;
      }
      for (let i = 0; i < Math.min(rows.length, f.rows); i++) {
        if (!same(c.physical, rows[i][j], c.values[i])) {
          problems.push(`column ${c.name} row ${i}: ${rows[i][j]}, want ${c.values[i]}`);
          break;
        }
      }
    });
    const meta = (await con.runAndReadAll(`SELECT row_group_id, column_id, stats_min_value, stats_max_value, stats_null_count
      FROM parquet_metadata('${file}') ORDER BY row_group_id, column_id`)).getRowObjects();
    const groups = new Set(meta.map((m) => Number(m.row_group_id)));
    if (groups.size !== f.row_groups.length) problems.push(`${groups.size} row groups, want ${f.row_groups.length}`);
    for (const m of meta) {
      const c = f.columns[Number(m.column_id)];
      const want = c.stats[Number(m.row_group_id)];
      if (Number(m.stats_null_count) !== want.nulls) {
        problems.push(`column ${c.name} row group ${m.row_group_id}: null count ${m.stats_null_count}, want ${want.nulls}`);
      }
      if (!sameStat(c.physical, m.stats_min_value, want.min) || !sameStat(c.physical, m.stats_max_value, want.max)) {
        problems.push(`column ${c.name} row group ${m.row_group_id}: min ${m.stats_min_value} max ${m.stats_max_value}, want ${want.min} ${want.max}`);
      }
    }
  } catch (e) {
    problems.push(String(e));
  }
  if (problems.length) {
    failed++;
    console.log(`FAIL ${f.file}:\n  ${problems.slice(0, 10).join('\n  ')}`);
  } else {
    passed++;
    console.log(`ok   ${f.file} (${f.rows} rows, ${f.columns.length} columns)`);
  }
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
