#!/usr/bin/env bash
# Builds, here and without cgo, everything a GPU machine without Go needs to
# test and measure gpipe, into .gpu-bundle/ (git-ignored):
#   gpipe                  the command
#   <pkg>.test             test binaries of the packages that use the GPU
#                          (gpipe.test: the root package's, the library's face;
#                          pipeline.test: internal/pipeline's, the load on the GPU)
#   run.sh                 runs them with GPIPE_REQUIRE_GPU=1, then the benchmarks
# and the same folder as .gpu-bundle.tgz. scripts/nccl-check.sh (NCCL and
# peer access) runs from the same gpipe and gpu.test.
# Carry the folder to the GPU machine and run `.gpu-bundle/run.sh [OUTDIR]`
# from the repository root (docs/gpu.md).
set -euo pipefail
cd "$(dirname "$0")/.."
out=.gpu-bundle
rm -rf "$out"
mkdir -p "$out"
export CGO_ENABLED=0 GOOS=linux GOARCH=amd64
go build -trimpath -ldflags="-s -w" -o "$out/gpipe" ./cmd/gpipe
for pkg in gpu kernels operators serve; do
	go test -c -trimpath -ldflags="-s -w" -o "$out/$pkg.test" "./$pkg"
done
go test -c -trimpath -ldflags="-s -w" -o "$out/pipeline.test" ./internal/pipeline
# The root package's tests: the library's face (Load, FromRecords, Run) on
# the automatic backend.
go test -c -trimpath -ldflags="-s -w" -o "$out/gpipe.test" .
cp scripts/gpu-run.sh "$out/run.sh"
chmod +x "$out/run.sh"
# The binaries are large (gRPC and Arrow Flight in gpipe and serve.test); a
# gzip of the folder is a third of the size, for transfers with a size limit.
tar -czf .gpu-bundle.tgz "$out"
du -sh "$out" .gpu-bundle.tgz
