package arrowipc

import (
	"bytes"
	"testing"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/gpipe/gpipe/ingest/arrowipc/internal/flatbuf"
	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/ingest/internal/edgetest"
)

// message is an IPC message as Arrow Flight carries it: its flatbuffer
// metadata (data_header) and its body (data_body).
type message struct {
	meta, body []byte
	header     uint8 // schema, dictionary or record batch
}

// messages captures the payloads of an IPC writer as messages.
type messages []message

func (m *messages) Start() error { return nil }
func (m *messages) Close() error { return nil }
func (m *messages) WritePayload(p ipc.Payload) error {
	meta := p.Meta()
	defer meta.Release()
	var body bytes.Buffer
	if err := p.SerializeBody(&body); err != nil {
		return err
	}
	ht, _ := flatbuf.Root(meta.Bytes()).Uint8(messageHeaderType, 0)
	// Copies: the writer reuses its buffers; the body at an 8-byte boundary.
	b := make([]byte, body.Len())
	copy(b, body.Bytes())
	*m = append(*m, message{meta: bytes.Clone(meta.Bytes()), body: b, header: ht})
	return nil
}

// writeMessages is the stream of messages of the case's batches.
func writeMessages(t *testing.T, schema *arrow.Schema, recs []arrow.RecordBatch, opts ...ipc.Option) messages {
	t.Helper()
	var ms messages
	w := ipc.NewWriterWithPayloadWriter(&ms, append(opts, ipc.WithSchema(schema))...)
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return ms
}

// TestAppendMessage reads record batches as IPC messages, the way DoPut
// receives them: plain batches of integer and string keys are taken from
// the message (views of the body where aligned: int64 keys and float64
// weights are not copied), with nulls skipped and columns of every kind
// stepped over; batches that need arrow's reader (compressed, dictionary
// or string-view keys) are declined without adding anything.
func TestAppendMessage(t *testing.T) {
	opts := edges.Options{Columns: edges.Columns{ReadWeight: true}, SkipInvalid: true}
	for _, key := range keyTypes {
		for _, comp := range compressions[:2] {
			t.Run(key.String()+"/"+comp.name, func(t *testing.T) {
				c := recordCase{key: key, weight: arrow.PrimitiveTypes.Float64, batches: []int{300, 0, 1000}, keyNulls: 0.02, wNulls: 0.01, extra: true, seed: 11}
				schema, recs := c.records(t, memory.DefaultAllocator)
				defer releaseAll(recs)
				ms := writeMessages(t, schema, recs, comp.opt...)
				a, err := NewAppender("flight:g", schema, opts)
				if err != nil {
					t.Fatal(err)
				}
				defer a.Release()
				if !a.SetSchemaMessage(ms[0].meta) {
					t.Fatal("the schema message was not taken")
				}
				direct := comp.name == "plain" && key.ID() != arrow.DICTIONARY && key.ID() != arrow.STRING_VIEW
				batches := 0
				for _, m := range ms[1:] {
					ok, err := a.AppendMessage(m.meta, m.body)
					if err != nil {
						t.Fatal(err)
					}
					if m.header != headerRecordBatch {
						if ok {
							t.Fatal("a dictionary batch was taken for edges")
						}
						continue
					}
					if ok != direct {
						t.Fatalf("record batch %d taken: %v, want %v", batches, ok, direct)
					}
					batches++
				}
				if !direct {
					if a.Rows() != 0 {
						t.Errorf("%d rows added by declined batches", a.Rows())
					}
					return
				}
				tbl, err := a.Finish()
				if err != nil {
					t.Fatal(err)
				}
				defer tbl.Release()
				checkTable(t, tbl, recs, opts)
			})
		}
	}
}

