package vprog

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/internal/usererr"
	"github.com/gpipe/gpipe/operators"
)

// Operator runs a program as a gpipe operator: its spec lists the
// program's output columns, its CPU run is RunCPU. GPU runs go through
// package vpgpu. Prepare applies the tolerance and iteration limit of the
// parameters to the program, so an Operator is one run's (make one per
// job).
type Operator struct {
	Prog *Program
}

// Params are the parameters a program run takes (Params' JSON names).
var Params = []string{"source", "tolerance", "max_iterations", "strategy", "vwarp"}

// Spec describes the program as an operator.
func (o *Operator) Spec() operators.Spec {
	p := o.Prog
	s := operators.Spec{
		Name:        "program " + p.Name,
		Summary:     "the vertex program " + p.File,
		NeedsSource: p.NeedsSource, Weighted: p.UsesColumn, Weights: convert.FiniteWeights,
		// GPU stays false: a program takes vwarp and strategy alone of
		// the GPU parameters (Params lists them), not the built-ins' others.
		NeedsIn: true, Params: Params,
	}
	for _, i := range p.Outputs() {
		f := p.Vertex[i]
		s.Columns = append(s.Columns, operators.ColumnSpec{Name: f.OutName, Type: columnType(f), Doc: "the program's field " + f.Name})
	}
	return s
}

func columnType(f Field) operators.ColumnType {
	switch {
	case f.Key:
		return operators.VertexColumn
	case f.Type.IsFloat():
		return operators.Float64Column
	}
	return operators.Int64Column
}

// Prepare applies the run's tolerance and iteration limit to the program.
func (o *Operator) Prepare(p *operators.Params) error {
	if p.MaxIterations < 0 {
		return usererr.Newf(usererr.Usage, "max_iterations %d is negative", p.MaxIterations)
	}
	if p.Strategy != "" && p.Strategy != "auto" && !slices.Contains(Strategies(), p.Strategy) {
		return usererr.New(usererr.Usage, fmt.Sprintf("vertex programs have no GPU strategy %q", p.Strategy),
			"use one of "+strings.Join(Strategies(), ", ")+" (or auto)")
	}
	if k := p.VWarp; k != 0 && (k < 1 || k > 32 || k&(k-1) != 0) {
		return usererr.Newf(usererr.Usage, "vwarp (the lanes a vertex) %d is not 1, 2, 4, 8, 16 or 32", k)
	}
	if p.Tolerance < 0 || math.IsNaN(p.Tolerance) || math.IsInf(p.Tolerance, 0) {
		return usererr.Newf(usererr.Usage, "tolerance %v is not a finite number >= 0", p.Tolerance)
	}
	prog, err := o.Prog.With(Options{Tolerance: p.Tolerance, MaxIterations: p.MaxIterations})
	if err != nil {
		return err
	}
	o.Prog = prog
	return nil
}

// RunCPU runs the program on the CPU cores.
func (o *Operator) RunCPU(ctx context.Context, in operators.Input) (*operators.Result, error) {
	start := time.Now()
	src := int64(-1)
	if o.Prog.NeedsSource {
		src = int64(in.Source)
	}
	out, err := RunCPU(ctx, o.Prog, Input{Graph: in.Graph, Source: src})
	if err != nil {
		return nil, err
	}
	res, err := o.Result(in.Graph, out)
	if err != nil {
		return nil, err
	}
	res.Backend, res.Strategy, res.Compute = "cpu", "pull", time.Since(start)
	return res, nil
}

// Result turns a run's outcome into the operator's result columns, and
// warns when the run stopped at its iteration limit.
func (o *Operator) Result(g *convert.Graph, out *Outcome) (*operators.Result, error) {
	p := o.Prog
	res := &operators.Result{Op: o.Spec().Name, Iterations: out.Iterations, NotConverged: !out.Converged}
	if !out.Converged {
		res.Warnings = append(res.Warnings, fmt.Sprintf("the program %s stopped at its iteration limit (%d) before converging: some update_condition still returned true; raise max_iterations (or the tolerance)",
			p.Name, p.MaxIterations))
	}
	for _, i := range p.Outputs() {
		c, err := outputColumn(p.Vertex[i], out.Vertex[i], g.NumVertices())
		if err != nil {
			return nil, errAt(p.File, p.Vertex[i].Pos, err.Error(), "output key only fields of vertex ids (or null)")
		}
		res.Columns = append(res.Columns, c)
	}
	return res, nil
}

func outputColumn(f Field, v Values, n int) (operators.Column, error) {
	c := operators.Column{Name: f.OutName, Type: columnType(f)}
	switch c.Type {
	case operators.Float64Column:
		c.Float64 = v.Float
		if f.HasNull {
			for i, x := range c.Float64 {
				if x == f.Null.f {
					c.Float64[i] = math.NaN()
				}
			}
		}
	case operators.VertexColumn:
		c.Vertex = make([]uint32, n)
		for i, x := range v.Int {
			switch {
			case f.HasNull && x == f.Null.i:
				c.Vertex[i] = convert.NoVertex
			case x >= int64(n):
				return c, fmt.Errorf("field %s is output as vertex keys, but holds %d, not a vertex id (the graph has %d vertices)", f.Name, x, n)
			default:
				c.Vertex[i] = uint32(x)
			}
		}
	default:
		c.Int64 = v.Int
		if f.HasNull {
			c.Valid = make([]byte, (n+31)/32*4)
			for i, x := range v.Int {
				if x != f.Null.i {
					c.Valid[i/8] |= 1 << (i % 8)
				}
			}
		}
	}
	return c, nil
}
