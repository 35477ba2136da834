package serve

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/gpu"
	"github.com/gpipe/gpipe/internal/bytesize"
	"github.com/gpipe/gpipe/internal/pipeline"
	"github.com/gpipe/gpipe/internal/usererr"
	"github.com/gpipe/gpipe/kernels"
	"github.com/gpipe/gpipe/operators"
	"github.com/gpipe/gpipe/operators/cost"
	"github.com/gpipe/gpipe/operators/gpuop"
	"github.com/gpipe/gpipe/operators/vprog"
)

// Where a query runs. With --backend cpu, on the CPU. With gpu or auto, on
// the GPU when the run fits in its memory, which holds the device copies
// of the graphs queried on it (kept for the next query, as gpuop.GPU
// keeps them) and the workspace of the runs under way (an upload's build on
// the GPU counts as one). A run that does not
// fit now waits for the GPU to itself, and frees the copies of the graphs
// used least recently (none of them is in use then) until it fits. A run
// that does not fit even so is refused under --backend gpu
// (FailedPrecondition, saying so), and runs on the CPU under auto (the
// result's metadata says so in backend_note). A run that the estimate let
// in but that the GPU backend declines (out of memory, or no room by its own
// check) is handled the same way: it never fails for lack of GPU memory
// while another run or a graph's copy was in the way.

// gpuDevice is the GPU as the server places runs on it: gpuop.GPU, or
// a stand-in in tests.
type gpuDevice interface {
	operators.Backend
	// Need is the device memory a run of op on g would allocate beyond g's
	// copies there.
	Need(op operators.Operator, g *convert.Graph, p operators.Params) (int64, error)
	// Resident is the device memory g's copies hold.
	Resident(g *convert.Graph) int64
	// MemInfo is the device memory free now, and in all.
	MemInfo() (free, total int64, err error)
	// Forget frees g's copies.
	Forget(g *convert.Graph)
}

// deviceGPU is gpuop.GPU as a gpuDevice.
type deviceGPU struct{ *gpuop.GPU }

func (d deviceGPU) MemInfo() (free, total int64, err error) { return d.Device().MemInfo() }

// placement places the server's runs.
type placement struct {
	choice string      // "auto", "cpu" or "gpu"
	gpu    gpuDevice   // nil: the CPU only
	noGPU  string      // under auto without a GPU: why there is none
	model  *cost.Model // auto's per query; nil: the GPU's own

	// runs is held shared by each run on the GPU, and exclusively by a run
	// that needs the GPU to itself to make room.
	runs sync.RWMutex
	mu   sync.Mutex
	// used is when each graph last ran on the GPU: the graphs that may
	// have copies there, whose copies room is made from.
	used map[*convert.Graph]time.Time
}

// newPlacement places runs by a backend choice that pipeline.OpenBackend
// accepted, on dev when it is given (tests), else on the process's GPU.
func newPlacement(choice string, dev gpuDevice, model *cost.Model) *placement {
	pl := &placement{choice: choice, gpu: dev, model: model, used: map[*convert.Graph]time.Time{}}
	if pl.choice == "" {
		pl.choice = "auto"
	}
	if pl.choice != "cpu" && dev == nil {
		g, err := pipeline.SharedGPU()
		if err != nil {
			pl.noGPU = "no usable GPU: " + oneLine(err.Error())
		} else {
			pl.gpu = deviceGPU{g}
		}
	}
	if pl.choice == "cpu" {
		pl.gpu = nil
	}
	return pl
}

// warm loads the GPU's kernels (gpuop.GPU.LoadKernels) before the
// server takes calls, so that no upload or query waits for a module's load.
// The modules are fatbins whose SASS the driver loads as it is
// (milliseconds each); before them, the driver's JIT compilation took 10–13
// s for all on a machine whose cache did not have them, and a first upload
// waited for most of it (9.9 s instead of 1.3). It logs how long they took,
// or why some did not load (LoadKernels goes on past a module that fails;
// those load, or fail, on first use, as without warming).
func (pl *placement) warm(log *slog.Logger) {
	d, ok := pl.gpu.(deviceGPU)
	if !ok {
		return
	}
	start := time.Now()
	if err := d.LoadKernels(kernels.GraphBuild, kernels.Columns); err != nil {
		log.Warn("some GPU kernels did not load ahead; they load on first use", "err", oneLine(err.Error()))
		return
	}
	log.Info("GPU kernels loaded", "duration_s", time.Since(start).Seconds())
}

