package operators

import (
	"slices"
	"testing"
)

// edgeRecorder is a relaxer that records which edges it was given: relax
// a vertex's whole row, relaxEdges a piece of it.
type edgeRecorder struct {
	offs    []int64
	relaxed []int // per edge, how many times
}

func (e *edgeRecorder) relax(_ *deltaStepper, _ int, us []uint32, _ uint64) {
	for _, u := range us {
		for i := e.offs[u]; i < e.offs[u+1]; i++ {
			e.relaxed[i]++
		}
	}
}

func (e *edgeRecorder) relaxEdges(_ *deltaStepper, _ int, _ uint32, lo, hi int64, _ uint64) {
	for i := lo; i < hi; i++ {
		e.relaxed[i]++
	}
}

func (e *edgeRecorder) bucket(uint32) uint64 { return 0 }

// TestRelaxSplittingOnce: a worker's chunk relaxes every edge of its
// vertices once, hubs in pieces or, past the phase's maxHubs, whole, and
// small vertices around them.
func TestRelaxSplittingOnce(t *testing.T) {
	// Degrees: small (1, 2, 3) and hubs (4 and up), interleaved.
	degrees := []int64{1, 9, 2, 4, 3, 17, 5, 1, 0, 8}
	offs := []int64{0}
	for _, deg := range degrees {
		offs = append(offs, offs[len(offs)-1]+deg)
	}
	us := []uint32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
	for _, taken := range []int64{0, maxHubs - 2, maxHubs} { // hub slots already taken this phase
		d := newDeltaStepper(4)
		d.tune.splitEdges, d.tune.pieceEdges = 4, 3
		d.offs = offs
		d.phase = 7
		d.numHubs.Store(taken)
		r := &edgeRecorder{offs: offs, relaxed: make([]int, offs[len(offs)-1])}
		d.relaxSplitting(r, 0, us, 0)
		if i := slices.IndexFunc(r.relaxed, func(k int) bool { return k != 1 }); i >= 0 {
			t.Errorf("%d hub slots taken before: edge %d relaxed %d times (all: %v)", taken, i, r.relaxed[i], r.relaxed)
		}
	}
}
