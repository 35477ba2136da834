package gpuop

import (
	"context"
	"testing"
	"time"

	"github.com/gpipe/gpipe/operators/internal/optest"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/ingest/gen"
)

// GPU benchmarks of the graph build and of the columns' copy through the
// staging ring, on a Kronecker graph of GPIPE_BENCH_SCALE (default 16),
// undirected and unweighted as a BFS job builds it. On the GPU machine:
//
//	GPIPE_BENCH_SCALE=24 operators.test -test.run XXX -test.bench 'GPUBuild|GPUStaged' -test.benchtime 3x
//
// BenchmarkGPUBuild reports the build's wall time with the upload
// (upload-ms) apart; BenchmarkHostBuild is convert.Build of the same table
// on all cores, for comparison.

func BenchmarkGPUBuild(b *testing.B) {
	gb := benchGPU(b)
	tab, err := gen.Kronecker{Scale: optest.BenchScale(), EdgeFactor: 16}.Generate(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	opts := convert.BuildOptions{Undirected: true}
	var upload time.Duration
	for i := -1; i < b.N; i++ { // -1: the warm-up (module load, JIT, staging ring)
		if i == 0 {
			b.ResetTimer()
		}
		g, rep, err := gb.BuildGraph(context.Background(), tab, opts)
		if err != nil {
			b.Fatal(err)
		}
		if rep.Device != "gpu" {
			b.Fatalf("built on the host: %s", rep.Reason)
		}
		if i >= 0 {
			upload += rep.Upload
		}
		gb.Forget(g)
		g.Release()
	}
	b.ReportMetric(float64(upload.Milliseconds())/float64(b.N), "upload-ms")
	b.ReportMetric(float64(tab.NumEdges())*float64(b.N)/b.Elapsed().Seconds()/1e6, "Medges/s")
}

func BenchmarkHostBuild(b *testing.B) {
	tab, err := gen.Kronecker{Scale: optest.BenchScale(), EdgeFactor: 16}.Generate(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		g, err := convert.Build(context.Background(), tab, convert.BuildOptions{Undirected: true})
		if err != nil {
			b.Fatal(err)
		}
		g.Release()
	}
	b.ReportMetric(float64(tab.NumEdges())*float64(b.N)/b.Elapsed().Seconds()/1e6, "Medges/s")
}

// BenchmarkGPUStagedUpload copies 1 GiB of Go memory to the device through
// the staging ring (the edge columns' way); compare gpu.test's
// BenchmarkH2DPinned and BenchmarkH2DPageable.
func BenchmarkGPUStagedUpload(b *testing.B) {
	gb := benchGPU(b)
	const size = 1 << 30
	host := make([]byte, size)
	for i := range host {
		host[i] = byte(i)
	}
	dev, err := gb.ctx.Alloc(size)
	if err != nil {
		b.Fatal(err)
	}
	defer dev.Free()
	s, err := gb.ctx.NewStream()
	if err != nil {
		b.Fatal(err)
	}
	defer s.Destroy()
	st, err := gb.stager()
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(size)
	for i := -1; i < b.N; i++ {
		if i == 0 {
			b.ResetTimer()
		}
		if err := st.copy(s, dev, 0, host); err != nil {
			b.Fatal(err)
		}
		if err := s.Synchronize(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(size)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
}
