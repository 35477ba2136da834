#!/usr/bin/env python3
"""Reads the Parquet files gpipe's writer wrote (sink/testdata/parquet-writer)
with pyarrow and compares them with expected.json there: each column's Arrow
type (ARROW:schema gives back uint32, large_string, dictionaries), every
value, the row groups, and each column chunk's statistics (min, max, null
count), which pyarrow must take as valid. Every file is read with page
checksum verification on (gpipe's writer puts a CRC-32 on every page), and
a copy of it with the last byte of each column chunk changed (the last byte
of its last page's body) must be refused by that verification.

Usage: python3 scripts/parquet-readback/pyarrow-check.py [DIR]
Prints one line per file and "N passed, M failed" last; exits 1 on a failure.
"""
import json
import math
import os
import struct
import sys

import pyarrow as pa
import pyarrow.parquet as pq


def parse_float(s):
    low = s.lower()
    if low == "nan":
        return math.nan
    if low in ("+inf", "inf"):
        return math.inf
    if low == "-inf":
        return -math.inf
    return float(s)


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def same_float(a, b):
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b and math.copysign(1, a) == math.copysign(1, b)


def same(physical, v, want):
    if v is None or want is None:
        return v is None and want is None
    if physical == "int":
        return int(v) == int(want)
    if physical == "float":
        return same_float(f32(v), f32(parse_float(want)))
    if physical == "double":
        return same_float(v, parse_float(want))
    if physical == "string":
        return v == want
    if physical == "binary":
        return bytes(v).hex() == want
    raise ValueError(physical)


def type_ok(got, want):
    if str(got) == want:
        return True
    # pyarrow may give a dictionary of numbers back as a dictionary.
    return pa.types.is_dictionary(got) and str(got.value_type) == want


def check(path, f):
    problems = []
    t = pq.read_table(path, page_checksum_verification=True)
    if t.num_rows != f["rows"]:
        problems.append(f"{t.num_rows} rows, want {f['rows']}")
    for j, c in enumerate(f["columns"]):
        field = t.schema.field(j)
        if field.name != c["name"] or not type_ok(field.type, c["arrow"]):
            problems.append(f"column {j}: {field.name} {field.type}, want {c['name']} {c['arrow']}")
            continue
        values = t.column(j).to_pylist()
        for i, (v, want) in enumerate(zip(values, c["values"])):
            if not same(c["physical"], v, want):
                problems.append(f"column {c['name']} row {i}: {v!r}, want {want!r}")
                break
    md = pq.ParquetFile(path).metadata
    groups = [md.row_group(g).num_rows for g in range(md.num_row_groups)]
    if groups != f["row_groups"]:
        problems.append(f"row groups of {groups} rows, want {f['row_groups']}")
    for g in range(min(md.num_row_groups, len(f["row_groups"]))):
        rg = md.row_group(g)
        for j, c in enumerate(f["columns"]):
            st = rg.column(j).statistics
            want = c["stats"][g]
            where = f"column {c['name']} row group {g}"
            if st is None or not st.has_null_count:
                problems.append(f"{where}: no statistics (pyarrow ignores them)")
                continue
            if st.null_count != want["nulls"]:
                problems.append(f"{where}: null count {st.null_count}, want {want['nulls']}")
            if want["min"] is None:
                if st.has_min_max:
                    problems.append(f"{where}: min {st.min!r} max {st.max!r} of no values")
                continue
            if not st.has_min_max:
                problems.append(f"{where}: no min and max")
            elif not same(c["physical"], st.min, want["min"]) or not same(c["physical"], st.max, want["max"]):
                problems.append(f"{where}: min {st.min!r} max {st.max!r}, want {want['min']} {want['max']}")
    problems += check_damage(path, md)
    return problems


def check_damage(path, md):
    """Changes the last byte of each column chunk (inside its last page's
    body) in a copy of path, one chunk at a time, and checks that pyarrow's
    page checksum verification refuses the copy."""
    problems = []
    with open(path, "rb") as fh:
        good = fh.read()
    damaged = path + ".damaged"
    try:
        for g in range(md.num_row_groups):
            rg = md.row_group(g)
            if rg.num_rows == 0:
                continue
            for j in range(rg.num_columns):
                c = rg.column(j)
                start = c.data_page_offset
                if c.has_dictionary_page and 0 < c.dictionary_page_offset < start:
                    start = c.dictionary_page_offset
                at = start + c.total_compressed_size - 1
                data = bytearray(good)
                data[at] ^= 0x10
                with open(damaged, "wb") as fh:
                    fh.write(data)
                try:
                    pq.read_table(damaged, page_checksum_verification=True)
                    problems.append(f"row group {g} column {c.path_in_schema}: byte {at} changed, read without an error")
                except Exception as e:  # refused, as it should be
                    if "crc" not in str(e).lower() and "checksum" not in str(e).lower():
                        problems.append(f"row group {g} column {c.path_in_schema}: refused, but not for its checksum: {e}")
    finally:
        if os.path.exists(damaged):
            os.remove(damaged)
    return problems


def main():
    d = sys.argv[1] if len(sys.argv) > 1 else "sink/testdata/parquet-writer"
    with open(os.path.join(d, "expected.json")) as fh:
        files = json.load(fh)
    passed = failed = 0
    for f in files:
        try:
            problems = check(os.path.join(d, f["file"]), f)
        except Exception as e:  # a file pyarrow cannot read is a failure
            problems = [f"{type(e).__name__}: {e}"]
        if problems:
            failed += 1
            print(f"FAIL {f['file']}:\n  " + "\n  ".join(problems[:10]))
        else:
            passed += 1
            print(f"ok   {f['file']} ({f['rows']} rows, {len(f['columns'])} columns, pyarrow {pa.__version__})")
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
