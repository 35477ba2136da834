package kernels

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestFatbinIsFresh fails when a kernel source changed after its fatbin was
// made, or a fatbin does not match its stamp: run `make kernels` where nvcc
// exists (docs/gpu.md).
func TestFatbinIsFresh(t *testing.T) {
	skipWithoutEmbedded(t)
	cus, err := fs.Glob(sources, "*.cu")
	if err != nil || len(cus) == 0 {
		t.Fatalf("no kernel sources embedded: %v", err)
	}
	for _, cu := range cus {
		name := strings.TrimSuffix(cu, ".cu")
		bin, err := embedded(name)
		if err != nil {
			t.Errorf("%s has no fatbin: run `make kernels` (docs/gpu.md)", cu)
			continue
		}
		st, err := StampOf(name)
		if err != nil {
			t.Errorf("kernels/%s.fatbin has no stamp: run `make kernels` (docs/gpu.md)", name)
			continue
		}
		want, err := sourceHash(name)
		if err != nil {
			t.Fatal(err)
		}
		if st.SourceHash != want {
			t.Errorf("kernels/%s.fatbin is stale: made from sources with hash %q, the sources now hash to %q; run `make kernels` (docs/gpu.md)", name, st.SourceHash, want)
		}
		if got := hashOf(bin); st.FatbinHash != got {
			t.Errorf("kernels/%s.stamp records fatbin hash %q, but the fatbin hashes to %q: the two come from different builds; run `make kernels`", name, st.FatbinHash, got)
		}
		if !IsFatbin(bin) {
			t.Errorf("kernels/%s.fatbin is not a fat binary (no magic number)", name)
		}
		for _, arch := range []string{"sm_80", "sm_86", "sm_89", "sm_90", "compute_80"} {
			if !slices.Contains(strings.Fields(st.Targets), arch) {
				t.Errorf("kernels/%s.fatbin holds %q, not %s", name, st.Targets, arch)
			}
		}
	}
	if bins, _ := fs.Glob(fatbins, "*.fatbin"); len(bins) != len(cus) || len(Modules()) != len(cus) {
		t.Errorf("%d .fatbin and %d .stamp files for %d .cu files: remove those whose source is gone", len(bins), len(Modules()), len(cus))
	}
	if stale, _ := filepath.Glob("*.ptx"); len(stale) > 0 { // the test runs in kernels/
		t.Errorf("PTX files %v are left from before the fatbins: remove them", stale)
	}
}

// TestFatbinHasEveryKernel checks the entry points the operators launch,
// as the stamps list them.
func TestFatbinHasEveryKernel(t *testing.T) {
	want := map[string][]string{
		BFSVWC:        {"bfs_vwc_k1", "bfs_vwc_k32", "bfs_vwc_outliers", "bfs_init_source"},
		BFSEnterprise: {"ent_init", "ent_td_thread", "ent_td_warp", "ent_td_block", "ent_td_grid", "ent_queue", "ent_unvisited", "ent_bu_small", "ent_bu_middle", "ent_bu_wide"},
		BFS4K:         {"b4k_init", "b4k_vw_k4", "b4k_vw_k8", "b4k_vw_k16", "b4k_vw_k32", "b4k_ed", "b4k_hubs", "b4k_single", "b4k_rebuild"},
		PageRankVWC: {"pr_init_f64", "pr_init_f32_hub", "pr_pull_k1_f64", "pr_pull_k32_f32_hub", "pr_outliers_f64",
			"pr_outliers_f32", "pr_outliers_finish_f64_hub"},
		VPCommon: {"vp_seed32", "vp_seed64", "vp_iota", "vp_parent_init", "vp_unresolved32", "vp_unresolved64"},
		VPVWC: {"vwc_sssp_u32u_k1", "vwc_sssp_u32_k32", "vwc_sssp_f64_k16", "vwc_sswp_k32u_k2", "vwc_sswp_k32_k4",
			"vwc_sswp_k64_k8", "vwc_cc_k32", "vwc_cc_outliers", "vwc_sssp_f64_outliers", "csr_parent_sssp_u32u",
			"csr_parent_sssp_u32", "csr_parent_sssp_f64"},
		VPGShards: {"gs_sssp_u32u", "gs_sssp_u32", "gs_sssp_f64", "gs_sswp_k32u", "gs_sswp_k32", "gs_sswp_k64", "gs_cc",
			"gs_parent_sssp_u32", "gs_pr_compute_f64", "gs_pr_write_back_f32"},
		VPCW: {"cw_sssp_u32u", "cw_sssp_u32", "cw_sssp_f64", "cw_sswp_k32u", "cw_sswp_k32", "cw_sswp_k64", "cw_cc",
			"cw_parent_sssp_f64", "cw_pr_compute_f32", "cw_pr_write_back_f64"},
		CCAfforest: {"cc_init", "cc_link_round", "cc_compress", "cc_sample", "cc_link_rest_k1", "cc_link_rest_k32"},
		GraphBuild: {"gb_range_i32", "gb_range_u64", "gb_mark_i64", "gb_endpoints_u32", "gb_entries_bitmap_i32",
			"gb_entries_sorted_u64", "gb_bad_weight", "gb_popc", "gb_bits_to_keys", "gb_heads", "gb_compact", "rs_hist",
			"rs_scatter", "scan_reduce", "scan_down", "gb_merge", "gb_merge_weights", "gb_weights_from_keys", "gb_offsets",
			"gb_swap_ends", "gb_low_ends", "gb_mark_targets", "gb_degree_stats"},
		Columns: {"col_keys32", "col_keys64", "col_valid_nonneg"},
		Persist: {"bfsp_init", "bfsp_search", "bfsp_ell", "bfsp_split", "ssspp_init_sssp_u32u", "ssspp_sssp_u32u", "ssspp_init_sssp_u32",
			"ssspp_sssp_u32", "ssspp_init_sssp_f64", "ssspp_sssp_f64", "persist_barrier_bench"},
	}
	for module, entries := range want {
		st, err := StampOf(module)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if !slices.Contains(st.Entries, e) {
				t.Errorf("module %s has no kernel %s", module, e)
			}
		}
	}
}

