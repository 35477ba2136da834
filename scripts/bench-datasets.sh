#!/usr/bin/env bash
# Reading one edge table three ways (issue 38): one Parquet file, the same
# edges as 64 part files in a directory, and those parts from an
# S3-compatible server on loopback (scripts/s3serve: gofakes3, the objects
# in its memory):
#   scripts/bench-datasets.sh [SCALE] [ROUNDS] [BACKEND]
# from the repository root, with Go (it builds bin/gpipe and bin/s3serve),
# or on a machine without Go with both built already in GPIPE_BIN_DIR and
# GPIPE_NO_BUILD=1. The files are generated once under ${TMPDIR:-/tmp}
# (Kronecker SCALE, default 24, edge factor 16, seed 1; zstd, row groups of
# 1 Mi rows) and kept. Each round reads the three in turn with
# `gpipe bench --op bfs --trials 1`, one process each; every line is one
# load's JSON with "way" added (read_s, build_s, peak_rss_bytes: the
# process's peak, the graph build's included, which is the same for the
# three). The medians per way are printed last. The server's own memory
# (the parts, held once) is not in gpipe's peak.
set -euo pipefail
scale=${1:-24} rounds=${2:-3} backend=${3:-cpu}
bin=${GPIPE_BIN_DIR:-bin}
if [ "${GPIPE_NO_BUILD:-0}" != 1 ]; then
	CGO_ENABLED=0 go build -o "$bin/gpipe" ./cmd/gpipe
	CGO_ENABLED=0 go build -o "$bin/s3serve" ./scripts/s3serve
fi
dir=${TMPDIR:-/tmp}/gpipe-datasets-k$scale
one=$dir/one/kronecker.parquet
parts=$dir/buckets/lake/k$scale # the server's root is $dir/buckets
per=$(((16 << scale) / 64))
mkdir -p "$dir/one" "$dir/buckets/lake"
[ -f "$one" ] || "$bin/gpipe" gen kronecker --scale "$scale" --seed 1 --output "$one"
[ -f "$parts/_SUCCESS" ] || "$bin/gpipe" gen kronecker --scale "$scale" --seed 1 --output "$parts/" --max-rows-per-file "$per"
echo "one file: $(du -h "$one" | cut -f1); $(ls "$parts" | grep -c '^part-') parts: $(du -sh "$parts" | cut -f1)" >&2

# The server, on a free loopback port; it prints its URL first.
fifo=$(mktemp -u)
mkfifo "$fifo"
"$bin/s3serve" -root "$dir/buckets" >"$fifo" &
server=$!
trap 'kill $server 2>/dev/null; rm -f "$fifo" "${log:-}"' EXIT
read -r endpoint <"$fifo"
echo "s3serve at $endpoint" >&2
# gofakes3 checks no credentials; the SDK needs some, and no other source.
export AWS_ACCESS_KEY_ID=bench AWS_SECRET_ACCESS_KEY=bench AWS_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true

log=$(mktemp)
run() { # way, then gpipe's input arguments
	local way=$1
	shift
	"$bin/gpipe" bench --op bfs --trials 1 --backend "$backend" --json "$@" |
		python3 -c 'import json,sys; r=json.load(sys.stdin); r["way"]=sys.argv[1]; print(json.dumps(r))' "$way" | tee -a "$log"
}
for r in $(seq "$rounds"); do
	run file --input "$one"
	run dir --input "$parts"
	run s3 --input "s3://lake/k$scale/" --s3-endpoint "$endpoint"
done
python3 - "$log" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print(f"{'way':5} {'edges':>11} {'read_s':>8} {'build_s':>8} {'peak_rss':>10}")
for way in ("file", "dir", "s3"):
    rs = [r for r in rows if r["way"] == way]
    med = lambda k: statistics.median(r[k] for r in rs)
    print(f"{way:5} {rs[0]['input_edges']:>11} {med('read_s'):8.3f} {med('build_s'):8.3f} {med('peak_rss_bytes') / 2**30:8.2f} GiB")
PY
