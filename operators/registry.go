package operators

// registry lists every operator, in the order help texts show them.
var registry = []Operator{
	BFS{},
	SSSP{},
	SSWP{},
	PageRank{},
	CC{},
}
