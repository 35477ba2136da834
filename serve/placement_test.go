package serve

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/gpu"
	"github.com/gpipe/gpipe/internal/usererr"
	"github.com/gpipe/gpipe/operators"
)

// fakeGPU stands for a GPU of total bytes in the placement tests: a run
// on a graph makes the graph's copy (copyBytes per stored edge) resident,
// as gpuop.GPU does, and takes work bytes more while it runs; a run
// that does not fit fails as cuMemAlloc does. The results are the CPU's.
type fakeGPU struct {
	total, work, copyBytes int64
	// short makes Need leave out the workspace, as an estimate that is too
	// low would: runs then find the GPU out of memory.
	short bool
	// check makes a run that does not fit fail as gpuop.GPU's own check
	// of the free memory does (a usererr.Backend error), not as cuMemAlloc.
	check bool

	mu       sync.Mutex
	used     int64
	resident map[*convert.Graph]int64
	running  int
	runs     int
	forgot   int
	ooms     int // runs that found the GPU out of memory
}

func newFakeGPU(total, work, copyBytes int64) *fakeGPU {
	return &fakeGPU{total: total, work: work, copyBytes: copyBytes, resident: map[*convert.Graph]int64{}}
}

func (f *fakeGPU) Name() string { return "gpu" }

func (f *fakeGPU) copyOf(g *convert.Graph) int64 { return f.copyBytes * g.NumEdges() }

func (f *fakeGPU) Need(_ operators.Operator, g *convert.Graph, _ operators.Params) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	need := f.copyOf(g) - f.resident[g]
	if !f.short {
		need += f.work
	}
	return need, nil
}

func (f *fakeGPU) Resident(g *convert.Graph) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.resident[g]
}

func (f *fakeGPU) MemInfo() (free, total int64, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.total - f.used, f.total, nil
}

func (f *fakeGPU) Forget(g *convert.Graph) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if b, ok := f.resident[g]; ok {
		f.used -= b
		f.forgot++
		delete(f.resident, g)
	}
}

func (f *fakeGPU) Run(ctx context.Context, op operators.Operator, in operators.Input) (*operators.Result, error) {
	f.mu.Lock()
	need := f.copyOf(in.Graph) - f.resident[in.Graph] + f.work
	if need > f.total-f.used {
		f.ooms++
		check, free := f.check, f.total-f.used
		f.mu.Unlock()
		if check {
			return nil, usererr.New(usererr.Backend, fmt.Sprintf("the graph needs %d bytes on the GPU but it has %d free", need, free), "use --backend cpu")
		}
		return nil, fmt.Errorf("out of GPU memory: %w", &gpu.Error{Op: "cuMemAlloc_v2", Code: gpu.CodeOutOfMemory, Name: "CUDA_ERROR_OUT_OF_MEMORY"})
	}
	f.used += need
	f.resident[in.Graph] = f.copyOf(in.Graph)
	f.running++
	f.runs++
	f.mu.Unlock()
	res, err := op.RunCPU(ctx, in)
	f.mu.Lock()
	f.used -= f.work
	f.running--
	f.mu.Unlock()
	if res != nil {
		res.Backend = "gpu"
	}
	return res, err
}

