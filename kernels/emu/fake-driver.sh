#!/usr/bin/env bash
# Runs a command with a stand-in for the NVIDIA driver that executes the GPU
# build's kernels (kernels/graph_build.cu) on the CPU (fake_libcuda.cpp), so
# that the Go code of the build and its GPU tests run where there is no GPU:
#   kernels/emu/fake-driver.sh go test ./operators -run 'GPUBuild|GPUScan|GPURadixSort|GPUStager|GPUColumnUpload|BuildFallsBack|AfterForget'
# Slow (each CUDA thread an OS thread): small tables only. Other modules'
# kernels are not emulated, so the tests that run BFS or SSSP fail here.
# Needs g++ 12 or newer.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
lib=${TMPDIR:-/tmp}/gpipe-fake-libcuda
mkdir -p "$lib"
"${CXX:-g++}" -std=c++20 -O1 -shared -fPIC -pthread -o "$lib/libcuda.so.1" "$here/fake_libcuda.cpp"
export LD_LIBRARY_PATH=$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} GPIPE_REQUIRE_GPU=1
exec "$@"
