package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/internal/par"
	"github.com/gpipe/gpipe/internal/pipeline"
)

// Sending a result. The operator has run to its end (so that every error
// is a status); its rows then go out in batches while later batches are
// still being made: a few encoders build the batches ahead of the sender
// (pipeline.Result.Rows: ids mapped to keys, validity bitmaps) and write each
// straight into the FlightData message gRPC sends (batchEncoder), and the
// call's goroutine hands them to gRPC in order. A batch's values are thus
// copied once in the server's own code, where arrow's Flight writer and
// gRPC's protobuf codec copied each twice more.

// sendEncoders is the most goroutines that build one result's batches.
const sendEncoders = 4

// sendAhead is how many batches per encoder may be built before the sender
// takes them: enough to keep the encoders busy while gRPC writes, few
// enough that a result never holds more than a few batches' memory.
const sendAhead = 2

// maxBatchBytes bounds a result batch's message: gRPC clients refuse
// messages over 4 MiB unless told otherwise (Go's default), so batches of
// long string keys are cut to fewer rows.
const maxBatchBytes = 4<<20 - 64<<10

// messageSender sends messages on a call's stream (grpc.ServerStream's
// SendMsg), here the wire form of FlightData.
type messageSender interface {
	SendMsg(m any) error
}

// sendResult streams res as record batches of at most batchRows rows (the
// server's limit when 0 or larger), the result's metadata in the schema. It
// gives up on a client that takes no batch for the result idle timeout.
func (s *service) sendResult(ctx context.Context, w messageSender, res *pipeline.Result, batchRows int, meta resultMeta) error {
	if batchRows <= 0 || batchRows > s.cfg.BatchRows {
		batchRows = s.cfg.BatchRows
	}
	batchRows = rowsWithin(res, batchRows, maxBatchBytes)
	// The batches' schema is the result's without the metadata, which
	// only the first message carries: so the first batches are built
	// while the metadata (its count of unreached vertices) is made and sent.
	n := res.Graph.NumVertices()
	batches := (n + batchRows - 1) / batchRows
	b := newBatchQueue(ctx, res, batches, batchRows, res.Schema())
	defer b.stop()

	meta.Op, meta.Backend, meta.Strategy = res.Op, res.Backend, res.Strategy
	meta.Iterations, meta.Warnings, meta.Unreached = res.Iterations, res.Warnings, res.Unreached()
	meta.Compute, meta.Transfer = res.Compute.Seconds(), res.Transfer.Seconds()
	js, err := json.Marshal(meta)
	if err != nil {
		return err
	}
	md := arrow.NewMetadata([]string{MetadataKey}, []string{string(js)})
	schema := arrow.NewSchema(res.Schema().Fields(), &md)

	logOf(ctx).compute = res.Compute + res.Transfer
	out := &idleSend{sender: w, d: s.cfg.ResultIdleTimeout}
	head, err := schemaMessage(schema)
	if err != nil {
		return err
	}
	if err := out.SendMsg(head); err != nil {
		return err
	}
	call := logOf(ctx)
	for i := 0; i < batches; i++ {
		msg, err := b.next(i)
		if err != nil {
			return err
		}
		if err := out.SendMsg(msg); err != nil {
			return err
		}
		call.rows += int64(min((i+1)*batchRows, n) - i*batchRows)
	}
	return ctx.Err()
}

// rowsWithin is the most rows, up to rows, whose batch of res takes at most
// limit bytes: fixed-width columns count their width, string keys their
// average length.
func rowsWithin(res *pipeline.Result, rows, limit int) int {
	var perRow float64
	for _, f := range res.Schema().Fields() {
		switch dt := f.Type.(type) {
		case arrow.FixedWidthDataType:
			perRow += float64(dt.BitWidth())/8 + 1.0/8
		default: // string keys: offsets and the average key
			k := res.Graph.Keys
			avg := 0.0
			if n := k.Len(); n > 0 && k.Str != nil {
				avg = float64(len(k.Str.Data)) / float64(n)
			}
			perRow += 8 + avg + 1.0/8
		}
	}
	if perRow <= 0 {
		return rows
	}
	return max(1, min(rows, int(float64(limit)/perRow)))
}

// batchQueue builds a result's batches on encoder goroutines, at most
// sendAhead per encoder ahead of the sender, and hands them out in order.
type batchQueue struct {
	done    []chan encoded
	tokens  chan struct{} // one per batch being built or waiting to be sent
	quit    chan struct{}
	workers sync.WaitGroup
	taken   atomic.Int64
}

// encoded is a batch's message, or why it could not be made.
type encoded struct {
	msg encodedMessage
	err error
}

