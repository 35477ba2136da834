#!/usr/bin/env bash
# Checks kernels/persist.cu's persistent BFS and SSSP on the CPU, where there
# is no GPU: compiles them with cuda_emu.h, runs each cooperative launch's
# blocks as processes (persist_emu.cpp) and compares with a queue BFS and
# Dijkstra. Needs g++ 12 or newer; a minute or two on two cores. Prints
# "ok: 0 failures" or each failure.
set -euo pipefail
cd "$(dirname "$0")"
bin=${TMPDIR:-/tmp}/gpipe-persist-emu
"${CXX:-g++}" -std=c++20 -O2 -pthread -Wall -Wno-unused-function -Wno-unknown-pragmas -Wno-sign-compare -o "$bin" persist_emu.cpp
"$bin"