// run runs op on g with parameters p, and says where it ran when that was
// chosen (auto) and why.
func (pl *placement) run(ctx context.Context, g *pipeline.Graph, op operators.Operator, p operators.Params) (res *pipeline.Result, note string, err error) {
	if pl.gpu == nil {
		res, err = g.RunOp(ctx, op, p, operators.CPU{})
		return res, pl.noGPU, err
	}
	need, err := pl.gpu.Need(op, g.Graph, p)
	if err != nil { // the operator has no GPU implementation
		return pl.elsewhere(ctx, g, op, p, err)
	}
	if _, prog := op.(*vprog.Operator); !prog && pl.choice == "auto" {
		// The cost model, per query, with the GPU open: a query the CPU
		// answers sooner (a small graph) runs there.
		// A program has no row in the cost model: it takes the GPU.
		if d, ok := pl.gpu.(deviceGPU); ok {
			if cpu, why := pipeline.CheaperOnCPU(d.GPU, pl.model, g.Graph, op, p); cpu {
				res, err = g.RunOp(ctx, op, p, operators.CPU{})
				return res, "ran on the CPU: " + why, err
			}
		}
	}
	pl.runs.RLock()
	free, total, err := pl.gpu.MemInfo()
	if err == nil && need > total {
		pl.runs.RUnlock()
		return pl.elsewhere(ctx, g, op, p, errNoRoom{need: need, free: total, all: true})
	}
	if err == nil && need <= free {
		res, err = pl.onGPU(ctx, g, op, p)
		pl.runs.RUnlock()
		if !declined(err) {
			return res, "", err
		}
	} else {
		pl.runs.RUnlock()
	}
	if err := ctx.Err(); err != nil {
		return nil, "", err
	}
	pl.runs.Lock()
	res, err = pl.alone(ctx, g, op, p)
	pl.runs.Unlock()
	if !declined(err) {
		return res, "", err
	}
	return pl.elsewhere(ctx, g, op, p, err)
}

// alone runs op on g with the GPU to itself, after freeing the copies of
// other graphs, least recently used first, until the run fits; or says
// (errNoRoom) that it does not fit even with them all freed. Where the
// estimate was too low and the run finds the GPU out of memory with
// copies of other graphs left, it frees them all and tries once more.
func (pl *placement) alone(ctx context.Context, g *pipeline.Graph, op operators.Operator, p operators.Params) (*pipeline.Result, error) {
	need, err := pl.gpu.Need(op, g.Graph, p)
	if err != nil {
		return nil, err
	}
	free, _, err := pl.gpu.MemInfo()
	if err != nil {
		return nil, err
	}
	others := pl.othersByUse(g.Graph)
	if need > free {
		var freeable int64
		for _, o := range others {
			freeable += pl.gpu.Resident(o)
		}
		if need > free+freeable {
			return nil, errNoRoom{need: need, free: free, freeable: freeable}
		}
		for len(others) > 0 && need > free {
			pl.forget(others[0])
			others = others[1:]
			if free, _, err = pl.gpu.MemInfo(); err != nil {
				return nil, err
			}
		}
	}
	res, err := pl.onGPU(ctx, g, op, p)
	if declined(err) && len(others) > 0 {
		for _, o := range others {
			pl.forget(o)
		}
		res, err = pl.onGPU(ctx, g, op, p)
	}
	if declined(err) {
		return nil, errNoRoom{need: need, free: free, cause: err}
	}
	return res, err
}

// onGPU runs op on g on the GPU, noting the graph's use.
func (pl *placement) onGPU(ctx context.Context, g *pipeline.Graph, op operators.Operator, p operators.Params) (*pipeline.Result, error) {
	pl.mu.Lock()
	pl.used[g.Graph] = time.Now()
	pl.mu.Unlock()
	return g.RunOp(ctx, op, p, pl.gpu)
}

