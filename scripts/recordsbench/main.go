// Command recordsbench times gpipe.FromRecords on an edge table a program
// holds as Arrow records against gpipe.Load of the same table from an Arrow
// IPC file (memory-mapped) and from Parquet, one way per process, so that
// each gets its own peak memory: read and build times, the process's
// resident set before the load and at its peak, and the Go heap bytes the
// load allocated. scripts/bench-records.sh runs the three in turns
// (BENCHMARKS.md, "Edge tables from memory").
//
//	recordsbench -scale 22 records
//	recordsbench arrow k22.arrow
//	recordsbench parquet k22.parquet
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/gpipe/gpipe"
	"github.com/gpipe/gpipe/ingest/gen"
	"github.com/gpipe/gpipe/internal/rusage"
)

// report is one load's figures, a JSON line.
type report struct {
	Way        string  `json:"way"`
	Backend    string  `json:"backend"`
	Rows       int64   `json:"rows"`
	Vertices   int     `json:"vertices"`
	ReadS      float64 `json:"read_s"`
	BuildS     float64 `json:"build_s"`
	TotalS     float64 `json:"total_s"`
	RSSBefore  int64   `json:"rss_before_bytes"`
	PeakRSS    int64   `json:"peak_rss_bytes"`
	HeapAllocd uint64  `json:"heap_allocated_bytes"`
}

func main() {
	scale := flag.Int("scale", 22, "the Kronecker scale of the records (edge factor 16)")
	backend := flag.String("backend", "cpu", "auto, cpu or gpu")
	batch := flag.Int("batch", 0, "records of at most this many rows (slices of the generator's chunks of 4 Mi rows; 0: the chunks)")
	flag.Parse()
	if err := run(flag.Arg(0), flag.Arg(1), *scale, *batch, *backend); err != nil {
		fmt.Fprintln(os.Stderr, "recordsbench:", err)
		os.Exit(1)
	}
}

func run(way, path string, scale, batch int, backend string) error {
	ctx := context.Background()
	opts := gpipe.LoadOptions{Undirected: true, Backend: backend}
	var rr array.RecordReader
	if way == "records" {
		// The records a program holds: the generator's table as records
		// over its own memory.
		t, err := gen.Kronecker{Scale: scale, EdgeFactor: 16, Seed: 1}.Generate(ctx)
		if err != nil {
			return err
		}
		defer t.Release()
		rr = t.RecordReader()
		defer rr.Release()
		if batch > 0 {
			if rr, err = sliced(rr, int64(batch)); err != nil {
				return err
			}
			defer rr.Release()
		}
	} else if way != "arrow" && way != "parquet" {
		return fmt.Errorf("the way is records, arrow FILE or parquet FILE, not %q", way)
	}
	runtime.GC()
	debug.FreeOSMemory()
	rep := report{Way: way, Backend: backend, RSSBefore: currentRSS()}
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	var g *gpipe.Graph
	var err error
	if rr != nil {
		g, err = gpipe.FromRecords(ctx, rr, opts)
	} else {
		g, err = gpipe.Load(ctx, path, opts)
	}
	if err != nil {
		return err
	}
	defer g.Release()
	rep.TotalS = time.Since(start).Seconds()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	s := g.Stats()
	rep.Rows, rep.Vertices = s.RowsRead, g.NumVertices()
	rep.ReadS, rep.BuildS = s.ReadTime.Seconds(), s.BuildTime.Seconds()
	rep.PeakRSS, rep.HeapAllocd = rusage.PeakRSS(), after.TotalAlloc-before.TotalAlloc
	return json.NewEncoder(os.Stdout).Encode(rep)
}

// currentRSS is the process's resident set now, from /proc/self/statm
// (0 where there is none).
func currentRSS() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	var size, resident int64
	if _, err := fmt.Sscan(string(b), &size, &resident); err != nil {
		return 0
	}
	return resident * int64(os.Getpagesize())
}

// sliced is rr's records cut into slices of at most batch rows (views, no
// copies), as a producer that hands over small batches makes them.
func sliced(rr array.RecordReader, batch int64) (array.RecordReader, error) {
	var recs []arrow.RecordBatch
	for rr.Next() {
		rec := rr.RecordBatch()
		for lo := int64(0); lo < rec.NumRows(); lo += batch {
			recs = append(recs, rec.NewSlice(lo, min(lo+batch, rec.NumRows())))
		}
	}
	out, err := array.NewRecordReader(rr.Schema(), recs)
	for _, r := range recs {
		r.Release()
	}
	return out, err
}
