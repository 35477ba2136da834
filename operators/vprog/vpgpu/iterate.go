package vpgpu

import (
	"context"
	"encoding/binary"

	"github.com/gpipe/gpipe/gpu"
	"github.com/gpipe/gpipe/operators/vprog"
)

// maxBatch is the most iterations queued between two reads of the state:
// the kernels of iterations past the run's end return at once.
const maxBatch = 64

// blockSize is every kernel's block.
const blockSize = 256

// maxBlocks caps the grids: the kernels stride over the vertices.
const maxBlocks = 8192

// iterate runs the iterations, batch by batch, and reads the result.
func (r *run) iterate(ctx context.Context) (*vprog.Outcome, error) {
	start, end, err := r.events()
	if err != nil {
		return nil, err
	}
	defer start.Destroy()
	defer end.Destroy()
	if err := start.Record(r.s); err != nil {
		return nil, err
	}
	parity, batch := 0, 1
	var state [vprog.StateWords]uint32
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		for i := 0; i < batch; i++ {
			if err := r.iteration(parity); err != nil {
				return nil, err
			}
			parity ^= 1
		}
		if err := r.readState(&state); err != nil {
			return nil, err
		}
		if state[1] != 0 { // done
			break
		}
		batch = min(2*batch, maxBatch)
	}
	if err := end.Record(r.s); err != nil {
		return nil, err
	}
	if err := end.Synchronize(); err != nil {
		return nil, err
	}
	if r.st.Compute, err = gpu.Elapsed(start, end); err != nil {
		return nil, err
	}
	if code := state[5]; code != 0 {
		pos, what := r.mod.Fault(code)
		return nil, r.prog.FaultError(r.g, pos, what, state[6])
	}
	return r.outcome(state)
}

// iteration queues one iteration: the strategy's kernels (reading the
// flags of parity), check, commit (writing the other parity's).
func (r *run) iteration(parity int) error {
	if err := r.strategyIteration(parity); err != nil {
		return err
	}
	if err := gpu.Launch(r.fns[vprog.KernelCheck], gpu.Dim(1), gpu.Dim(1), 0, r.s, r.state, uint32(r.prog.MaxIterations)); err != nil {
		return err
	}
	grid := gpu.Dim(min(gpu.BlocksFor(int(r.n), blockSize), maxBlocks))
	return gpu.Launch(r.fns[vprog.KernelCommit], grid, gpu.Dim(blockSize), 0, r.s, r.tab, r.state, r.outOff, r.outTgt, r.act[parity^1], r.chg, r.n)
}

// vwcIteration is vp_compute: K lanes a vertex.
func (r *run) vwcIteration(parity int) error {
	k := uint32(r.st.VWarp)
	grid := gpu.Dim(min(gpu.BlocksFor(int(r.n)*int(k), blockSize), maxBlocks))
	return gpu.Launch(r.fns[vprog.KernelCompute], grid, gpu.Dim(blockSize), 0, r.s, r.tab, r.state, r.inOff, r.inSrc, r.act[parity], r.chg, r.n, int64(r.n))
}

func (r *run) readState(state *[vprog.StateWords]uint32) error {
	raw := make([]byte, 4*vprog.StateWords)
	if err := r.state.CopyToHost(r.s, raw); err != nil {
		return err
	}
	if err := r.s.Synchronize(); err != nil {
		return err
	}
	for i := range state {
		state[i] = binary.LittleEndian.Uint32(raw[4*i:])
	}
	return nil
}

func (r *run) events() (*gpu.Event, *gpu.Event, error) {
	start, err := r.c.NewEvent()
	if err != nil {
		return nil, nil, err
	}
	end, err := r.c.NewEvent()
	if err != nil {
		start.Destroy()
		return nil, nil, err
	}
	return start, end, nil
}

// outcome downloads the vertex fields.
func (r *run) outcome(state [vprog.StateWords]uint32) (*vprog.Outcome, error) {
	out := &vprog.Outcome{Iterations: int(state[2]), Converged: state[3] != 0}
	for k, f := range r.prog.Vertex {
		raw := make([]byte, f.Type.Size()*int(r.n))
		if len(raw) > 0 {
			if err := r.cur[k].CopyToHost(r.s, raw); err != nil {
				return nil, err
			}
		}
		out.Vertex = append(out.Vertex, valuesOf(f.Type, raw))
	}
	return out, r.s.Synchronize()
}
