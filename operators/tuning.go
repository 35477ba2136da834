package operators

// tuning is the CPU engine's size thresholds: when Δ-stepping ends a
// fused round, splits a hub and sorts a frontier, how large sssp's
// relaxation-log chunks are, whether sssp may keep uint32 distances, and
// when PageRank numbers hubs first. Each default is justified where it is
// used, by the measurements that chose it. A run takes its thresholds from
// its Input (nil: the defaults); tests pass others to reach, on small
// graphs, the paths that only large graphs take.
type tuning struct {
	fuseEdges  int64   // Δ-stepping: edges a fused round may relax (deltastep.go)
	splitEdges int64   // Δ-stepping: out-degree from which a vertex is a hub
	pieceEdges int64   // Δ-stepping: a hub's edges taken at a time
	sortMin    int     // Δ-stepping: frontiers from this size are sorted
	relaxChunk int     // sssp: entries in a relaxation-log chunk (sssp.go)
	wideDists  bool    // sssp: float64 distances even on integer weights
	hubMin     int     // PageRank: vertices from which hubs-first may pay (pagerank.go)
	hubSkew    float64 // PageRank: max/mean out-degree from which it does
}

// defaultTuning is the thresholds a run uses unless its Input names others.
func defaultTuning() tuning {
	return tuning{
		fuseEdges:  1 << 14,
		splitEdges: 1 << 12,
		pieceEdges: 1 << 11,
		sortMin:    1024,
		relaxChunk: 1 << 15,
		hubMin:     1 << 18,
		hubSkew:    16,
	}
}

// tuning is in's thresholds.
func (in Input) tuning() tuning {
	if in.tune != nil {
		return *in.tune
	}
	return defaultTuning()
}
