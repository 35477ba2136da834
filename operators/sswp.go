package operators

import (
	"context"
	"fmt"
	"math"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/internal/par"
)

// SSWP is single-source widest paths: for each vertex, the largest
// bottleneck (smallest edge weight along the path) over the paths from the
// source. Weights may be any finite numbers, negative ones included.
type SSWP struct{}

// Spec describes sswp.
func (SSWP) Spec() Spec {
	return Spec{
		Name:        "sswp",
		GPU:         true,
		Summary:     "single-source widest paths: the largest path bottleneck (minimum edge weight) from the source to every reachable vertex",
		NeedsSource: true,
		Weighted:    true,
		Weights:     convert.FiniteWeights,
		Params:      []string{ParamSource, ParamDelta},
		Columns: []ColumnSpec{
			{Name: "width", Type: Float64Column, Doc: "the largest minimum edge weight over paths from the source (+Inf for the source); null when unreachable"},
		},
	}
}

// Prepare checks Delta: 0 (choose from the weights) or a positive number.
func (SSWP) Prepare(p *Params) error { return checkDelta("sswp", p.Delta) }

// sswpBuckets is how many buckets the default Δ cuts the weight range into.
const sswpBuckets = 1024

// RunCPU runs a widest-path Δ-stepping: buckets by decreasing width, the
// current bucket relaxed label-correcting with an atomic max on the widths'
// float64 bits.
func (SSWP) RunCPU(ctx context.Context, in Input) (*Result, error) {
	if err := CheckSource("sswp", in); err != nil {
		return nil, err
	}
	if err := checkDelta("sswp", in.Params.Delta); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	g := in.Graph
	start := time.Now()
	c := &g.Out
	_, lo, hi := SampleWeights(c)
	delta := in.Params.Delta
	if delta == 0 {
		delta = (hi - lo) / sswpBuckets
		if !(delta > 0) || math.IsInf(delta, 0) {
			delta = 1
		}
	}
	n := c.NumVertices()
	width := make([]float64, n)
	bitsView := unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(width))), n)
	fillU64(bitsView, math.Float64bits(math.Inf(-1)))
	width[in.Source] = math.Inf(1)
	r := &sswpRelaxer{offs: c.Offsets, targets: c.Targets, weights: c.Weights, width: bitsView, top: hi, inv: 1 / delta}
	d := getDeltaStepper(ringSpan(hi-lo, delta), in.tuning())
	phases, err := d.run(ctx, "sswp", r, in.Source, c.Offsets)
	if err != nil {
		return nil, err
	}
	d.release()
	par.For(n, 1<<16, func(a, b int) {
		for i := a; i < b; i++ {
			if math.IsInf(width[i], -1) {
				width[i] = math.NaN()
			}
		}
	})
	return &Result{
		Op: "sswp", Backend: "cpu", Strategy: fmt.Sprintf("delta-stepping (delta=%.4g)", delta),
		Iterations: phases,
		Compute:    time.Since(start),
		Columns:    []Column{{Name: "width", Type: Float64Column, Float64: width}},
	}, nil
}

// sswpRelaxer relaxes out-edges for widths: a vertex's bucket is
// ⌊(top − width)/Δ⌋ (0 for widths above top, the source's +Inf included),
// so wider vertices come first.
type sswpRelaxer struct {
	offs    []int64
	targets []uint32
	weights []float64
	width   []uint64 // float64 bits
	top     float64
	inv     float64
}

func (r *sswpRelaxer) bucketOfWidth(x float64) uint64 {
	if x >= r.top {
		return 0
	}
	return bucketOf(r.top-x, r.inv)
}

func (r *sswpRelaxer) bucket(v uint32) uint64 {
	return r.bucketOfWidth(math.Float64frombits(atomic.LoadUint64(&r.width[v])))
}

func (r *sswpRelaxer) relax(d *deltaStepper, w int, us []uint32, cur uint64) {
	for _, u := range us {
		r.relaxEdges(d, w, u, r.offs[u], r.offs[u+1], cur)
	}
}

func (r *sswpRelaxer) relaxEdges(d *deltaStepper, w int, u uint32, lo, hi int64, cur uint64) {
	wu := math.Float64frombits(atomic.LoadUint64(&r.width[u]))
	if r.bucketOfWidth(wu) < cur {
		return // stale
	}
	width := r.width
	ts := r.targets[lo:hi]
	if r.weights == nil {
		nw := min(wu, 1)
		nb := math.Float64bits(nw)
		for _, v := range ts {
			for old := atomic.LoadUint64(&width[v]); nw > math.Float64frombits(old); old = atomic.LoadUint64(&width[v]) {
				if atomic.CompareAndSwapUint64(&width[v], old, nb) {
					d.push(w, r.bucketOfWidth(nw), cur, v)
					break
				}
			}
		}
		return
	}
	ws := r.weights[lo:hi]
	ws = ws[:len(ts)]
	for i, v := range ts {
		nw := min(wu, ws[i])
		for old := atomic.LoadUint64(&width[v]); nw > math.Float64frombits(old); old = atomic.LoadUint64(&width[v]) {
			if atomic.CompareAndSwapUint64(&width[v], old, math.Float64bits(nw)) {
				d.push(w, r.bucketOfWidth(nw), cur, v)
				break
			}
		}
	}
}
