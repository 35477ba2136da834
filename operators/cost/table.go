package cost

// Classes are the machine classes measured, each with the command that
// measured it. The one table of the model's constants: a new GPU strategy
// gets a row in each class that has GPU rows (its Op and Strategy as
// operators/gpuop's registry names it); until it has one, auto ranks it
// after the strategies whose cost is known (Model.Rank).
//
// How the rows were fitted: each is a least-squares fit, over the graphs of
// scripts/bench-oneshot.sh (the real graphs of shared/data/real, a 2048²
// grid, Kronecker 22 and 24), of the run's time (--json's compute_s, less
// the result's download on the GPU) against the edges, vertices and levels
// (Shape.Levels with the levels the CPU's BFS reported); Setup is
// --json's gpu_init_s, the builds' rates are build_s over the rows read.
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
		Cores: 16, GPU: "H200", GPUBandwidth: 4.8e12,
		Setup: 0.28, H2D: 10e9, D2H: 10e9,
		HostBuildPerRow: 5.5e-9, DeviceBuildPerRow: 1e-9, DeviceBuildFixed: 0.01,
		ResultPerVertex: 2e-9,
		Rows: []Row{
			{Op: "bfs", Strategy: CPU, Fixed: 0.2e-3, PerEdge: 0.1e-9, PerVertex: 1e-9, PerLevel: 12e-6},
			{Op: "bfs", Strategy: "enterprise", Fixed: 2e-3, PerEdge: 0.004e-9, PerVertex: 0.1e-9, PerLevel: 40e-6},
			{Op: "bfs", Strategy: "bfs4k", Fixed: 2e-3, PerEdge: 0.02e-9, PerVertex: 0.1e-9, PerLevel: 17e-6},
			{Op: "bfs", Strategy: "vwc", Fixed: 2e-3, PerEdge: 0.05e-9, PerVertex: 0.1e-9, PerLevel: 30e-6},

			{Op: "sssp", Strategy: CPU, Fixed: 0.3e-3, PerEdge: 1e-9, PerLevel: 200e-6},
			{Op: "sssp", Strategy: "vwc", Fixed: 3e-3, PerEdge: 0.06e-9, PerLevel: 38e-6},
			{Op: "sssp", Strategy: "kites", Fixed: 3e-3, PerEdge: 0.08e-9, PerLevel: 26e-6},
			{Op: "sssp", Strategy: "warpseg", Fixed: 3e-3, PerEdge: 0.115e-9, PerLevel: 85e-6},
			{Op: "sssp", Strategy: "cw", Fixed: 3e-3, PerEdge: 0.15e-9, PerLevel: 90e-6},
			{Op: "sssp", Strategy: "gshards", Fixed: 3e-3, PerEdge: 0.15e-9, PerLevel: 90e-6},

			{Op: "sswp", Strategy: CPU, Fixed: 0.3e-3, PerEdge: 1.5e-9, PerLevel: 150e-6},
			{Op: "sswp", Strategy: "vwc", Fixed: 3e-3, PerEdge: 0.024e-9, PerLevel: 40e-6},
			{Op: "sswp", Strategy: "kites", Fixed: 3e-3, PerEdge: 0.04e-9, PerLevel: 45e-6},
			{Op: "sswp", Strategy: "warpseg", Fixed: 3e-3, PerEdge: 0.06e-9, PerLevel: 85e-6},
			{Op: "sswp", Strategy: "cw", Fixed: 3e-3, PerEdge: 0.08e-9, PerLevel: 90e-6},
			{Op: "sswp", Strategy: "gshards", Fixed: 3e-3, PerEdge: 0.08e-9, PerLevel: 90e-6},

			{Op: "pagerank", Strategy: CPU, Fixed: 20e-6, PerEdge: 0.17e-9, PerVertex: 1e-9},
			{Op: "pagerank", Strategy: "warpseg", Fixed: 30e-6, PerEdge: 0.0087e-9, PerVertex: 0.05e-9},
			{Op: "pagerank", Strategy: "vwc", Fixed: 30e-6, PerEdge: 0.0097e-9, PerVertex: 0.05e-9},
			{Op: "pagerank", Strategy: "gshards", Fixed: 40e-6, PerEdge: 0.02e-9, PerVertex: 0.05e-9},
			{Op: "pagerank", Strategy: "cw", Fixed: 40e-6, PerEdge: 0.02e-9, PerVertex: 0.05e-9},

			{Op: "cc", Strategy: CPU, Fixed: 0.2e-3, PerEdge: 0.16e-9, PerVertex: 1e-9},
			{Op: "cc", Strategy: "afforest", Fixed: 2e-3, PerEdge: 0.015e-9, PerVertex: 0.1e-9},
			{Op: "cc", Strategy: "vwc", Fixed: 3e-3, PerEdge: 0.05e-9, PerLevel: 20e-6},
			{Op: "cc", Strategy: "kites", Fixed: 3e-3, PerEdge: 0.06e-9, PerLevel: 20e-6},
			{Op: "cc", Strategy: "warpseg", Fixed: 3e-3, PerEdge: 0.06e-9, PerLevel: 25e-6},
			{Op: "cc", Strategy: "gshards", Fixed: 3e-3, PerEdge: 0.08e-9, PerLevel: 25e-6},
			{Op: "cc", Strategy: "cw", Fixed: 3e-3, PerEdge: 0.08e-9, PerLevel: 25e-6},
		},
	}
}
