package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"google.golang.org/grpc/mem"

	"github.com/gpipe/gpipe"
	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/internal/par"
)

// Sending a result. The operator has run to its end (so that every error
// is a status); its rows then go out in batches while later batches are
// still being made: a few encoders build the batches ahead of the sender
// (gpipe.Result.Rows: ids mapped to keys, validity bitmaps) and write each
// straight into the FlightData message gRPC sends (batchEncoder), and the
// call's goroutine hands them to gRPC in order. The columns that are the
// result's own memory (the operator's values, and a GPU run's keys and
// bitmaps) are not copied at all: the messages reference them, and the
// result is released once gRPC has written the last of them (sendRefs).
// The rest (the graph's keys, the bitmaps and keys made here) is copied
// once, where arrow's Flight writer and gRPC's protobuf codec copied each
// twice more.

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
// server's limit when 0 or larger), the result's metadata in the schema,
// and releases res once gRPC holds none of its memory: the caller hands
// it over. It gives up on a client that takes no batch for the result
// idle timeout.
func (s *service) sendResult(ctx context.Context, w messageSender, res *gpipe.Result, batchRows int, meta resultMeta) error {
	// Deferred first, so that it runs once the encoders have stopped.
	owner := newSendRefs(res.Release)
	defer owner.ended()
	if batchRows <= 0 || batchRows > s.cfg.BatchRows {
		batchRows = s.cfg.BatchRows
	}
	batchRows = rowsWithin(res, batchRows, maxBatchBytes)
	// The batches' schema is the result's without the metadata, which
	// only the first message carries: so the first batches are built
	// while the metadata (its count of unreached vertices) is made and sent.
	n := res.Graph.NumVertices()
	batches := (n + batchRows - 1) / batchRows
	b := newBatchQueue(ctx, res, batches, batchRows, res.Schema(), owner)
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
func rowsWithin(res *gpipe.Result, rows, limit int) int {
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

// newBatchQueue starts the encoders of res's batches; their messages
// reference res's own memory for owner (nil: they copy it).
func newBatchQueue(ctx context.Context, res *gpipe.Result, batches, batchRows int, schema *arrow.Schema, owner *sendRefs) *batchQueue {
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
			if owner != nil {
				enc.owns, enc.owner = res.Holds, owner
			}
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
func rowsAllocator(res *gpipe.Result) (memory.Allocator, func()) {
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
// payload), and the body's buffers are copied once, into the message, but
// for those in memory that owns says is the result's own (of at least
// refMinBytes), which the message references for owner.
type batchEncoder struct {
	w        *ipc.Writer
	started  bool // the writer has sent its schema payload
	keepNext bool // keep the schema payload (schemaMessage)
	msg      encodedMessage
	owns     func([]byte) bool
	owner    *sendRefs
}

// refMinBytes is the smallest body buffer a message references rather than
// copies: below it, a copy costs less than gRPC's handling of one more
// buffer (and gRPC's own pool leaves buffers under 1 KiB unpooled, never
// dropping their references: mem.NewBuffer).
const refMinBytes = 64 << 10

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
func (e *batchEncoder) encode(rec arrow.Record) (encodedMessage, error) {
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
	body := bodyPieces{owns: e.owns}
	if err := p.SerializeBody(&body); err != nil {
		return err
	}
	n := flightDataSize(meta.Bytes(), body.size) - body.referenced
	buf := serverBuffers.Get(n)
	out := appendFlightData((*buf)[:0], meta.Bytes(), body.size)
	var pieces []messagePiece
	cut := 0 // bytes of out before the last reference
	for _, w := range body.writes {
		if !w.ref {
			out = append(out, w.b...)
			continue
		}
		pieces = append(pieces, messagePiece{n: len(out) - cut, ref: w.b})
		cut = len(out)
	}
	if len(out) != n || unsafe.SliceData(out) != unsafe.SliceData(*buf) {
		// Every byte of a pooled buffer must be written (it is not
		// cleared), in place.
		return fmt.Errorf("internal error: a record batch message of %d bytes took %d", n, len(out))
	}
	if pieces != nil {
		pieces = append(pieces, messagePiece{n: len(out) - cut})
	}
	e.msg = encodedMessage{buf: buf, pieces: pieces, owner: e.owner}
	return nil
}

// bodyPieces records what a payload's body is written as: each buffer (or
// padding) in order, and whether the message is to reference it (the
// result's own memory, by owns, and large) rather than copy it. It keeps
// the slices it is given, which arrow's writer takes from the record's
// buffers (and padding from a static array): they stay valid while the
// payload is encoded.
type bodyPieces struct {
	owns       func([]byte) bool
	writes     []bodyWrite
	size       int
	referenced int
}

type bodyWrite struct {
	b   []byte
	ref bool
}

func (p *bodyPieces) Write(b []byte) (int, error) {
	ref := p.owns != nil && len(b) >= refMinBytes && p.owns(b)
	p.writes = append(p.writes, bodyWrite{b, ref})
	p.size += len(b)
	if ref {
		p.referenced += len(b)
	}
	return len(b), nil
}

// sendRefs holds a result until gRPC has dropped every reference to its
// memory that the send's messages handed it, and the send has ended, then
// releases it (release: the result's memory goes to later runs). A
// reference gRPC never drops (its connection failed while it held
// messages) keeps the result: its Go memory is then collected as usual,
// its pinned memory stays lent (operators.PinnedResults' bound).
type sendRefs struct {
	n       atomic.Int64 // references held, and one until the send ends
	release func()
}

func newSendRefs(release func()) *sendRefs {
	r := &sendRefs{release: release}
	r.n.Store(1)
	return r
}

// reference is b as a buffer gRPC takes, counted until gRPC frees it.
func (r *sendRefs) reference(b []byte) mem.Buffer {
	r.n.Add(1)
	b = b[:len(b):len(b)]
	return mem.NewBuffer(&b, r)
}

// ended says the send has ended: no more references will be made.
func (r *sendRefs) ended() { r.drop() }

// Get is never called: a reference's buffer is the result's, not taken
// from a pool (mem.BufferPool).
func (r *sendRefs) Get(int) *[]byte { panic("sendRefs lends no buffers") }

// Put is gRPC freeing a reference.
func (r *sendRefs) Put(*[]byte) { r.drop() }

func (r *sendRefs) drop() {
	if r.n.Add(-1) == 0 {
		r.release()
	}
}
