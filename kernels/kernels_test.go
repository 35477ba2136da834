package kernels

import (
	"io/fs"
	"strings"
	"testing"
)

// TestPTXIsFresh fails when a kernel source changed after its PTX was
// generated: run `make kernels` where nvcc exists (docs/gpu.md).
func TestPTXIsFresh(t *testing.T) {
	cus, err := fs.Glob(sources, "*.cu")
	if err != nil || len(cus) == 0 {
		t.Fatalf("no kernel sources embedded: %v", err)
	}
	for _, cu := range cus {
		name := strings.TrimSuffix(cu, ".cu")
		text, err := embedded(name)
		if err != nil {
			t.Errorf("%s has no generated PTX: run `make kernels` (docs/gpu.md)", cu)
			continue
		}
		want, err := sourceHash(name)
		if err != nil {
			t.Fatal(err)
		}
		if got := stampedHash(text); got != want {
			t.Errorf("kernels/%s.ptx is stale: made from sources with hash %q, the sources now hash to %q; run `make kernels` (docs/gpu.md)", name, got, want)
		}
	}
	if len(Modules()) != len(cus) {
		t.Errorf("%d .ptx files for %d .cu files: remove PTX whose source is gone", len(Modules()), len(cus))
	}
}

// TestPTXHasEveryKernel checks the entry points the operators launch.
func TestPTXHasEveryKernel(t *testing.T) {
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
		Persist: {"bfsp_init", "bfsp_search", "ssspp_init_sssp_u32u", "ssspp_sssp_u32u", "ssspp_init_sssp_u32",
			"ssspp_sssp_u32", "ssspp_init_sssp_f64", "ssspp_sssp_f64", "persist_barrier_bench"},
	}
	for module, entries := range want {
		text, err := PTX(module)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if !strings.Contains(text, ".entry "+e+"(") {
				t.Errorf("module %s has no kernel %s", module, e)
			}
		}
	}
}
