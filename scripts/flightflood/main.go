// Command flightflood loads a gpipe Flight server with uploads that do not
// stop on their own, and reports the server's peak resident memory: the
// measurement behind the memory limits' margin in docs/serve.md.
//
//	gpipe serve --max-memory-bytes 1GiB &
//	go run ./scripts/flightflood -pid $! -uploads 32 -batches 0
//
// Each upload sends batches of -rows int64 edges (16 bytes an edge) until
// it has sent -batches of them (0: until the server refuses it), then
// closes; DoPut or, with -exchange, DoExchange (cc). It prints how the
// calls ended and the peak VmRSS of -pid while they ran (Linux).
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8815", "the server")
	uploads := flag.Int("uploads", 32, "uploads at once, each on a connection of its own")
	rows := flag.Int("rows", 1<<20, "edges a batch (16 bytes each)")
	batches := flag.Int("batches", 0, "batches an upload sends (0: until refused)")
	exchange := flag.Bool("exchange", false, "DoExchange (cc) rather than DoPut")
	pid := flag.Int("pid", 0, "the server's process, whose peak VmRSS to report")
	flag.Parse()

	rec := batch(*rows)
	defer rec.Release()
	stop := make(chan struct{})
	peak := make(chan int64, 1)
	go func() { peak <- sampleRSS(*pid, stop) }()
	start := time.Now()
	outcomes := map[string]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range *uploads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out := upload(*addr, i, rec, *batches, *exchange)
			mu.Lock()
			outcomes[out]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	close(stop)
	fmt.Printf("%d uploads in %.1fs, server peak VmRSS %.0f MiB\n", *uploads, time.Since(start).Seconds(), float64(<-peak)/(1<<20))
	var keys []string
	for k := range outcomes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Printf("%4d  %s\n", outcomes[k], k)
	}
}

// batch is a record batch of n int64 edges.
func batch(n int) arrow.RecordBatch {
	mem := memory.DefaultAllocator
	src, dst := array.NewInt64Builder(mem), array.NewInt64Builder(mem)
	for i := range int64(n) {
		src.Append(i)
		dst.Append((i*7919 + 1) % int64(n))
	}
	a, b := src.NewArray(), dst.NewArray()
	schema := arrow.NewSchema([]arrow.Field{{Name: "src", Type: arrow.PrimitiveTypes.Int64}, {Name: "dst", Type: arrow.PrimitiveTypes.Int64}}, nil)
	return array.NewRecordBatch(schema, []arrow.Array{a, b}, int64(n))
}

// upload sends rec n times (0: until refused) and says how the call ended.
func upload(addr string, i int, rec arrow.RecordBatch, n int, exchange bool) string {
	c, err := flight.NewClientWithMiddleware(addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(1<<30)))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	var stream interface {
		flight.DataStreamWriter
		CloseSend() error
	}
	var answer func() error
	desc := &flight.FlightDescriptor{Type: flight.DescriptorPATH, Path: []string{fmt.Sprint("flood", i)}}
	if exchange {
		ex, err := c.DoExchange(ctx)
		if err != nil {
			return err.Error()
		}
		stream, answer = ex, func() error { _, err := ex.Recv(); return err }
		desc = &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: []byte(`{"op": "cc"}`)}
	} else {
		put, err := c.DoPut(ctx)
		if err != nil {
			return err.Error()
		}
		stream, answer = put, func() error { _, err := put.Recv(); return err }
	}
	w := flight.NewRecordWriter(stream, ipc.WithSchema(rec.Schema()))
	w.SetFlightDescriptor(desc)
	for k := 0; n == 0 || k < n; k++ {
		if w.Write(rec) != nil {
			break
		}
	}
	w.Close()
	stream.CloseSend()
	for {
		if err := answer(); err != nil {
			if strings.Contains(err.Error(), "EOF") {
				return "OK"
			}
			st := status.Convert(err)
			msg := st.Message()
			if i := strings.IndexAny(msg, ":;("); i > 0 && len(msg) > 80 {
				msg = msg[:80]
			}
			return st.Code().String() + ": " + msg
		}
	}
}

// sampleRSS reads pid's VmRSS every 20 ms until stop, and returns the
// largest, in bytes.
func sampleRSS(pid int, stop chan struct{}) int64 {
	if pid == 0 {
		<-stop
		return 0
	}
	var peak int64
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err == nil {
			for _, line := range strings.Split(string(b), "\n") {
				if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
					kb, _ := strconv.ParseInt(f[1], 10, 64)
					peak = max(peak, kb<<10)
				}
			}
		}
		select {
		case <-stop:
			return peak
		case <-tick.C:
		}
	}
}
