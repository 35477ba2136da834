// Command flightbench times a gpipe Flight server from a Go Flight client:
// an upload of an Arrow IPC file in batches of a given size (DoPut), queries
// (DoGet, the median of several), and many clients querying at once. It is
// the Go counterpart of scripts/bench-flight.py, for machines without
// pyarrow; BENCHMARKS.md (issue 17) has the commands.
//
//	flightbench -addr 127.0.0.1:8815 put -file k22.arrow -graph k22 -batch-rows 1048576
//	flightbench get -ticket '{"graph":"k22","op":"bfs","source":"0"}' -n 5
//	flightbench concurrent -ticket '{"graph":"k22","op":"bfs","source":"0"}' -clients 16 -queries 20
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"hash/maphash"
	"io"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// window is the client's HTTP/2 receive window; 0 leaves gRPC's default
// (64 KiB, grown by BDP estimation).
var window = flag.Int("window", 0, "the client's HTTP/2 receive window in bytes (0: gRPC's default, grown by BDP estimation)")

func main() {
	addr := flag.String("addr", "127.0.0.1:8815", "the server's `HOST:PORT`")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: flightbench [-addr HOST:PORT] put|get|concurrent [flags], or flightbench source FILE")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	var err error
	switch cmd, args := flag.Arg(0), flag.Args()[1:]; cmd {
	case "put":
		err = putCmd(*addr, args)
	case "get":
		err = getCmd(*addr, args)
	case "concurrent":
		err = concurrentCmd(*addr, args)
	case "source":
		err = sourceCmd(args)
	default:
		err = fmt.Errorf("unknown command %q", cmd)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "flightbench:", err)
		os.Exit(1)
	}
}

// dial connects a client that takes messages of any size, as pyarrow's does.
func dial(addr string) (flight.Client, error) {
	opts := []grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(1<<31 - 1)),
	}
	if *window > 0 {
		opts = append(opts, grpc.WithInitialWindowSize(int32(*window)), grpc.WithInitialConnWindowSize(int32(*window)))
	}
	return flight.NewClientWithMiddleware(addr, nil, nil, opts...)
}

// putCmd uploads an Arrow IPC file in batches of -batch-rows rows, read
// into memory before the clock starts, -n times (each a new graph name).
func putCmd(addr string, args []string) error {
	fs := flag.NewFlagSet("put", flag.ExitOnError)
	file := fs.String("file", "", "Arrow IPC `FILE` of edges")
	graph := fs.String("graph", "g", "graph name")
	batchRows := fs.Int64("batch-rows", 1<<20, "rows per record batch sent")
	n := fs.Int("n", 1, "uploads (the graph is dropped after each but the last)")
	opts := fs.String("options", "{}", "upload options as JSON")
	fs.Parse(args)
	recs, err := readBatches(*file, *batchRows)
	if err != nil {
		return err
	}
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	c, err := dial(addr)
	if err != nil {
		return err
	}
	defer c.Close()
	ctx := context.Background()
	var times []time.Duration
	for i := 0; i < *n; i++ {
		start := time.Now()
		meta, err := put(ctx, c, *graph, *opts, recs)
		if err != nil {
			return err
		}
		d := time.Since(start)
		times = append(times, d)
		fmt.Printf("put %s: %.3f s  %s\n", *graph, d.Seconds(), meta)
		if i < *n-1 {
			if err := drop(ctx, c, *graph); err != nil {
				return err
			}
		}
	}
	fmt.Printf("put median of %d: %.3f s\n", *n, median(times).Seconds())
	return nil
}

// readBatches reads file's records cut into batches of at most rows rows.
func readBatches(file string, rows int64) ([]arrow.RecordBatch, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, err := ipc.NewFileReader(f)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var tbl []arrow.RecordBatch
	for i := 0; i < r.NumRecords(); i++ {
		rec, err := r.RecordBatch(i)
		if err != nil {
			return nil, err
		}
		rec.Retain()
		tbl = append(tbl, rec)
	}
	t := array.NewTableFromRecords(r.Schema(), tbl)
	defer t.Release()
	for _, rec := range tbl {
		rec.Release()
	}
	tr := array.NewTableReader(t, rows)
	defer tr.Release()
	var out []arrow.RecordBatch
	for tr.Next() {
		rec := tr.RecordBatch()
		rec.Retain()
		out = append(out, rec)
	}
	return out, nil
}