// TestGPUMemoryPlacement checks where queries run on a GPU that holds one
// graph's copy at a time, stood in for by fakeGPU: a query on another
// graph frees the first one's copy and runs on the GPU; a graph too large
// for the GPU is refused under --backend gpu and runs on the CPU under
// auto, saying so; and many clients at once on two graphs, with estimates
// too low to trust, all get their right answers, never an out-of-memory
// error.
func TestGPUMemoryPlacement(t *testing.T) {
	ctx := context.Background()
	small := randomEdges(61, 500, 3000, false)
	large := randomEdges(62, 2000, 12000, false)
	smallRecs, largeRecs := small.records(false, 2), large.records(false, 2)
	srcS, srcL := key(small.src[0], false), key(large.src[0], false)
	bfsS := reference(t, smallRecs, edgeOptions{}, "bfs", operators.Params{Source: srcS})
	defer bfsS.Release()
	bfsL := reference(t, largeRecs, edgeOptions{}, "bfs", operators.Params{Source: srcL})
	defer bfsL.Release()
	treeS, treeL := newEdgeIndex(small, false, false), newEdgeIndex(large, false, false)

	// Room for one small graph's copy and a run's workspace, not two
	// copies; the large graph never fits.
	const perEdge, work = 100, 1 << 20
	capacity := int64(perEdge*3000 + work + 100_000)

	for _, choice := range []string{"gpu", "auto"} {
		t.Run(choice, func(t *testing.T) {
			dev := newFakeGPU(capacity, work, perEdge)
			ts := startServer(t, Config{Backend: choice, gpu: dev})
			c := dial(t, ts.addr)
			for _, name := range []string{"a", "b"} {
				info, err := put(ctx, c, pathDescriptor(name, nil), smallRecs[0].Schema(), smallRecs)
				if err != nil {
					t.Fatal(err)
				}
				if info.Backend != "gpu" {
					t.Errorf("put %s: backend %q (%s), want gpu", name, info.Backend, info.BackendNote)
				}
			}
			info, err := put(ctx, c, pathDescriptor("large", nil), largeRecs[0].Schema(), largeRecs)
			if err != nil {
				t.Fatal(err)
			}
			wantBackend := map[string]string{"gpu": "gpu", "auto": "cpu"}[choice]
			if info.Backend != wantBackend || !strings.Contains(info.BackendNote, "GPU memory") {
				t.Errorf("put large: backend %q (%s), want %s and why", info.Backend, info.BackendNote, wantBackend)
			}

			// a, then b: b's run frees a's copy.
			for _, name := range []string{"a", "b", "a"} {
				res, err := get(ctx, c, map[string]any{"graph": name, "op": "bfs", "source": srcS})
				if err != nil {
					t.Fatalf("bfs on %s: %v", name, err)
				}
				if res.meta.Backend != "gpu" {
					t.Errorf("bfs on %s ran on %q (%s)", name, res.meta.Backend, res.meta.BackendNote)
				}
				if err := sameRecord(res.rec, bfsS, treeS); err != nil {
					t.Errorf("bfs on %s: %v", name, err)
				}
				res.release()
			}
			if dev.forgot < 2 {
				t.Errorf("the copies of a and b were freed %d times, want 2 (each made room for the other)", dev.forgot)
			}

			// The large graph: refused under gpu, on the CPU under auto.
			res, err := get(ctx, c, map[string]any{"graph": "large", "op": "bfs", "source": srcL})
			if choice == "gpu" {
				wantCode(t, err, codes.FailedPrecondition, "bfs on a graph larger than the GPU")
				wantMessage(t, err, "the query was refused", "bfs on this graph needs", "GPU memory", "--backend auto")
			} else {
				if err != nil {
					t.Fatalf("bfs on large under auto: %v", err)
				}
				if res.meta.Backend != "cpu" || !strings.Contains(res.meta.BackendNote, "ran on the CPU") || !strings.Contains(res.meta.BackendNote, "GPU memory") {
					t.Errorf("bfs on large under auto: backend %q, note %q", res.meta.Backend, res.meta.BackendNote)
				}
				if err := sameRecord(res.rec, bfsL, treeL); err != nil {
					t.Error(err)
				}
				res.release()
			}

			// Many clients on a and b at once, the estimates too low: runs
			// that find the GPU full (out of memory, or refused by the
			// backend's own check) wait for it and make room, and all run
			// on it.
			for _, check := range []bool{false, true} {
				dev.mu.Lock()
				dev.short, dev.check, dev.ooms = true, check, 0
				dev.mu.Unlock()
				var wg sync.WaitGroup
				errs := make(chan error, 64)
				for i := 0; i < 8; i++ {
					wg.Add(1)
					go func(i int) {
						defer wg.Done()
						c := dial(t, ts.addr)
						for j := 0; j < 6; j++ {
							name := []string{"a", "b"}[(i+j)%2]
							res, err := get(ctx, c, map[string]any{"graph": name, "op": "bfs", "source": srcS})
							if err != nil {
								errs <- fmt.Errorf("client %d, bfs on %s: %v", i, name, err)
								return
							}
							if res.meta.Backend != "gpu" {
								errs <- fmt.Errorf("client %d, bfs on %s ran on %q (%s)", i, name, res.meta.Backend, res.meta.BackendNote)
							}
							if err := sameRecord(res.rec, bfsS, treeS); err != nil {
								errs <- fmt.Errorf("client %d, bfs on %s: %v", i, name, err)
							}
							res.release()
						}
					}(i)
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					t.Error(err)
				}
				dev.mu.Lock()
				if dev.running != 0 || dev.used != sum(dev.resident) {
					t.Errorf("after the queries: %d runs going, %d bytes used, %d in copies", dev.running, dev.used, sum(dev.resident))
				}
				if dev.ooms == 0 {
					t.Errorf("no run found the GPU full (check %v): the test did not try the retry", check)
				}
				dev.mu.Unlock()
			}
		})
	}
}

func sum(m map[*convert.Graph]int64) int64 {
	var s int64
	for _, v := range m {
		s += v
	}
	return s
}
