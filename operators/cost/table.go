package cost

// Classes are the machine classes measured, each with the command that
// measured it. The one table of the model's constants: a new GPU strategy
// gets a row in each class that has GPU rows (its Op and Strategy as
// operators/gpuop's registry names it); until it has one, auto ranks it
// after the strategies whose cost is known (Model.Rank).
//
// How the rows were fitted: each is a least-squares fit (relative errors,
// non-negative terms) of --json's compute_s (less the result's download,
// Model.Result, for the GPU's) against the edges, vertices and levels
// (Shape.Levels) of the graphs scripts/bench-oneshot.sh ran every strategy
// on (Kronecker 22, the 2048² grid, ego-Twitter, luxembourg_osm) and those
// it ran auto's strategy on (rome99, wiki-Vote); PageRank's per iteration.
// Setup is the auto jobs' gpu_init_s, Teardown the wall time a GPU job
// spends past its total_s less a CPU job's, the builds' figures build_s.
// The command, on the nvidia-h200 device machine:
//
//	RUNS=1 GRAPHS="k22 grid2048 twitter luxembourg rome99 wikivote slashdot hepph enron facebook" \
//	ALL_STRATEGIES="k22 grid2048 twitter luxembourg" COLD=wikivote \
//	scripts/bench-oneshot.sh gpipe OUT shared/data/real
func Classes() []Class { return []Class{h200x16()} }

// Default is the model of this machine: cores cores and the GPU called
// gpuName of peak memory bandwidth bandwidth (bytes/s; 0: unknown), from
// Classes.
func Default(cores int, gpuName string, bandwidth float64) *Model {
	return New(Classes(), cores, gpuName, bandwidth)
}