// elsewhere is what happens to a run the GPU cannot take (why): under
// auto it runs on the CPU, under gpu it is refused.
func (pl *placement) elsewhere(ctx context.Context, g *pipeline.Graph, op operators.Operator, p operators.Params, why error) (*pipeline.Result, string, error) {
	if pl.choice == "gpu" {
		if nr, ok := why.(errNoRoom); ok {
			return nil, "", usererr.New(usererr.Backend, fmt.Sprintf("the query was refused: %s on this graph %s", op.Spec().Name, nr.Error()),
				"drop graphs the server holds, or query a server started with --backend auto (it runs such queries on the CPU)")
		}
		return nil, "", why
	}
	res, err := g.RunOp(ctx, op, p, operators.CPU{})
	return res, "ran on the CPU: " + oneLine(why.Error()), err
}

// othersByUse lists the graphs but keep that ran on the GPU, least
// recently used first.
func (pl *placement) othersByUse(keep *convert.Graph) []*convert.Graph {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	var gs []*convert.Graph
	for g := range pl.used {
		if g != keep {
			gs = append(gs, g)
		}
	}
	slices.SortFunc(gs, func(a, b *convert.Graph) int { return pl.used[a].Compare(pl.used[b]) })
	return gs
}

// builder is the GPU that builds uploaded graphs: the one queries run on,
// nil with --backend cpu or without a GPU (or with a stand-in, in tests).
// A graph built there keeps its layouts on the device as the copies its
// queries use, so the first query copies nothing.
func (pl *placement) builder() *gpuop.GPU {
	if pl == nil {
		return nil
	}
	if d, ok := pl.gpu.(deviceGPU); ok {
		return d.GPU
	}
	return nil
}

// building holds the GPU as a run does while a graph is built there, so
// that a run making room (alone) counts on nothing else using its memory;
// the returned call lets go.
func (pl *placement) building() (done func()) {
	pl.runs.RLock()
	return pl.runs.RUnlock
}

// built notes a graph built on the GPU (builder): its layouts there are
// copies like those of a graph that ran there, freed like them (least
// recently used first) when a run needs room.
func (pl *placement) built(g *convert.Graph) {
	pl.mu.Lock()
	pl.used[g] = time.Now()
	pl.mu.Unlock()
}

// forget frees g's copies on the GPU: g is being freed, or made room for.
func (pl *placement) forget(g *convert.Graph) {
	if pl.gpu == nil {
		return
	}
	pl.mu.Lock()
	delete(pl.used, g)
	pl.mu.Unlock()
	pl.gpu.Forget(g)
}

// describe says where op's runs on g would go now (for a graph's
// description), and why when that was chosen or is not possible.
func (pl *placement) describe(g *convert.Graph, op operators.Operator) (backend, note string) {
	if pl.gpu == nil {
		return "cpu", pl.noGPU
	}
	need, err := pl.gpu.Need(op, g, operators.Params{})
	if err == nil {
		var total int64
		if _, total, err = pl.gpu.MemInfo(); err == nil && need > total {
			err = errNoRoom{need: need, free: total, all: true}
		}
	}
	switch {
	case err == nil:
		return "gpu", ""
	case pl.choice == "gpu":
		return "gpu", oneLine(err.Error())
	}
	return "cpu", oneLine(err.Error())
}

// errNoRoom says that a run does not fit in the GPU's memory.
type errNoRoom struct {
	need, free, freeable int64
	all                  bool  // free is all the GPU's memory
	cause                error // the out-of-memory error of a run, if it came to that
}

func (e errNoRoom) Error() string {
	if e.all {
		return fmt.Sprintf("needs %s of GPU memory, more than the GPU's %s", bytesize.Format(e.need), bytesize.Format(e.free))
	}
	if e.cause != nil {
		return fmt.Sprintf("failed with the GPU to itself (%s)", oneLine(e.cause.Error()))
	}
	return fmt.Sprintf("needs %s of GPU memory, which has %s free (with %s more in other graphs' copies it could free)",
		bytesize.Format(e.need), bytesize.Format(e.free), bytesize.Format(e.freeable))
}

// declined says whether err is the GPU backend declining a run: out of
// memory, no room by its own check of the free memory (a usererr.Backend
// error, as any failure of the backend is), or errNoRoom; not an error of
// the query that any backend would give (a bad parameter, a source that is
// not a vertex, the call canceled).
func declined(err error) bool {
	if err == nil {
		return false
	}
	if _, ok := err.(errNoRoom); ok {
		return true
	}
	return gpu.IsCode(err, gpu.CodeOutOfMemory) || usererr.KindOf(err) == usererr.Backend
}
