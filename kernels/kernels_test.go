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
		BFSEnterprise: {"ent_init", "ent_td_thread", "ent_td_warp", "ent_td_block", "ent_td_grid", "ent_queue", "ent_bu_small", "ent_bu_middle", "ent_bu_wide"},
		BFS4K:         {"b4k_init", "b4k_vw_k4", "b4k_vw_k8", "b4k_vw_k16", "b4k_vw_k32", "b4k_ed", "b4k_hubs", "b4k_single", "b4k_rebuild"},
		PageRankVWC:   {"pr_init", "pr_pull_k1", "pr_pull_k32", "pr_outliers", "pr_outliers_finish"},
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