// h200x16 is one NVIDIA H200 with 16 cores of its host.
func h200x16() Class {
	return Class{
		Name: "H200 + 16 cores",
		Measured: "scripts/bench-oneshot.sh on the nvidia-h200 device machine (one H200, 16 cores, CUDA 13 driver 580), " +
			"--json of every run, 2026-11-29",
		Cores: 16, GPU: "H200", GPUBandwidth: 4.81e12,
		// gpu_init_s of the auto jobs that set the GPU up (0.30–0.37 s:
		// cuInit, the context, the build's ring and module), and the
		// wall time past total_s of a GPU job against a CPU job's
		// (0.13 s more: the driver's release of the context as the
		// process ends).
		Setup: 0.34, Teardown: 0.13, H2D: 8e9, D2H: 10e9, ReadPerRow: 4e-9,
		// build_s: the host's 5.5 ns a stored edge on Kronecker 22 (0.70–0.80
		// s for 134 M edges; 1.1–1.3 s weighted), 2 ms at least; the GPU's
		// 60–80 ms on the smallest graphs, 70–110 ms on Kronecker 22.
		HostBuildFixed: 2e-3, HostBuildPerEdge: 5.5e-9, WeightedBuild: 1.6,
		DeviceBuildFixed: 0.065, DeviceBuildPerEdge: 0.2e-9,
		ResultPerVertex: 2e-9,
		Rows: []Row{
			{Op: "bfs", Strategy: CPU, Fixed: 0.000105, PerVertex: 1.37e-08, PerLevel: 2.56e-06},
			{Op: "bfs", Strategy: "enterprise", Fixed: 0.00548, PerEdge: 1.88e-10, PerLevel: 3.94e-05},
			{Op: "bfs", Strategy: "bfs4k", Fixed: 0.00383, PerVertex: 1.63e-08, PerLevel: 6.86e-06},
			{Op: "bfs", Strategy: "vwc", Fixed: 0.00496, PerVertex: 1.2e-08, PerLevel: 5.17e-05},
			// persist's rows are derived, not fitted (its one-shot runs are not
			// measured yet): the one-shot per-edge cost the other strategies
			// share (enterprise's; vwc's for sssp) plus persist's own, and its
			// cost a level, from gpipe bench's medians on the 2048² grid, a
			// 16 M-vertex road, luxembourg_osm and Kronecker 22 (BENCHMARKS.md,
			// "Road networks and grids"): 1.9–2.7 µs a BFS level since a
			// batch's claims issue together (2.5–3.4 before, 4.5 before blocks
			// ran up to 32 levels between barriers) against bfs4k's 30,
			// 7·10⁻¹¹ s an edge top-down on Kronecker; SSSP's steps about an
			// eighth of vwc's on the roads (a sixth before its relaxations
			// issued together, a quarter before its near steps ran rounds);
			// the fixed cost enterprise's (vwc's), so that the per-edge term
			// sends skewed graphs of a few million edges and more to
			// enterprise. Refit with bench-oneshot.sh.
			{Op: "bfs", Strategy: "persist", Fixed: 0.0055, PerEdge: 2.6e-10, PerLevel: 2.0e-06},

			{Op: "sssp", Strategy: CPU, Fixed: 0.00119, PerEdge: 9.03e-10, PerVertex: 1.77e-08, PerLevel: 3.3e-05},
			{Op: "sssp", Strategy: "kites", Fixed: 0.0163, PerEdge: 1.22e-09, PerVertex: 2.44e-09, PerLevel: 3.48e-05},
			{Op: "sssp", Strategy: "vwc", Fixed: 0.0104, PerEdge: 1.29e-09, PerVertex: 1.53e-09, PerLevel: 3.96e-05},
			{Op: "sssp", Strategy: "persist", Fixed: 0.0104, PerEdge: 1.38e-09, PerVertex: 1.53e-09, PerLevel: 4.5e-06},
			{Op: "sssp", Strategy: "warpseg", Fixed: 0.0116, PerVertex: 8.23e-08, PerLevel: 2.64e-05},
			{Op: "sssp", Strategy: "cw", Fixed: 0.00162, PerEdge: 4.19e-09, PerVertex: 9.88e-08, PerLevel: 9.71e-06},
			{Op: "sssp", Strategy: "gshards", PerEdge: 5.04e-10, PerVertex: 2.26e-07, PerLevel: 1.87e-05},

			{Op: "sswp", Strategy: CPU, Fixed: 0.00064, PerEdge: 2.59e-10, PerVertex: 3.02e-08, PerLevel: 3.67e-06},
			{Op: "sswp", Strategy: "kites", Fixed: 0.0034, PerEdge: 3.57e-10, PerVertex: 4.75e-08, PerLevel: 2.66e-05},
			{Op: "sswp", Strategy: "vwc", Fixed: 0.00925, PerEdge: 8.06e-10, PerVertex: 2.48e-08, PerLevel: 3.1e-05},
			{Op: "sswp", Strategy: "warpseg", Fixed: 0.00222, PerVertex: 8.09e-08, PerLevel: 2.17e-05},
			{Op: "sswp", Strategy: "cw", Fixed: 0.000665, PerEdge: 4.78e-09, PerVertex: 9.96e-08, PerLevel: 1.05e-05},
			{Op: "sswp", Strategy: "gshards", PerVertex: 2.15e-07, PerLevel: 1.75e-05},

			{Op: "pagerank", Strategy: CPU, Fixed: 2.81e-05, PerEdge: 1.27e-10, PerVertex: 5.98e-10},
			{Op: "pagerank", Strategy: "warpseg", Fixed: 0.000141, PerEdge: 5.73e-11, PerVertex: 1.62e-11},
			{Op: "pagerank", Strategy: "vwc", Fixed: 9.58e-05, PerEdge: 6.12e-11, PerVertex: 1.93e-10},
			{Op: "pagerank", Strategy: "gshards", Fixed: 0.000131, PerEdge: 1.14e-10, PerVertex: 2.23e-11},
			{Op: "pagerank", Strategy: "cw", Fixed: 0.000127, PerEdge: 1.37e-10, PerVertex: 5.95e-11},

			{Op: "cc", Strategy: CPU, Fixed: 0.000154, PerEdge: 1.35e-10, PerVertex: 3.28e-09, PerLevel: 1.54e-06},
			{Op: "cc", Strategy: "afforest", Fixed: 0.0012, PerEdge: 2.51e-11, PerLevel: 4.46e-07},
			{Op: "cc", Strategy: "vwc", Fixed: 0.00972, PerEdge: 1.16e-09, PerVertex: 5.19e-10, PerLevel: 5.23e-05},
			{Op: "cc", Strategy: "kites", Fixed: 0.00232, PerEdge: 2.46e-11, PerVertex: 8.05e-08, PerLevel: 2.36e-05},
			{Op: "cc", Strategy: "warpseg", Fixed: 0.00168, PerVertex: 8.03e-08, PerLevel: 2.54e-05},
			{Op: "cc", Strategy: "gshards", PerVertex: 2.24e-07, PerLevel: 1.78e-05},
			{Op: "cc", Strategy: "cw", Fixed: 0.00152, PerEdge: 1.46e-09, PerVertex: 1.84e-07, PerLevel: 7.63e-06},
		},
	}
}
