#!/usr/bin/env bash
# Builds, here and without cgo, everything a GPU machine without Go needs to
# test and measure gpipe, into .gpu-bundle/ (git-ignored):
#   gpipe                  the command
#   <pkg>.test             test binaries of the packages that use the GPU
#                          (gpipe.test: the root package's, the library's face;
#                          pipeline.test: internal/pipeline's, the load on the GPU)
#   recordsbench           scripts/recordsbench (bench-records.sh)
#   run.sh                 runs them with GPIPE_REQUIRE_GPU=1, then the benchmarks
# and the same folder as .gpu-bundle.tar.xz (tar -xJf .gpu-bundle.tar.xz). scripts/nccl-check.sh (NCCL and
# peer access) runs from the same gpipe and gpu.test.
# Carry the folder to the GPU machine and run `.gpu-bundle/run.sh [OUTDIR]`
# from the repository root (docs/gpu.md).
set -euo pipefail
cd "$(dirname "$0")/.."
out=.gpu-bundle
rm -rf "$out"
mkdir -p "$out"
export CGO_ENABLED=0 GOOS=linux GOARCH=amd64
# gpipe --version says which tree the bundle was built from (make's VERSION,
# else git describe: scripts/version.sh).
version=${VERSION:-$(./scripts/version.sh)}
go build -trimpath -ldflags="-s -w -X main.version=$version" -o "$out/gpipe" ./cmd/gpipe
go build -trimpath -tags gpipe_nokernels -ldflags="-s -w" -o "$out/recordsbench" ./scripts/recordsbench
# Test binaries are named by the package's last path element (gpuop.test
# for operators/gpuop); gpu-run.sh runs each in its package directory. They
# embed no kernels (-tags gpipe_nokernels: 25 MB less each) and load the
# checkout's kernels/*.fatbin through GPIPE_KERNELS_DIR, which gpu-run.sh
# sets: so they also test fatbins just made there by kernels/build.sh.
testc() { # output name, package
	go test -c -trimpath -tags gpipe_nokernels -ldflags="-s -w" -o "$out/$1" "$2"
}
# TESTS chooses the packages (default: all that use the GPU; "." is the
# root package, the library's face): the whole bundle and the tree together
# exceed the device tool's 64 MiB, so a call carries the ones it runs.
for pkg in ${TESTS:-gpu kernels operators operators/gpuop operators/multigpu operators/vprog/vpgpu serve internal/pipeline .}; do
	case $pkg in
	.) name=gpipe ;;
	*) name=$(basename "$pkg") ;;
	esac
	testc "$name.test" "./$pkg"
done
cp scripts/gpu-run.sh "$out/run.sh"
chmod +x "$out/run.sh"
# The binaries are large (gRPC and Arrow Flight in gpipe and the test
# binaries): an xz of the folder is a tenth of the size (about 30 MB), for
# transfers with a size limit (the device tool's 64 MiB with the tree).
tar -cf - "$out" | xz -T0 -9 >.gpu-bundle.tar.xz
du -sh "$out" .gpu-bundle.tar.xz
