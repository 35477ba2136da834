#!/usr/bin/env bash
# Checks kernels/graph_build.cu's kernels on the CPU, where there is no GPU:
# compiles them with cuda_emu.h (each CUDA thread an OS thread) and runs
# graph_build_emu.cpp's comparisons (the scan, the radix sort, whole builds
# of every key type and mode against a reference). Needs g++ 12 or newer;
# takes a few minutes on two cores. Prints "ok: 0 failures" or each failure.
set -euo pipefail
cd "$(dirname "$0")"
bin=${TMPDIR:-/tmp}/gpipe-graph-build-emu
"${CXX:-g++}" -std=c++20 -O1 -pthread -o "$bin" graph_build_emu.cpp
"$bin"
