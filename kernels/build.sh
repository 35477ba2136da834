#!/usr/bin/env bash
# Compiles each kernels/NAME.cu into kernels/NAME.fatbin, one fat binary per
# module: SASS (machine code) for every GPU generation gpipe supports, so
# that the driver loads code that runs as it is and never JIT-compiles at
# run time, plus the PTX for compute_80, which the driver JIT-compiles only
# on a GPU none of the SASS runs on (a generation newer than the list). The
# driver picks the SASS (cuModuleLoadData): a cubin for sm_XY runs on every
# sm_XZ with Z >= Y, and is preferred to PTX of an older virtual
# architecture. compute_80 rather than the newest PTX: it JIT-compiles on
# any GPU from Ampere on (a compute_120 PTX would not run on an sm_110), and
# every SASS here is compiled from that same PTX, as the JIT did before.
#
# Beside each fatbin, kernels/NAME.stamp (text) records what TestFatbinIsFresh
# and TestFatbinHasEveryKernel check without a GPU or nvcc:
#   gpipe-source-sha256: the hash of the sources: the .cu, then every .cuh
#                        in byte order of name (SHA-256)
#   fatbin-sha256:       the hash of NAME.fatbin, so that a fatbin and its
#                        stamp cannot come from two builds
#   nvcc:, targets:      the compiler and the code the fatbin holds
#   entry: NAME          one line for each kernel (.entry) of the module
#
# This script is the one way to make them: `make kernels`, on a machine with
# the CUDA toolkit (the GPU machine; docs/gpu.md). ARCHS lists the SASS
# targets (default "80 86 89 90 100 120"; those the nvcc at hand cannot build
# beyond 90 are left out, and said so); NVCC and NVCC_FLAGS choose the
# compiler and add flags (NVCC_FLAGS=-lineinfo for profiling with source
# lines; it makes the fatbins larger). JOBS modules compile at once (default:
# the cores / 2, each with 2 ptxas threads).
set -euo pipefail
cd "$(dirname "$0")"
NVCC=${NVCC:-nvcc}
command -v "$NVCC" >/dev/null || { echo "kernels/build.sh: nvcc not found (install the CUDA toolkit, or run this on the GPU machine: see docs/gpu.md)" >&2; exit 1; }
ARCHS=${ARCHS:-"80 86 89 90 100 120"}
JOBS=${JOBS:-$(( ($(nproc) + 1) / 2 ))}
headers=$(ls *.cuh 2>/dev/null | LC_ALL=C sort || true)
version=$("$NVCC" --version | tail -1)
known=$("$NVCC" --list-gpu-code 2>/dev/null | tr '\n' ' ')

codes=()
for a in $ARCHS; do
	if [[ " $known " == *" sm_$a "* ]]; then
		codes+=("sm_$a")
	elif (( a <= 90 )); then
		echo "kernels/build.sh: $NVCC cannot build sm_$a, which gpipe supports: use a newer CUDA toolkit" >&2
		exit 1
	else
		echo "kernels/build.sh: $NVCC cannot build sm_$a: left out (GPUs of that generation JIT-compile the PTX)" >&2
	fi
done
targets="${codes[*]} compute_80"
gencode="arch=compute_80,code=[$(IFS=,; echo "${codes[*]}"),compute_80]"

build() { # one module
	local cu=$1 name=${1%.cu} hash tmp
	hash=$(cat "$cu" $headers | sha256sum | cut -d' ' -f1)
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' RETURN
	"$NVCC" ${NVCC_FLAGS:-} -fatbin -gencode "$gencode" --threads 2 -O3 -std=c++17 \
		-keep -keep-dir "$tmp" -o "$tmp/$name.fatbin" "$cu" || return 1
	local ptx
	ptx=$(ls "$tmp"/*.ptx | head -1)
	{
		echo "gpipe-source-sha256: $hash"
		echo "fatbin-sha256: $(sha256sum "$tmp/$name.fatbin" | cut -d' ' -f1)"
		echo "nvcc: $version"
		echo "targets: $targets"
		grep -oE '^\.(visible )?\.entry [A-Za-z_][A-Za-z0-9_]*' "$ptx" | sed -E 's/.*\.entry /entry: /' | LC_ALL=C sort
	} >"$tmp/$name.stamp"
	mv "$tmp/$name.fatbin" "$name.fatbin"
	mv "$tmp/$name.stamp" "$name.stamp"
	echo "kernels/$name.fatbin <- kernels/$cu ($hash, $(stat -c %s "$name.fatbin") bytes)"
}

start=$(date +%s)
status=0
running=0
for cu in *.cu; do
	build "$cu" &
	running=$((running + 1))
	if (( running >= JOBS )); then
		wait -n || status=1
		running=$((running - 1))
	fi
done
while (( running > 0 )); do
	wait -n || status=1
	running=$((running - 1))
done
# A module whose source is gone leaves no fatbin behind.
for f in *.fatbin; do
	[ -e "${f%.fatbin}.cu" ] || { rm -f "$f" "${f%.fatbin}.stamp"; echo "kernels/$f removed: no ${f%.fatbin}.cu"; }
done
rm -f *.ptx # the PTX files of the builds before fatbins
echo "kernels/build.sh: $targets, $(( $(date +%s) - start )) s"
exit $status