// TestParseStamp reads a stamp as build.sh writes it.
func TestParseStamp(t *testing.T) {
	st := parseStamp([]byte("gpipe-source-sha256: abc\nfatbin-sha256: def\nnvcc: Build cuda_13.0\n" +
		"targets: sm_80 sm_90 compute_80\nentry: k1\nentry: k2\nlater-key: x\n"))
	want := Stamp{SourceHash: "abc", FatbinHash: "def", Compiler: "Build cuda_13.0", Targets: "sm_80 sm_90 compute_80", Entries: []string{"k1", "k2"}}
	if !slices.Equal(st.Entries, want.Entries) || st.SourceHash != want.SourceHash || st.FatbinHash != want.FatbinHash ||
		st.Compiler != want.Compiler || st.Targets != want.Targets {
		t.Errorf("parseStamp = %+v, want %+v", st, want)
	}
}

// TestImageFromDir reads a module from $GPIPE_KERNELS_DIR, a fatbin before
// PTX, and says which files are missing.
func TestImageFromDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.ptx"), []byte("ptx"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "b.fatbin"), []byte("fat"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "b.ptx"), []byte("ptx"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(DirEnv, dir)
	for name, want := range map[string]string{"a": "ptx", "b": "fat"} {
		if got, err := Image(name); err != nil || string(got) != want {
			t.Errorf("Image(%q) = %q, %v; want %q", name, got, err, want)
		}
	}
	if _, err := Image("c"); err == nil || !strings.Contains(err.Error(), "neither c.fatbin nor c.ptx") {
		t.Errorf("Image of a missing module: %v", err)
	}
}

// TestEmbeddedAreFatbins: every embedded module is a fat binary, loaded
// without a GPIPE_KERNELS_DIR.
func TestEmbeddedAreFatbins(t *testing.T) {
	skipWithoutEmbedded(t)
	t.Setenv(DirEnv, "")
	t.Setenv(oldDirEnv, "")
	for _, name := range Modules() {
		b, err := Image(name)
		if err != nil || !IsFatbin(b) {
			t.Errorf("module %s: %d bytes, fatbin %v, %v", name, len(b), IsFatbin(b), err)
		}
	}
}

// skipWithoutEmbedded skips a test of the embedded fatbins in a build
// without them (-tags gpipe_nokernels).
func skipWithoutEmbedded(t *testing.T) {
	t.Helper()
	if !embedsFatbins {
		t.Skip("built with -tags gpipe_nokernels: no fatbins embedded")
	}
}

// A build without the fatbins says how to give it kernels; one with them
// lists the same modules either way (from the stamps).
func TestModulesFromStamps(t *testing.T) {
	t.Setenv(DirEnv, "")
	t.Setenv(oldDirEnv, "")
	names := Modules()
	if len(names) == 0 || !slices.Contains(names, GraphBuild) {
		t.Fatalf("modules %v", names)
	}
	_, err := Image(GraphBuild)
	if embedsFatbins != (err == nil) {
		t.Fatalf("embedded %v, Image: %v", embedsFatbins, err)
	}
	if err != nil && !strings.Contains(err.Error(), DirEnv) {
		t.Errorf("the error does not say how to give the kernels: %v", err)
	}
}
