#!/usr/bin/env bash
# Checks PageRank's pull kernels (kernels/pagerank_vwc.cu, vp_warpseg.cu),
# weighted and not, on the CPU: pagerank_emu.cpp runs them with cuda_emu.h
# against a sequential reference. The kernels are compiled from a copy in
# which shards.cuh's dynamic shared memory (extern __shared__, which
# cuda_emu.h's __shared__ = static cannot express) is a plain extern: the
# pull kernels do not use it. Prints "ok: 0 failures" or each failure.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/emu"
cp "$here"/../*.cu "$here"/../*.cuh "$work/"
cp "$here"/cuda_emu.h "$here"/pagerank_emu.cpp "$work/emu/"
sed -i 's/extern __shared__ __align__(8) unsigned char smem\[\];/extern unsigned char smem[];/' "$work"/*.cuh
"${CXX:-g++}" -std=c++20 -O1 -pthread -o "$work/pagerank-emu" "$work/emu/pagerank_emu.cpp"
"$work/pagerank-emu"
