#!/usr/bin/env bash
# Installs DuckDB's node package into .duckdb/ at the repository root (git-
# ignored), where sink's TestParquetWriterDuckDB and duckdb-check.mjs find it.
# Needs node and npm (and the npm registry, or npm's cache in ~/.npm). A
# second run finds the package there and does nothing; .ci/run runs it
# before the tests.
set -euo pipefail
cd "$(dirname "$0")/../.."
version=1.5.6-r.1
if grep -qs "\"version\": \"$version\"" .duckdb/node_modules/@duckdb/node-api/package.json; then
	echo "DuckDB's node package $version is in .duckdb/node_modules"
	exit 0
fi
if ! command -v npm >/dev/null; then
	echo "install-duckdb.sh: npm is not installed; DuckDB's read-back test needs node and npm" >&2
	exit 1
fi
npm install --prefix .duckdb --no-audit --no-fund --silent --prefer-offline "@duckdb/node-api@$version"
echo "DuckDB's node package $version is in .duckdb/node_modules"
