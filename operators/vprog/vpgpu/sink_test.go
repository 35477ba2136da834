package vpgpu

import (
	"context"
	"testing"

	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/operators/internal/optest"
	"github.com/gpipe/gpipe/operators/vprog"
)

// sinkProgram uses every type, operation, builtin and reduction of the
// language, and reduces floats only with min and max: its results do not
// depend on the order of the edges, so the GPU's must equal the CPU's
// bit for bit (exp, tanh and sqrt included), iterations too.
const sinkProgram = `program sink
max_iterations 40
const BIG uint32 = 4294967295
vertex a int32 = int32(id % 7) - 3 output
vertex b uint32 = uint32((id * 7919) % 1000) output
vertex c int64 = id * 1000003 output
vertex d float32 = float32(id % 11) / 3 output
vertex e float64 = float64(id) * 0.37 - 5 output
vertex hops uint32 = is_source ? 0 : BIG output
static deg int64 = out_degree
static q float32 = float32(in_degree) + 0.5
edge w float64 = column()
edge wi int32 = int32(column() * 3)
init_compute {
    local.d = old.d * 0.5 + float32(exp(float64(old.d) * 0.01))
}
compute {
    atomicMax(local.a, src.a / 2 - int32(src_static.deg % 3) + edge.wi % 5)
    atomicMin(local.b, src.b / 3 + uint32(src_static.deg))
    atomicAdd(local.c, src.c % 1000 - 500 + int64(edge.wi))
    atomicMax(local.d, min(src.d, float32(edge.w)) * 0.5 + src_static.q / 7)
    atomicMin(local.e, tanh(src.e * 0.25) + sqrt(abs(src.e)) - exp(-abs(src.e)) + edge.w / 3)
    if src.hops != BIG && (src.hops < 5 || src.hops % 2 == 0) {
        atomicMin(local.hops, src.hops + 1)
    }
}
update_condition {
    changed := local.a != old.a || local.b != old.b || local.hops != old.hops
    big := local.e > 1000.0 ? local.e / 1000.0 : local.e
    local.e = big
    r := float32(int32(local.d * 10)) / 10
    local.d = r > 100 ? sqrt(r) : r
    if local.c > 100000000 {
        local.c = local.c / 7
    } else if local.c < -100000000 {
        local.c = -(local.c % 1000000)
    }
    return changed || local.c != old.c || local.e != old.e || local.d != old.d
}
`

// TestSinkGPU compares the sink program's GPU runs with the CPU's, exactly.
func TestSinkGPU(t *testing.T) {
	c := device(t)
	p, err := vprog.Parse("sink.vp", sinkProgram)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range optest.Shapes(t) {
		for _, directed := range []bool{true, false} {
			g := optest.BuildGraph(t, s, directed, true, edges.KeyInt64)
			srcs := optest.SourcesOf(g)
			if len(srcs) == 0 {
				continue
			}
			in := vprog.Input{Graph: g, Source: int64(srcs[0])}
			want, err := vprog.RunCPU(context.Background(), p, in)
			if err != nil {
				t.Fatalf("%s: %v", s.Name, err)
			}
			for _, k := range []int{1, 4, 32} {
				got, _, err := Run(context.Background(), c, p, in, Options{VWarp: k})
				if err != nil {
					t.Fatalf("%s (vwarp %d): %v", s.Name, k, err)
				}
				if err := exactly(p, got, want); err != nil {
					t.Errorf("%s directed=%v (vwarp %d): %v", s.Name, directed, k, err)
				}
			}
		}
	}
}

func exactly(p *vprog.Program, got, want *vprog.Outcome) error {
	for k, f := range p.Vertex {
		if !f.Type.IsFloat() {
			continue
		}
		for i, x := range want.Vertex[k].Float {
			if y := got.Vertex[k].Float[i]; y != x {
				return errorf("field %s, vertex %d: %v, the CPU's %v", f.Name, i, y, x)
			}
		}
	}
	q := *p
	q.Vertex = nil
	for _, f := range p.Vertex {
		f.Type = vprog.TInt64 // compare every field as an integer below
		q.Vertex = append(q.Vertex, f)
	}
	for k, f := range p.Vertex {
		if f.Type.IsFloat() {
			got.Vertex[k].Int, want.Vertex[k].Int = nil, nil
		}
	}
	return same(&q, got, want)
}
