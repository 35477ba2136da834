// Command flight-go is an Arrow Flight client of `gpipe serve`: it uploads
// the bundled karate club graph, asks for its PageRank, prints the top
// vertices, lists the server's graphs and drops the one it made.
//
//	gpipe serve &                      # 127.0.0.1:8815
//	go run ./examples/flight-go        # from the repository root
//
// With a token (gpipe serve --token-file FILE), set GPIPE_TOKEN; with TLS
// on a self-signed certificate, pass -tls-ca CERT.PEM.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/gpipe/gpipe/ingest"
	"github.com/gpipe/gpipe/ingest/edges"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8815", "the server's HOST:PORT")
	input := flag.String("input", "examples/data/karate.parquet", "edge table to upload (src, dst columns)")
	caFile := flag.String("tls-ca", "", "PEM certificate to trust: speak TLS to the server")
	top := flag.Int("top", 5, "vertices to print")
	flag.Parse()
	if err := run(*addr, *input, *caFile, *top); err != nil {
		fmt.Fprintln(os.Stderr, "flight-go:", err)
		os.Exit(1)
	}
}

// run takes the example's four steps against the server at addr.
func run(addr, input, caFile string, top int) error {
	creds, err := transport(caFile)
	if err != nil {
		return err
	}
	client, err := flight.NewClientWithMiddleware(addr, nil, nil, grpc.WithTransportCredentials(creds))
	if err != nil {
		return err
	}
	defer client.Close()
	ctx := context.Background()
	if token := os.Getenv("GPIPE_TOKEN"); token != "" {
		// The bearer token travels in every call's headers.
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
	}
	if err := upload(ctx, client, input); err != nil {
		return err
	}
	if err := pagerank(ctx, client, top); err != nil {
		return err
	}
	if err := exchangeCC(ctx, client, input); err != nil {
		return err
	}
	return listAndDrop(ctx, client)
}

// upload is step 1: the descriptor's path names the graph, its command
// holds the options as JSON. The put's result describes the built graph.
func upload(ctx context.Context, client flight.Client, input string) error {
	table, err := ingest.Open(ctx, input, nil, edges.Options{})
	if err != nil {
		return err
	}
	defer table.Release()
	desc := &flight.FlightDescriptor{
		Type: flight.DescriptorPATH, Path: []string{"karate"},
		Cmd: []byte(`{"undirected": true, "replace": true}`),
	}
	info, err := put(ctx, client, desc, table.RecordReader())
	if err != nil {
		return fmt.Errorf("put: %w", err)
	}
	fmt.Printf("uploaded karate: %v vertices, %v edges, %v bytes\n", info["vertices"], info["edges"], info["memory_bytes"])
	return nil
}

// pagerank is step 2, a query: the ticket is JSON naming the graph, the
// operator and its parameters.
func pagerank(ctx context.Context, client flight.Client, top int) error {
	rec, err := get(ctx, client, `{"graph": "karate", "op": "pagerank", "damping": 0.85}`)
	if err != nil {
		return fmt.Errorf("pagerank: %w", err)
	}
	printTop(rec, "rank", top)
	return nil
}

// exchangeCC is step 3, an exchange: edges in, results out in one call;
// the server keeps nothing. The descriptor's command holds the upload
// options and the query.
func exchangeCC(ctx context.Context, client flight.Client, input string) error {
	table, err := ingest.Open(ctx, input, nil, edges.Options{})
	if err != nil {
		return err
	}
	defer table.Release()
	comps, err := exchange(ctx, client, `{"op": "cc", "undirected": true}`, table.RecordReader())
	if err != nil {
		return fmt.Errorf("exchange: %w", err)
	}
	fmt.Printf("exchange cc: %d vertices, %d components\n", comps.NumRows(), countDistinct(comps, "component"))
	comps.Release()
	return nil
}

// listAndDrop is step 4: the catalog, then drop.
func listAndDrop(ctx context.Context, client flight.Client) error {
	flights, err := client.ListFlights(ctx, &flight.Criteria{})
	if err != nil {
		return err
	}
	for {
		fi, err := flights.Recv()
		if errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return err
		}
		fmt.Printf("server holds %s: %s\n", fi.FlightDescriptor.Path[0], fi.AppMetadata)
	}
	results, err := client.DoAction(ctx, &flight.Action{Type: "drop", Body: []byte("karate")})
	if err != nil {
		return err
	}
	r, err := results.Recv()
	if err != nil {
		return fmt.Errorf("drop: %w", err)
	}
	fmt.Printf("drop: %s\n", r.Body)
	return nil
}