func put(ctx context.Context, c flight.Client, graph, opts string, recs []arrow.RecordBatch) (string, error) {
	stream, err := c.DoPut(ctx)
	if err != nil {
		return "", err
	}
	w := flight.NewRecordWriter(stream, ipc.WithSchema(recs[0].Schema()))
	w.SetFlightDescriptor(&flight.FlightDescriptor{Type: flight.DescriptorPATH, Path: []string{graph}, Cmd: []byte(opts)})
	for _, rec := range recs {
		if err := w.Write(rec); err != nil {
			break // the reason comes with Recv
		}
	}
	w.Close()
	stream.CloseSend()
	res, err := stream.Recv()
	if err != nil {
		return "", err
	}
	return string(res.AppMetadata), nil
}

func drop(ctx context.Context, c flight.Client, graph string) error {
	rs, err := c.DoAction(ctx, &flight.Action{Type: "drop", Body: []byte(graph)})
	if err != nil {
		return err
	}
	for {
		if _, err := rs.Recv(); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// getCmd runs a query -n times and prints each time and the median.
func getCmd(addr string, args []string) error {
	fs := flag.NewFlagSet("get", flag.ExitOnError)
	ticket := fs.String("ticket", "", "the query as JSON")
	n := fs.Int("n", 5, "queries")
	check := fs.Bool("check", false, "check the BFS parents of the first result (its time then counts the check)")
	fs.Parse(args)
	c, err := dial(addr)
	if err != nil {
		return err
	}
	defer c.Close()
	var times []time.Duration
	for i := 0; i < *n; i++ {
		start := time.Now()
		r, err := get(context.Background(), c, *ticket, *check && i == 0)
		if err != nil {
			return err
		}
		d := time.Since(start)
		times = append(times, d)
		fmt.Printf("get: %.1f ms  %d rows in %d batches, %.1f MB  compute %.1f ms  backend %s\n",
			d.Seconds()*1e3, r.rows, r.batches, float64(r.bytes)/1e6, r.meta.Compute*1e3, r.meta.Backend)
	}
	fmt.Printf("get median of %d: %.1f ms\n", *n, median(times).Seconds()*1e3)
	return nil
}

// result is what a query brought back: its size, a hash of its values (to
// compare results) and its metadata.
type result struct {
	rows, bytes int64
	batches     int
	hash        uint64
	meta        struct {
		Backend string  `json:"backend"`
		Compute float64 `json:"compute_s"`
	}
}

// get runs ticket and reads its whole result, hashing the values of every
// column but "parent" (BFS and SSSP parents may differ between runs where
// paths tie) and, with check, checking that each BFS parent is one level
// up.
func get(ctx context.Context, c flight.Client, ticket string, check bool) (*result, error) {
	stream, err := c.DoGet(ctx, &flight.Ticket{Ticket: []byte(ticket)})
	if err != nil {
		return nil, err
	}
	rr, err := flight.NewRecordReader(stream, ipc.WithAllocator(memory.DefaultAllocator))
	if err != nil {
		return nil, err
	}
	defer rr.Release()
	var r result
	if md := rr.Schema().Metadata(); md.FindKey("gpipe") >= 0 {
		_ = json.Unmarshal([]byte(md.Values()[md.FindKey("gpipe")]), &r.meta)
	}
	var h maphash.Hash
	h.SetSeed(seed)
	var recs []arrow.RecordBatch
	defer func() {
		for _, rec := range recs {
			rec.Release()
		}
	}()
	for rr.Next() {
		rec := rr.RecordBatch()
		rec.Retain()
		recs = append(recs, rec)
		r.rows += rec.NumRows()
		r.batches++
		for i, col := range rec.Columns() {
			for _, buf := range col.Data().Buffers() {
				if buf != nil {
					r.bytes += int64(buf.Len())
					if rec.ColumnName(i) != "parent" {
						h.Write(buf.Bytes())
					}
				}
			}
		}
	}
	if err := rr.Err(); err != nil {
		return nil, err
	}
	r.hash = h.Sum64()
	if !check {
		return &r, nil
	}
	return &r, checkParents(recs)
}

// seed is the hash seed of the process's results, so that equal results
// hash alike.
var seed = maphash.MakeSeed()

// checkParents checks, for a BFS result with int64 keys (vertex, depth,
// parent), that each reached vertex's parent is a vertex one level up
// (the source its own parent at depth 0).
func checkParents(recs []arrow.RecordBatch) error {
	if len(recs) == 0 || recs[0].NumCols() != 3 || recs[0].ColumnName(1) != "depth" {
		return nil
	}
	var keys []int64
	var depth []int32
	for _, rec := range recs {
		v, ok := rec.Column(0).(*array.Int64)
		if !ok {
			return nil
		}
		keys = append(keys, v.Int64Values()...)
		d := rec.Column(1).(*array.Int32)
		for i := 0; i < d.Len(); i++ {
			if d.IsNull(i) {
				depth = append(depth, -1)
			} else {
				depth = append(depth, d.Value(i))
			}
		}
	}
	row := 0
	for _, rec := range recs {
		p := rec.Column(2).(*array.Int64)
		for i := 0; i < p.Len(); i++ {
			d := depth[row]
			row++
			if d < 0 {
				continue
			}
			j, ok := slices.BinarySearch(keys, p.Value(i))
			if !ok || p.IsNull(i) || depth[j] != max(d-1, 0) {
				return fmt.Errorf("vertex %d at depth %d has parent %d, not a vertex one level up", keys[row-1], d, p.Value(i))
			}
		}
	}
	return nil
}

// sourceCmd prints the first edge's source key of an Arrow IPC file: the
// BFS source of the benchmarks.
func sourceCmd(args []string) error {
	if len(args) != 1 {
		return errors.New("usage: flightbench source FILE")
	}
	f, err := os.Open(args[0])
	if err != nil {
		return err
	}
	defer f.Close()
	r, err := ipc.NewFileReader(f)
	if err != nil {
		return err
	}
	defer r.Close()
	rec, err := r.RecordBatch(0)
	if err != nil {
		return err
	}
	fmt.Println(rec.Column(0).ValueStr(0))
	return nil
}

// concurrentCmd runs -queries queries from each of -clients clients at
// once (each its own connection), after one client alone ran them, and
// compares the throughputs and the results.
func concurrentCmd(addr string, args []string) error {
	fs := flag.NewFlagSet("concurrent", flag.ExitOnError)
	ticket := fs.String("ticket", "", "the query as JSON")
	clients := fs.Int("clients", 16, "clients at once")
	queries := fs.Int("queries", 20, "queries per client")
	fs.Parse(args)
	c, err := dial(addr)
	if err != nil {
		return err
	}
	_, err = get(context.Background(), c, *ticket, true)
	c.Close()
	if err != nil {
		return err
	}
	one, hashes1, err := runClients(addr, *ticket, 1, *queries)
	if err != nil {
		return err
	}
	many, hashes, err := runClients(addr, *ticket, *clients, *queries)
	if err != nil {
		return err
	}
	same := true
	for _, h := range append(hashes, hashes1...) {
		same = same && h == hashes1[0]
	}
	q1 := float64(*queries) / one.Seconds()
	qn := float64(*clients**queries) / many.Seconds()
	fmt.Printf("1 client: %d queries in %.2f s, %.1f queries/s\n", *queries, one.Seconds(), q1)
	fmt.Printf("%d clients: %d queries in %.2f s, %.1f queries/s (%.1f× one client's); results identical: %v\n",
		*clients, *clients**queries, many.Seconds(), qn, qn/q1, same)
	if !same {
		return errors.New("results differ")
	}
	return nil
}

func runClients(addr, ticket string, clients, queries int) (time.Duration, []uint64, error) {
	conns := make([]flight.Client, clients)
	for i := range conns {
		c, err := dial(addr)
		if err != nil {
			return 0, nil, err
		}
		defer c.Close()
		conns[i] = c
	}
	var (
		mu     sync.Mutex
		hashes []uint64
		first  error
		wg     sync.WaitGroup
	)
	start := time.Now()
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for q := 0; q < queries; q++ {
				r, err := get(context.Background(), c, ticket, false)
				mu.Lock()
				if err != nil && first == nil {
					first = err
				}
				if err == nil {
					hashes = append(hashes, r.hash)
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	return time.Since(start), hashes, first
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