// TestAppendMessageAliases checks where the table's int64 keys and weights
// live: in the body when it is aligned (and Bytes counts the body), in
// copies when it is not, or when the edge columns are under half of it.
func TestAppendMessageAliases(t *testing.T) {
	opts := edges.Options{Columns: edges.Columns{ReadWeight: true}}
	in := func(p unsafe.Pointer, b []byte) bool {
		base := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
		return uintptr(p) >= base && uintptr(p) < base+uintptr(len(b))
	}
	for _, tc := range []struct {
		name    string
		shift   int  // bytes the body is moved off its alignment
		extra   bool // columns of every kind, larger than the edges
		aliases bool
	}{
		{"aligned", 0, false, true},
		{"misaligned", 3, false, false},
		{"mostly other columns", 0, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := recordCase{key: arrow.PrimitiveTypes.Int64, weight: arrow.PrimitiveTypes.Float64, batches: []int{64, 2000}, seed: 12, extra: tc.extra}
			schema, recs := c.records(t, memory.DefaultAllocator)
			defer releaseAll(recs)
			ms := writeMessages(t, schema, recs)
			a, err := NewAppender("flight:g", schema, opts)
			if err != nil {
				t.Fatal(err)
			}
			if !a.SetSchemaMessage(ms[0].meta) {
				t.Fatal("the schema message was not taken")
			}
			var bodies [][]byte
			var bodyBytes int64
			for _, m := range ms[1:] {
				if m.header != headerRecordBatch {
					continue
				}
				body := m.body
				if tc.shift > 0 {
					b := make([]byte, len(body)+8)
					body = b[tc.shift : tc.shift+len(body)]
					copy(body, m.body)
				}
				ok, err := a.AppendMessage(m.meta, body)
				if !ok || err != nil {
					t.Fatalf("batch not taken: %v", err)
				}
				bodies = append(bodies, body)
				bodyBytes += int64(len(body))
			}
			tbl, err := a.Finish()
			if err != nil {
				t.Fatal(err)
			}
			defer tbl.Release()
			checkTable(t, tbl, recs, opts)
			for i, ch := range tbl.Chunks {
				for _, p := range []unsafe.Pointer{unsafe.Pointer(&ch.Src.Int64[0]), unsafe.Pointer(&ch.Dst.Int64[0]), unsafe.Pointer(&ch.Weight[0])} {
					if got := in(p, bodies[i]); got != tc.aliases {
						t.Errorf("batch %d: a column in the body: %v, want %v", i, got, tc.aliases)
					}
				}
			}
			if tc.aliases && a.Bytes() != bodyBytes {
				t.Errorf("Bytes %d, want the bodies' %d", a.Bytes(), bodyBytes)
			}
		})
	}
}

// TestAppendMessageDamage checks that a batch whose metadata does not fit
// its body is an error naming the batch, and that a schema message that
// is not one is declined.
func TestAppendMessageDamage(t *testing.T) {
	c := recordCase{key: arrow.PrimitiveTypes.Int64, batches: []int{100}, seed: 13}
	schema, recs := c.records(t, memory.DefaultAllocator)
	defer releaseAll(recs)
	ms := writeMessages(t, schema, recs)
	a, err := NewAppender("flight:g", schema, edges.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Release()
	if a.SetSchemaMessage(ms[1].meta) || a.SetSchemaMessage([]byte("not a flatbuffer")) {
		t.Error("a batch, or garbage, was taken for the schema message")
	}
	if ok, err := a.AppendMessage(ms[1].meta, ms[1].body); ok || err != nil {
		t.Errorf("a batch was taken without a schema message: %v, %v", ok, err)
	}
	if !a.SetSchemaMessage(ms[0].meta) {
		t.Fatal("the schema message was not taken")
	}
	_, err = a.AppendMessage(ms[1].meta, ms[1].body[:len(ms[1].body)-16])
	edgetest.UserErr(t, err, "flight:g", "record batch 0 is damaged")
	if a.Rows() != 0 {
		t.Errorf("%d rows added by a damaged batch", a.Rows())
	}
}
