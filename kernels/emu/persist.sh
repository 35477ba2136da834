#!/usr/bin/env bash
# Checks kernels/persist.cu's persistent BFS and SSSP on the CPU, where there
# is no GPU: compiles them with cuda_emu.h, runs each cooperative launch's
# blocks as processes (persist_emu.cpp) and compares with a queue BFS and
# Dijkstra. Needs g++ 12 or newer; a few minutes on two cores. Prints
# "ok: 0 failures" or each failure.
set -euo pipefail
cd "$(dirname "$0")"
bin=${TMPDIR:-/tmp}/gpipe-persist-emu
"${CXX:-g++}" -std=c++20 -O2 -pthread -Wall -Wno-unused-function -Wno-unknown-pragmas -Wno-sign-compare -o "$bin" persist_emu.cpp
"$bin"
# The SSSP cases again with blocks leaving the barriers and starting up to
# 0.1 s apart, block 0 first (PERSIST_EMU_JITTER_US, persist_emu.cpp): a late
# block that reads what block 0's single-block run changed hangs the grid.
PERSIST_EMU_JITTER_US=100000 PERSIST_EMU_FAST_BLOCK=0 PERSIST_EMU_ONLY=star-tail PERSIST_EMU_SSSP_ONLY=1 \
    PERSIST_EMU_ALARM_S=300 "$bin"
