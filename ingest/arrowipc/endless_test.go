package arrowipc

import (
	"context"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/gpipe/gpipe/ingest/arrowipc/internal/flatbuf"
	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/ingest/internal/edgetest"
	"github.com/gpipe/gpipe/internal/pollctx"
)

// A stream whose batch's body does not end (its header claims a terabyte,
// and the bytes keep coming) is read until the read is canceled: the body
// used to be read in steps of 64 MiB and more, without a look at the
// context between them.
func TestArrowStreamCanceledInBody(t *testing.T) {
	c := recordCase{key: arrow.PrimitiveTypes.Int64, batches: []int{10}}
	schema, recs := c.records(t, memory.DefaultAllocator)
	data := edgetest.ArrowStream(t, schema, recs)
	releaseAll(recs)
	spans := messageSpans(t, data, 0, len(data))
	batch := data[spans[1].lo:spans[1].hi]
	pos, ok := flatbuf.Root(batch[8:]).Field(messageBodyLength, 8)
	if !ok || pos == 0 {
		t.Fatal("no body length in the batch's header")
	}
	binary.LittleEndian.PutUint64(batch[8+pos:], 1<<40)
	in := &edgetest.Endless{Prefix: data[:spans[1].hi], Pattern: []byte{0}, Limit: 256 << 20}
	if _, err := ReadStream(pollctx.New(20), "-", in, edges.Options{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("%v, want the cancellation", err)
	}
	if n := in.ReadBytes(); n > 32<<20 {
		t.Errorf("read %d bytes before it saw the cancellation", n)
	}
}

// Batches that keep coming are read until the read is canceled.
func TestArrowStreamCanceledBetweenBatches(t *testing.T) {
	c := recordCase{key: arrow.PrimitiveTypes.Int64, batches: []int{10}}
	schema, recs := c.records(t, memory.DefaultAllocator)
	data := edgetest.ArrowStream(t, schema, recs)
	releaseAll(recs)
	spans := messageSpans(t, data, 0, len(data))
	batch := data[spans[1].lo : len(data)-8] // the batch, without the end-of-stream marker
	in := &edgetest.Endless{Prefix: data[:spans[1].lo], Pattern: batch, Limit: 256 << 20}
	if _, err := ReadStream(pollctx.New(100), "-", in, edges.Options{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("%v, want the cancellation", err)
	}
}
