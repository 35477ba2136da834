#!/usr/bin/env bash
# Compiles kernels/*.cu to kernels/*.ptx (PTX for compute_80, JIT-compiled by
# the driver for the GPU at hand) and stamps each with the hash of the
# sources it came from: the .cu, then every .cuh in byte order of name. The
# Go test TestPTXIsFresh recomputes the hash and fails when they differ.
# Needs nvcc (the CUDA toolkit); `make kernels` runs it. NVCC and NVCC_FLAGS
# choose the compiler and add flags (e.g. NVCC_FLAGS="-ccbin g++-11").
set -euo pipefail
cd "$(dirname "$0")"
NVCC=${NVCC:-nvcc}
command -v "$NVCC" >/dev/null || { echo "kernels/build.sh: nvcc not found (install the CUDA toolkit, or run this on the GPU machine: see docs/gpu.md)" >&2; exit 1; }
headers=$(ls *.cuh 2>/dev/null | LC_ALL=C sort || true)
version=$("$NVCC" --version | tail -1)
build() { # one module; the modules compile in parallel
	local cu=$1 name=${1%.cu} hash
	hash=$(cat "$cu" $headers | sha256sum | cut -d' ' -f1)
	"$NVCC" ${NVCC_FLAGS:-} -ptx -arch=compute_80 -O3 -std=c++17 -lineinfo -o "$name.ptx.tmp" "$cu" || return 1
	{
		echo "// gpipe-source-sha256: $hash"
		echo "// Generated from kernels/$cu by kernels/build.sh with $version. Do not edit."
		cat "$name.ptx.tmp"
	} > "$name.ptx"
	rm -f "$name.ptx.tmp"
	echo "kernels/$name.ptx <- kernels/$cu ($hash)"
}
pids=()
for cu in *.cu; do
	build "$cu" &
	pids+=($!)
done
status=0
for pid in "${pids[@]}"; do
	wait "$pid" || status=1
done
exit $status
