#!/usr/bin/env bash
# Installs DuckDB's node package into .duckdb/ at the repository root (git-
# ignored), where sink's TestParquetWriterDuckDB and duckdb-check.mjs find it.
# Needs node and npm (and the npm registry).
set -euo pipefail
cd "$(dirname "$0")/../.."
npm install --prefix .duckdb --no-audit --no-fund --silent @duckdb/node-api@1.5.6-r.1
echo "DuckDB's node package is in .duckdb/node_modules"
