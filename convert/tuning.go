package convert

// tuning is the builder's sizes and switches that tests turn to reach, on
// small graphs, the paths only large graphs take: the parallel sort in
// many blocks and rounds, the counting sorts with shared atomic counters,
// the hash tables' rebuild, long rows sorted by all cores, and the limit
// on vertices. Its zero value is what every build runs: each field at its
// zero value means its default, justified where it is used. A build takes
// it from BuildOptions (tests set it there), and its graph keeps it for the
// in-edge layout it may build later.
type tuning struct {
	psortBlock   int   // psort: elements a block sort or merge piece takes (0: defaultPsortBlock)
	atomicCounts bool  // counting sorts: shared atomic counters even where per-block ones fit (csr.go)
	maxVertices  int64 // renumbering: the most distinct keys a graph may have (0: MaxVertices)
	smallTables  bool  // hash tables: start at the smallest size, to go through the rebuild (hashtab.go)
	bigRow       int64 // rows from this length are sorted by all cores (0: by the edges and cores, rows.go)
}

// sortBlock is psort's block size.
func (t tuning) sortBlock() int {
	if t.psortBlock > 0 {
		return t.psortBlock
	}
	return defaultPsortBlock
}

// vertexLimit is the most vertices a graph may have.
func (t tuning) vertexLimit() int64 {
	if t.maxVertices > 0 {
		return t.maxVertices
	}
	return MaxVertices
}