// transport is plain text, or TLS trusting the certificate in caFile.
func transport(caFile string) (credentials.TransportCredentials, error) {
	if caFile == "" {
		return insecure.NewCredentials(), nil
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s holds no PEM certificate", caFile)
	}
	return credentials.NewTLS(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}), nil
}

// put uploads every record of rdr and returns the PutResult's JSON.
func put(ctx context.Context, client flight.Client, desc *flight.FlightDescriptor, rdr array.RecordReader) (map[string]any, error) {
	defer rdr.Release()
	stream, err := client.DoPut(ctx)
	if err != nil {
		return nil, err
	}
	w := flight.NewRecordWriter(stream, ipc.WithSchema(rdr.Schema()))
	w.SetFlightDescriptor(desc)
	for rdr.Next() {
		// A refused upload shows as an error here; the reason comes with Recv.
		if err := w.Write(rdr.RecordBatch()); err != nil {
			break
		}
	}
	w.Close()
	stream.CloseSend()
	res, err := stream.Recv()
	if err != nil {
		return nil, err
	}
	var info map[string]any
	return info, json.Unmarshal(res.AppMetadata, &info)
}

// exchange sends rdr's edges with the options and query in cmd, and returns
// the result batches as one table.
func exchange(ctx context.Context, client flight.Client, cmd string, rdr array.RecordReader) (arrow.Table, error) {
	defer rdr.Release()
	stream, err := client.DoExchange(ctx)
	if err != nil {
		return nil, err
	}
	w := flight.NewRecordWriter(stream, ipc.WithSchema(rdr.Schema()))
	w.SetFlightDescriptor(&flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: []byte(cmd)})
	for rdr.Next() {
		if err := w.Write(rdr.RecordBatch()); err != nil {
			break // the reason comes with the reads below
		}
	}
	w.Close()
	stream.CloseSend()
	return readTable(stream)
}

// get runs a query and returns its result batches as one table.
func get(ctx context.Context, client flight.Client, ticket string) (arrow.Table, error) {
	stream, err := client.DoGet(ctx, &flight.Ticket{Ticket: []byte(ticket)})
	if err != nil {
		return nil, err
	}
	return readTable(stream)
}

// readTable reads a result stream's batches into one table.
func readTable(stream flight.DataStreamReader) (arrow.Table, error) {
	rdr, err := flight.NewRecordReader(stream)
	if err != nil {
		return nil, err
	}
	defer rdr.Release()
	var batches []arrow.RecordBatch
	for rdr.Next() {
		rec := rdr.RecordBatch()
		rec.Retain()
		batches = append(batches, rec)
	}
	if err := rdr.Err(); err != nil {
		return nil, err
	}
	// The schema's "gpipe" metadata says what ran.
	if meta, ok := rdr.Schema().Metadata().GetValue("gpipe"); ok {
		fmt.Printf("ran: %s\n", meta)
	}
	t := array.NewTableFromRecords(rdr.Schema(), batches)
	for _, b := range batches {
		b.Release()
	}
	return t, nil
}

// printTop prints the top rows of a result by one float64 column.
func printTop(t arrow.Table, column string, top int) {
	defer t.Release()
	type row struct {
		vertex string
		value  float64
	}
	var rows []row
	idx := t.Schema().FieldIndices(column)[0]
	vertices, values := t.Column(0).Data().Chunks(), t.Column(idx).Data().Chunks()
	for c := range vertices {
		vals := values[c].(*array.Float64)
		for i := 0; i < vals.Len(); i++ {
			rows = append(rows, row{vertices[c].ValueStr(i), vals.Value(i)})
		}
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].value > rows[j].value })
	fmt.Printf("vertex\t%s\n", column)
	for _, r := range rows[:min(top, len(rows))] {
		fmt.Printf("%s\t%.6f\n", r.vertex, r.value)
	}
}

// countDistinct counts the distinct values of a column.
func countDistinct(t arrow.Table, column string) int {
	seen := map[string]bool{}
	for _, c := range t.Column(t.Schema().FieldIndices(column)[0]).Data().Chunks() {
		for i := 0; i < c.Len(); i++ {
			seen[c.ValueStr(i)] = true
		}
	}
	return len(seen)
}
