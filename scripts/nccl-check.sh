#!/usr/bin/env bash
# Runs on the GPU machine, from the repository root, with the binaries of
# `make gpu-bundle` in .gpu-bundle/ (gpipe, gpu.test): where libnccl.so.2 is,
# what `gpipe devices` says of NCCL and of peer access (also with GPIPE_NCCL
# pointing at the library's folder, and at nothing), and the gpu package's
# NCCL and peer tests with GPIPE_REQUIRE_GPU=1. Logs go to OUTDIR; a short
# table comes last. Usage:
#   scripts/nccl-check.sh OUTDIR
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bundle=$root/.gpu-bundle
logs=${1:?usage: scripts/nccl-check.sh OUTDIR}
mkdir -p "$logs"
logs=$(cd "$logs" && pwd)
for f in gpipe gpu.test; do
	[ -x "$bundle/$f" ] || { echo "no $bundle/$f: run make gpu-bundle (here: tar -xJf .gpu-bundle.tar.xz)" >&2; exit 2; }
done
status=0

nvidia-smi -L 2>&1 | tee "$logs/nvidia-smi.txt"
nvidia-smi topo -m >"$logs/topo.txt" 2>&1

# Every NCCL on the machine: pip's wheels, a libnccl2 package, a container's.
find / \( -path /proc -o -path /sys \) -prune -o -name 'libnccl.so*' -print 2>/dev/null | head -20 | tee "$logs/libnccl-found.txt"
first=$(grep -m1 'libnccl.so.2' "$logs/libnccl-found.txt" || true)

# run NAME CMD...: stdout to NAME.out, stderr to NAME.err, the exit code to NAME.rc.
run() {
	local name=$1
	shift
	"$@" >"$logs/$name.out" 2>"$logs/$name.err"
	echo $? >"$logs/$name.rc"
}
run devices "$bundle/gpipe" devices
run devices-json "$bundle/gpipe" devices --json
if [ -n "$first" ]; then
	GPIPE_NCCL=$(dirname "$first") run devices-env "$bundle/gpipe" devices --json
fi
GPIPE_NCCL=/nonexistent/libnccl.so.2 run devices-badenv "$bundle/gpipe" devices --json
cat "$logs/devices.out" "$logs/devices.err"

# The tests read nothing from testdata, but run them where run.sh does.
( cd "$root/gpu" && GPIPE_REQUIRE_GPU=1 NCCL_DEBUG=${NCCL_DEBUG:-WARN} "$bundle/gpu.test" \
	-test.run 'NCCL|Peer' -test.v -test.count=1 -test.timeout 5m ) >"$logs/test-nccl.log" 2>&1
test_rc=$?
[ "$test_rc" -eq 0 ] || status=1
grep -E '^(--- |ok|FAIL|PASS)|nccl_gpu_test.go' "$logs/test-nccl.log" | head -60

# The table.
field() { # FILE KEY.SUBKEY: a field of the JSON that gpipe devices --json printed
	python3 -c 'import json,sys
try:
    d = json.load(open(sys.argv[1]))
    for k in sys.argv[2].split("."): d = d[k] if isinstance(d, dict) else d
    print(d if not isinstance(d, list) else len(d))
except Exception as e:
    print("?", e)' "$@"
}
{
	echo
	echo "== nccl-check ($(date -u +%FT%TZ))"
	printf '%-34s %s\n' "libnccl.so* files found" "$(wc -l <"$logs/libnccl-found.txt"); first: ${first:-none}"
	printf '%-34s %s\n' "gpipe devices" "exit $(cat "$logs/devices.rc"); $(grep -m1 '^NCCL' "$logs/devices.out")"
	printf '%-34s %s\n' "gpipe devices --json" "exit $(cat "$logs/devices-json.rc"); nccl $(field "$logs/devices-json.out" nccl.version) from $(field "$logs/devices-json.out" nccl.path); $(field "$logs/devices-json.out" peers) peer links"
	if [ -n "$first" ]; then
		printf '%-34s %s\n' "GPIPE_NCCL=$(dirname "$first" | sed 's|.*/site-packages|...|')" "exit $(cat "$logs/devices-env.rc"); nccl $(field "$logs/devices-env.out" nccl.version) from $(field "$logs/devices-env.out" nccl.path)"
	fi
	printf '%-34s %s\n' "GPIPE_NCCL=/nonexistent/..." "exit $(cat "$logs/devices-badenv.rc"); $(field "$logs/devices-badenv.out" nccl.error | cut -c1-90)"
	printf '%-34s %s\n' "gpu.test -test.run 'NCCL|Peer'" "exit $test_rc; $(grep -c '^--- PASS' "$logs/test-nccl.log") passed, $(grep -c '^--- SKIP' "$logs/test-nccl.log") skipped, $(grep -c '^--- FAIL' "$logs/test-nccl.log") failed"
} | tee "$logs/summary.txt"
exit $status
