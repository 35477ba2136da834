package vpgpu

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/operators/internal/optest"
	"github.com/gpipe/gpipe/operators/vprog"
)

// sinkProgram (../testdata/sink.vp, which vprog's PTX test assembles
// too) uses every type, operation, builtin and reduction of the
// language, and reduces floats only with min and max: its results do not
// depend on the order of the edges, so the GPU's must equal the CPU's
// bit for bit (exp, tanh and sqrt included), iterations too, with every
// strategy.
func sinkProgram(t *testing.T) string {
	t.Helper()
	text, err := os.ReadFile(filepath.Join("..", "testdata", "sink.vp"))
	if err != nil {
		t.Fatal(err)
	}
	return string(text)
}

// TestSinkGPU compares the sink program's GPU runs with the CPU's, exactly.
func TestSinkGPU(t *testing.T) {
	c := device(t)
	p, err := vprog.Parse("sink.vp", sinkProgram(t))
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
			for _, o := range configs(false) {
				got, st, err := Run(context.Background(), c, p, in, o)
				if err != nil {
					t.Fatalf("%s (%+v): %v", s.Name, o, err)
				}
				if err := exactly(p, got, want); err != nil {
					t.Errorf("%s directed=%v (%s, %s): %v", s.Name, directed, st.Strategy, st.Shape(), err)
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
