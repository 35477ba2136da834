#!/usr/bin/env bash
# gpipe.FromRecords on records a program holds, against gpipe.Load of the
# same table from an Arrow IPC file (mapped) and from Parquet (issue 33):
#   scripts/bench-records.sh [SCALE] [ROUNDS] [BACKEND]
# from the repository root, with Go (it builds bin/recordsbench and
# bin/gpipe), or on a machine without Go with both built already in
# GPIPE_BIN_DIR and GPIPE_NO_BUILD=1 (make gpu-bundle puts them in
# .gpu-bundle). The files are generated once into ${TMPDIR:-/tmp} (Kronecker
# SCALE, default 22, edge factor 16, seed 1: the records' table) and kept.
# Each round runs the three ways in turn, one process each; every line is
# one load's JSON (read_s, build_s, rss_before_bytes, peak_rss_bytes,
# heap_allocated_bytes). The medians per way are printed last.
set -euo pipefail
scale=${1:-22} rounds=${2:-5} backend=${3:-cpu}
bin=${GPIPE_BIN_DIR:-bin}
if [ "${GPIPE_NO_BUILD:-0}" != 1 ]; then
	CGO_ENABLED=0 go build -o "$bin/recordsbench" ./scripts/recordsbench
	CGO_ENABLED=0 go build -o "$bin/gpipe" ./cmd/gpipe
fi
dir=${TMPDIR:-/tmp}
arrow=$dir/kronecker-$scale-16-s1.arrow parquet=$dir/kronecker-$scale-16-s1.parquet
[ -f "$arrow" ] || "$bin/gpipe" gen kronecker --scale "$scale" --seed 1 --output "$arrow"
[ -f "$parquet" ] || "$bin/gpipe" gen kronecker --scale "$scale" --seed 1 --output "$parquet"
log=$(mktemp)
for r in $(seq "$rounds"); do
	"$bin/recordsbench" -scale "$scale" -backend "$backend" records | tee -a "$log"
	"$bin/recordsbench" -backend "$backend" arrow "$arrow" | tee -a "$log"
	"$bin/recordsbench" -backend "$backend" parquet "$parquet" | tee -a "$log"
done
python3 - "$log" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print(f"{'way':8} {'read_s':>8} {'build_s':>8} {'total_s':>8} {'rss_before':>11} {'peak_rss':>9} {'peak-before':>11} {'heap_alloc':>10}")
for way in ("records", "arrow", "parquet"):
    rs = [r for r in rows if r["way"] == way]
    med = lambda k: statistics.median(r[k] for r in rs)
    gib = lambda b: f"{b / 2**30:.2f} GiB"
    print(f"{way:8} {med('read_s'):8.3f} {med('build_s'):8.3f} {med('total_s'):8.3f} {gib(med('rss_before_bytes')):>11} "
          f"{gib(med('peak_rss_bytes')):>9} {gib(med('peak_rss_bytes') - med('rss_before_bytes')):>11} {gib(med('heap_allocated_bytes')):>10}")
PY
rm -f "$log"
