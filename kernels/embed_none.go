//go:build gpipe_nokernels

package kernels

import "embed"

// Built with -tags gpipe_nokernels, a binary embeds no fatbins and loads
// every module from $GPIPE_KERNELS_DIR: the GPU test binaries of
// scripts/gpu-bundle.sh, 25 MB smaller each, which run beside the
// repository's kernels/ on the GPU machine (docs/gpu.md).
var fatbins embed.FS

// embedsFatbins says the build embedded the fatbins.
const embedsFatbins = false
