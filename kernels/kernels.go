// Package kernels holds gpipe's CUDA C++ kernels (*.cu, *.cuh) and the PTX
// generated from them (*.ptx), which the Go build embeds. The driver
// JIT-compiles the PTX (built for compute_80) for the GPU at hand, so one
// binary runs on any NVIDIA GPU from Ampere on, and nothing of CUDA is
// needed to build gpipe.
//
// kernels/build.sh (make kernels) regenerates the PTX where nvcc exists and
// stamps each file with the hash of its sources; TestPTXIsFresh fails when a
// source changed after its PTX was made.
package kernels

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

//go:embed *.ptx
var ptx embed.FS

//go:embed *.cu *.cuh
var sources embed.FS

// Module names, one per .cu file.
const (
	BFSVWC        = "bfs_vwc"
	BFSEnterprise = "bfs_enterprise"
	BFS4K         = "bfs_4k"
	PageRankVWC   = "pagerank_vwc"
	// The vertex-program engine (vertex_program.cuh): the pieces every
	// layout shares, the CSR push, G-Shards and Concatenated Windows.
	VPCommon  = "vp_common"
	VPVWC     = "vp_vwc"
	VPGShards = "vp_gshards"
	VPCW      = "vp_cw"
	// VPWarpSeg and VPKiTES are the pull strategies (warpseg.cuh): Warp
	// Segmentation and KiTES.
	VPWarpSeg = "vp_warpseg"
	VPKiTES   = "vp_kites"
	// CCAfforest is connected components by Afforest.
	CCAfforest = "cc_afforest"
	// GraphBuild builds a graph's layouts on the GPU from its edge columns
	// (operators/gpu_build.go).
	GraphBuild = "graph_build"
	// MultiGPU holds what each GPU of a partitioned run does around the
	// exchanges (operators/mgpu*.go).
	MultiGPU = "mgpu"
	// Columns makes result columns in Arrow's layout: ids mapped to keys,
	// validity bitmaps (operators/gpu_columns.go).
	Columns = "columns"
	// Persist holds the persistent BFS and SSSP: one cooperative launch a
	// search, its levels separated by a grid barrier (operators/gpuop/persist.go).
	Persist = "persist"
)

// PTXDirEnv names a directory whose NAME.ptx files replace the embedded
// ones. It is for kernel work on a GPU machine without Go: PTX compiled
// there by `make kernels` runs in binaries built here, before it is
// committed (docs/gpu.md).
const PTXDirEnv = "GPIPE_PTX_DIR"

// PTX is the PTX text of the module called name: the embedded one, or the
// one in $GPIPE_PTX_DIR when that is set.
func PTX(name string) (string, error) {
	if dir := os.Getenv(PTXDirEnv); dir != "" {
		b, err := os.ReadFile(filepath.Join(dir, name+".ptx"))
		if err != nil {
			return "", fmt.Errorf("kernels: %s=%s: %w", PTXDirEnv, dir, err)
		}
		return string(b), nil
	}
	return embedded(name)
}

// embedded is the PTX of module name that the build embedded.
func embedded(name string) (string, error) {
	b, err := ptx.ReadFile(name + ".ptx")
	if err != nil {
		return "", fmt.Errorf("kernels: no module %q", name)
	}
	return string(b), nil
}

// Modules lists the module names.
func Modules() []string {
	entries, _ := fs.ReadDir(ptx, ".")
	var names []string
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), ".ptx"))
	}
	return names
}

// hashPrefix starts the first line of every generated .ptx.
const hashPrefix = "// gpipe-source-sha256: "

// stampedHash is the source hash recorded in a generated .ptx.
func stampedHash(ptxText string) string {
	line, _, _ := strings.Cut(ptxText, "\n")
	if !strings.HasPrefix(line, hashPrefix) {
		return ""
	}
	return strings.TrimSpace(strings.TrimPrefix(line, hashPrefix))
}

// sourceHash is the hash build.sh computes for module name: SHA-256 over the
// .cu file followed by every .cuh file in byte order of name.
func sourceHash(name string) (string, error) {
	h := sha256.New()
	cu, err := sources.ReadFile(name + ".cu")
	if err != nil {
		return "", err
	}
	h.Write(cu)
	headers, err := fs.Glob(sources, "*.cuh")
	if err != nil {
		return "", err
	}
	slices.Sort(headers)
	for _, hdr := range headers {
		b, err := sources.ReadFile(hdr)
		if err != nil {
			return "", err
		}
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
