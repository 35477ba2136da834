// Package kernels holds gpipe's CUDA C++ kernels (*.cu, *.cuh) and the fat
// binaries generated from them (*.fatbin, one per module), which the Go
// build embeds. A fatbin holds SASS for every GPU generation gpipe supports
// (sm_80, sm_86, sm_89, sm_90, and sm_100 and sm_120 where the toolkit that
// made them builds them) and PTX for compute_80: the driver loads the SASS
// for the GPU at hand as it is, with no JIT compilation at run time, and
// JIT-compiles the PTX only on a GPU newer than every SASS. Nothing of CUDA
// is needed to build gpipe.
//
// kernels/build.sh (make kernels) is the one way to make them, where nvcc
// exists; beside each NAME.fatbin it writes NAME.stamp, the text that says
// what the fatbin was made from (the sources' hash, its own hash, the
// compiler, the targets, its kernels). TestFatbinIsFresh fails when a
// source changed after its fatbin was made.
package kernels

import (
	"bufio"
	"bytes"
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

//go:embed *.stamp
var stamps embed.FS

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

// DirEnv names a directory whose NAME.fatbin (or NAME.ptx) files replace
// the embedded modules. It is for kernel work on a GPU machine without Go:
// kernels compiled there by `make kernels` (or PTX from `nvcc -ptx`) run in
// binaries built here, before they are committed (docs/gpu.md). The older
// name GPIPE_PTX_DIR means the same.
const DirEnv = "GPIPE_KERNELS_DIR"

// oldDirEnv is DirEnv's name before the fatbins.
const oldDirEnv = "GPIPE_PTX_DIR"

// Image is the module called name as the driver loads it
// (cuModuleLoadData): the embedded fatbin, or the NAME.fatbin, else the
// NAME.ptx, in $GPIPE_KERNELS_DIR when that is set.
func Image(name string) ([]byte, error) {
	if dir := overrideDir(); dir != "" {
		for _, ext := range []string{".fatbin", ".ptx"} {
			b, err := os.ReadFile(filepath.Join(dir, name+ext))
			if err == nil {
				return b, nil
			}
			if !os.IsNotExist(err) {
				return nil, fmt.Errorf("kernels: %s=%s: %w", DirEnv, dir, err)
			}
		}
		return nil, fmt.Errorf("kernels: %s=%s has neither %s.fatbin nor %s.ptx", DirEnv, dir, name, name)
	}
	return embedded(name)
}

// overrideDir is $GPIPE_KERNELS_DIR, or the older $GPIPE_PTX_DIR.
func overrideDir() string {
	if dir := os.Getenv(DirEnv); dir != "" {
		return dir
	}
	return os.Getenv(oldDirEnv)
}

// embedded is the fatbin of module name that the build embedded.
func embedded(name string) ([]byte, error) {
	if !embedsFatbins {
		return nil, fmt.Errorf("kernels: this binary was built with -tags gpipe_nokernels and holds no kernels: set %s to a directory of NAME.fatbin files (the repository's kernels/)", DirEnv)
	}
	b, err := fatbins.ReadFile(name + ".fatbin")
	if err != nil {
		return nil, fmt.Errorf("kernels: no module %q", name)
	}
	return b, nil
}

// Modules lists the module names (from their stamps, which every build
// embeds).
func Modules() []string {
	entries, _ := fs.ReadDir(stamps, ".")
	var names []string
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), ".stamp"))
	}
	return names
}

// Stamp is what kernels/build.sh recorded about a module's fatbin.
type Stamp struct {
	// SourceHash is the SHA-256 of the sources it was made from (the .cu,
	// then every .cuh in byte order of name); FatbinHash the SHA-256 of
	// the fatbin itself.
	SourceHash, FatbinHash string
	// Compiler is nvcc's version line; Targets the SASS and PTX the
	// fatbin holds ("sm_80 ... compute_80").
	Compiler, Targets string
	// Entries are the module's kernels.
	Entries []string
}

// StampOf is the stamp of the embedded module called name.
func StampOf(name string) (Stamp, error) {
	b, err := stamps.ReadFile(name + ".stamp")
	if err != nil {
		return Stamp{}, fmt.Errorf("kernels: module %q has no stamp", name)
	}
	return parseStamp(b), nil
}

// parseStamp reads a stamp's "key: value" lines; unknown keys are left
// out (a later build.sh may add some).
func parseStamp(b []byte) Stamp {
	var s Stamp
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		key, value, ok := strings.Cut(sc.Text(), ": ")
		if !ok {
			continue
		}
		switch key {
		case "gpipe-source-sha256":
			s.SourceHash = value
		case "fatbin-sha256":
			s.FatbinHash = value
		case "nvcc":
			s.Compiler = value
		case "targets":
			s.Targets = value
		case "entry":
			s.Entries = append(s.Entries, value)
		}
	}
	return s
}

// fatbinMagic starts every fat binary (fatbinary.h's FATBIN_MAGIC,
// little-endian).
var fatbinMagic = []byte{0x50, 0xed, 0x55, 0xba}

// IsFatbin says b is a fat binary, not PTX text or a cubin.
func IsFatbin(b []byte) bool { return bytes.HasPrefix(b, fatbinMagic) }

// hashOf is the SHA-256 of b, in hex.
func hashOf(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
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
