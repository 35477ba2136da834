package convert

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/ingest/gen"
)

// benchScale is the Kronecker scale of the build benchmarks: 16 unless
// GPIPE_BENCH_SCALE says otherwise.
func benchScale(b *testing.B) int {
	if s := os.Getenv("GPIPE_BENCH_SCALE"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			b.Fatalf("GPIPE_BENCH_SCALE=%q: %v", s, err)
		}
		return n
	}
	return 16
}

// heapSampler records the largest heap (live objects and garbage not yet
// swept) seen every half millisecond until stopped.
type heapSampler struct {
	stop chan struct{}
	done sync.WaitGroup
	peak uint64
}

func heapObjects() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func startHeapSampler() *heapSampler {
	h := &heapSampler{stop: make(chan struct{}), peak: heapObjects()}
	h.done.Add(1)
	go func() {
		defer h.done.Done()
		tick := time.NewTicker(500 * time.Microsecond)
		defer tick.Stop()
		for {
			h.peak = max(h.peak, heapObjects())
			select {
			case <-h.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return h
}

func (h *heapSampler) end() uint64 {
	close(h.stop)
	h.done.Wait()
	return max(h.peak, heapObjects())
}

// cpuTime is the process's user and system CPU time so far: on a shared
// machine it says more about a build's cost than the wall time does.
func cpuTime() time.Duration {
	ru := rusage()
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func rusage() syscall.Rusage {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru
}

// inputBytes is the memory of the table's columns.
func inputBytes(t *edges.Table) int64 {
	var n int64
	for i := range t.Chunks {
		c := &t.Chunks[i]
		for _, k := range []*edges.Keys{&c.Src, &c.Dst} {
			switch {
			case k.Str != nil:
				n += int64(len(k.Str.Offsets))*8 + int64(len(k.Str.Data))
			case k.Int32 != nil || k.Uint32 != nil:
				n += int64(k.Len()) * 4
			default:
				n += int64(k.Len()) * 8
			}
		}
		n += int64(len(c.Weight)) * 8
	}
	return n
}

// benchBuild builds tab b.N times, each from a collected heap, and reports
// ns and CPU time per input edge, the layout's bytes per input edge, and the
// peak heap during a build (input columns included), over the input columns
// plus the built graph (layout and keys) and in bytes per input edge above
// the heap before the build. GPIPE_BENCH_TRACE=1 prints each phase's times.
func benchBuild(b *testing.B, tab *edges.Table, opts BuildOptions) {
	m := tab.NumEdges()
	var graphBytes, layoutBytes int64
	var peak, base uint64
	var elapsed, cpu time.Duration
	if os.Getenv("GPIPE_BENCH_TRACE") != "" {
		last, lastRU := time.Now(), rusage()
		tracePhase = func(name string) {
			now, ru := time.Now(), rusage()
			fmt.Fprintf(os.Stderr, "%-9s %7.1f ms wall %7.1f ms user %7.1f ms sys %6d faults\n", name, float64(now.Sub(last).Microseconds())/1000,
				float64(ru.Utime.Nano()-lastRU.Utime.Nano())/1e6, float64(ru.Stime.Nano()-lastRU.Stime.Nano())/1e6, ru.Minflt-lastRU.Minflt)
			last, lastRU = now, ru
		}
		defer func() { tracePhase = nil }()
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		runtime.GC()
		base = heapObjects()
		h := startHeapSampler()
		start, startCPU := time.Now(), cpuTime()
		b.StartTimer()
		g, err := Build(context.Background(), tab, opts)
		b.StopTimer()
		elapsed += time.Since(start)
		cpu += cpuTime() - startCPU
		peak = max(peak, h.end())
		if err != nil {
			b.Fatal(err)
		}
		graphBytes, layoutBytes = g.Bytes(), g.Out.Bytes()
		b.StartTimer()
	}
	b.ReportMetric(float64(elapsed.Nanoseconds())/float64(b.N)/float64(m), "ns/edge")
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
	b.ReportMetric(float64(layoutBytes)/float64(m), "layoutB/edge")
	b.ReportMetric(float64(peak-base)/float64(m), "extraPeakB/edge")
	b.ReportMetric(float64(peak)/float64(inputBytes(tab)+graphBytes), "peak/(input+graph)")
}

// BenchmarkBuildKronecker builds a Graph 500 Kronecker graph (edge factor
// 16, int64 keys) directed and undirected, unweighted and weighted (GAP's
// integer weights in [1, 255]); see benchBuild for what it reports.
func BenchmarkBuildKronecker(b *testing.B) {
	scale := benchScale(b)
	for _, weighted := range []bool{false, true} {
		var tab *edges.Table
		for _, undirected := range []bool{false, true} {
			name := fmt.Sprintf("scale=%d/undirected=%v/weighted=%v", scale, undirected, weighted)
			b.Run(name, func(b *testing.B) {
				if tab == nil {
					var err error
					tab, err = gen.Kronecker{Scale: scale, EdgeFactor: 16, Seed: 1, Weighted: weighted}.Generate(context.Background())
					if err != nil {
						b.Fatal(err)
					}
				}
				benchBuild(b, tab, BuildOptions{Undirected: undirected, Weighted: weighted})
			})
		}
		tab = nil
	}
}

// BenchmarkRenumberKronecker times the renumbering step alone.
func BenchmarkRenumberKronecker(b *testing.B) {
	scale := benchScale(b)
	tab, err := gen.Kronecker{Scale: scale, EdgeFactor: 16, Seed: 1}.Generate(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	spans := edgeSpans(tab)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, _, err := renumber(context.Background(), tab, spans, nil, tuning{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(tab.NumEdges()), "ns/edge")
}

// BenchmarkBuildKeys builds the undirected Kronecker graph with its keys
// spread over all of int64 (the hash-table renumbering) and as strings
// ("user-123"); see benchBuild for what it reports.
func BenchmarkBuildKeys(b *testing.B) {
	scale := benchScale(b)
	for _, keys := range []string{"int64-sparse", "string"} {
		b.Run(fmt.Sprintf("scale=%d/keys=%s", scale, keys), func(b *testing.B) {
			tab, err := gen.Kronecker{Scale: scale, EdgeFactor: 16, Seed: 1}.Generate(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			for i := range tab.Chunks {
				c := &tab.Chunks[i]
				for _, k := range []*edges.Keys{&c.Src, &c.Dst} {
					if keys == "int64-sparse" {
						for j, v := range k.Int64 {
							k.Int64[j] = int64(mix64(uint64(v)))
						}
						continue
					}
					s := &edges.Strings{Offsets: make([]int64, 1, len(k.Int64)+1)}
					for _, v := range k.Int64 {
						s.Data = strconv.AppendInt(append(s.Data, "user-"...), v, 10)
						s.Offsets = append(s.Offsets, int64(len(s.Data)))
					}
					*k = edges.Keys{Str: s}
				}
			}
			if keys == "string" {
				tab.KeyType, tab.KeyArrowType = edges.KeyString, nil
			}
			benchBuild(b, tab, BuildOptions{Undirected: true})
		})
	}
}