func newBatchQueue(ctx context.Context, res *pipeline.Result, batches, batchRows int, schema *arrow.Schema) *batchQueue {
	q := &batchQueue{done: make([]chan encoded, batches), quit: make(chan struct{})}
	for i := range q.done {
		q.done[i] = make(chan encoded, 1)
	}
	workers := min(sendEncoders, par.Workers(), batches)
	q.tokens = make(chan struct{}, workers*sendAhead)
	n := res.Graph.NumVertices()
	for w := 0; w < workers; w++ {
		q.workers.Add(1)
		go func() {
			defer q.workers.Done()
			enc := newBatchEncoder(schema)
			alloc, done := rowsAllocator(res)
			defer done()
			for {
				select {
				case q.tokens <- struct{}{}:
				case <-q.quit:
					return
				}
				select {
				case <-q.quit:
					return
				default:
				}
				i := int(q.taken.Add(1) - 1)
				if i >= batches {
					return
				}
				if err := ctx.Err(); err != nil {
					q.done[i] <- encoded{err: err}
					continue
				}
				rec := res.Rows(alloc, i*batchRows, min((i+1)*batchRows, n))
				msg, err := enc.encode(rec)
				rec.Release()
				q.done[i] <- encoded{msg, err}
			}
		}()
	}
	return q
}

// rowsAllocator is the memory an encoder's batches of res are made in, and
// the call that gives it back when the encoder ends: a recycler (kept for
// later results' encoders) where every buffer Result.Rows asks for is one
// it writes whole (integer keys, the operators' columns and their validity
// bitmaps), else Go memory (string keys go through arrow's builders, which
// expect zeroed memory).
func rowsAllocator(res *pipeline.Result) (memory.Allocator, func()) {
	if res.Graph.Keys.Type == edges.KeyString {
		return memory.DefaultAllocator, func() {}
	}
	r := recyclers.Get().(*recycler)
	return r, func() { recyclers.Put(r) }
}

// recyclers holds the recyclers of encoders that ended.
var recyclers = sync.Pool{New: func() any { return &recycler{} }}

// next waits for batch i (each asked for once, in order) and frees its
// place for a batch further on.
func (q *batchQueue) next(i int) (encodedMessage, error) {
	e := <-q.done[i]
	<-q.tokens
	return e.msg, e.err
}

// stop ends the encoders and waits for them, so that none reads the result
// once the call has returned.
func (q *batchQueue) stop() {
	close(q.quit)
	q.workers.Wait()
}

// batchEncoder writes records as FlightData messages in their wire form:
// arrow's IPC writer makes each message's metadata and body buffers (a
// payload), and the body is copied once, into the message.
type batchEncoder struct {
	w        *ipc.Writer
	started  bool // the writer has sent its schema payload
	keepNext bool // keep the schema payload (schemaMessage)
	msg      encodedMessage
}

func newBatchEncoder(schema *arrow.Schema) *batchEncoder {
	e := &batchEncoder{}
	e.w = ipc.NewWriterWithPayloadWriter(e, ipc.WithSchema(schema), ipc.WithAllocator(memory.DefaultAllocator))
	return e
}

// schemaMessage is the stream's first message: the schema.
func schemaMessage(schema *arrow.Schema) (encodedMessage, error) {
	e := newBatchEncoder(schema)
	e.keepNext = true
	err := e.w.Close()
	return e.msg, err
}

// encode is rec's message.
func (e *batchEncoder) encode(rec arrow.RecordBatch) (encodedMessage, error) {
	e.msg = encodedMessage{}
	if err := e.w.Write(rec); err != nil {
		return encodedMessage{}, err
	}
	if e.msg.buf == nil {
		return encodedMessage{}, fmt.Errorf("internal error: arrow's IPC writer made no message of a record batch")
	}
	return e.msg, nil
}

func (e *batchEncoder) Start() error { return nil }
func (e *batchEncoder) Close() error { return nil }

// WritePayload makes the message of a payload of e's writer; the schema
// payload each writer starts with is dropped but where schemaMessage asks
// for it.
func (e *batchEncoder) WritePayload(p ipc.Payload) error {
	if !e.started {
		e.started = true
		if !e.keepNext {
			return nil
		}
	}
	meta := p.Meta()
	defer meta.Release()
	var size byteCount
	if err := p.SerializeBody(&size); err != nil {
		return err
	}
	n := flightDataSize(meta.Bytes(), int(size))
	buf := serverBuffers.Get(n)
	body := appendWriter{appendFlightData((*buf)[:0], meta.Bytes(), int(size))}
	if err := p.SerializeBody(&body); err != nil {
		return err
	}
	if len(body.b) != n || unsafe.SliceData(body.b) != unsafe.SliceData(*buf) {
		// Every byte of a pooled buffer must be written (it is not
		// cleared), in place.
		return fmt.Errorf("internal error: a record batch message of %d bytes took %d", n, len(body.b))
	}
	e.msg = encodedMessage{buf}
	return nil
}

// byteCount counts what is written to it.
type byteCount int

func (c *byteCount) Write(p []byte) (int, error) {
	*c += byteCount(len(p))
	return len(p), nil
}

// appendWriter appends what is written to it to b, which has room for it.
type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}
