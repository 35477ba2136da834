package serve

import (
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/gpipe/gpipe/operators"
)

// TestUploadPaths uploads tables that take each way an upload's batches
// are read: straight from the message (int64, utf8 and large_utf8 keys),
// through arrow's reader (dictionary and string-view keys, compressed
// batches), and both in one upload (int64 keys beside a dictionary column,
// whose dictionary batches arrow's reader must see). Every graph answers as
// the library's from the same batches.
func TestUploadPaths(t *testing.T) {
	ts := startServer(t, Config{})
	c := dial(t, ts.addr)
	ctx := context.Background()
	e := randomEdges(91, 300, 2000, false)
	ints := e.records(false, 4)
	strs := e.records(true, 4)
	for _, tc := range []struct {
		name string
		recs []arrow.RecordBatch
		opts []ipc.Option
	}{
		{"int64", ints, nil},
		{"utf8", strs, nil},
		{"large_utf8", castKeys(t, strs, arrow.BinaryTypes.LargeString), nil},
		{"string_view", castKeys(t, strs, arrow.BinaryTypes.StringView), nil},
		{"dictionary", dictKeys(t, strs), nil},
		{"lz4", ints, []ipc.Option{ipc.WithLZ4()}},
		{"beside-a-dictionary", withDictColumn(t, ints, false), nil},
		{"beside-new-dictionaries", withDictColumn(t, ints, true), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			schema := tc.recs[0].Schema()
			if err := putWith(ctx, c, pathDescriptor(tc.name, map[string]any{"undirected": true}), schema, tc.recs, tc.opts...); err != nil {
				t.Fatal(err)
			}
			want := reference(t, tc.recs, edgeOptions{Undirected: true}, "cc", operators.Params{})
			defer want.Release()
			res, err := get(ctx, c, map[string]any{"graph": tc.name, "op": "cc"})
			if err != nil {
				t.Fatal(err)
			}
			defer res.release()
			if err := sameRecord(res.rec, want); err != nil {
				t.Error(err)
			}
		})
	}
}

// putWith is put with IPC writer options (compression).
func putWith(ctx context.Context, c flight.Client, d *flight.FlightDescriptor, schema *arrow.Schema, recs []arrow.RecordBatch, opts ...ipc.Option) error {
	stream, err := c.DoPut(ctx)
	if err != nil {
		return err
	}
	w := flight.NewRecordWriter(stream, append(opts, ipc.WithSchema(schema))...)
	w.SetFlightDescriptor(d)
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			break
		}
	}
	w.Close()
	stream.CloseSend()
	for {
		if _, err := stream.Recv(); err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
	}
}

// castKeys is recs with the src and dst columns (strings) as dt.
func castKeys(t *testing.T, recs []arrow.RecordBatch, dt arrow.DataType) []arrow.RecordBatch {
	return mapKeys(t, recs, dt, func(b array.Builder, v string) {
		switch b := b.(type) {
		case *array.LargeStringBuilder:
			b.Append(v)
		case *array.StringViewBuilder:
			b.Append(v)
		}
	})
}

// dictKeys is recs with the src and dst columns dictionary-encoded.
func dictKeys(t *testing.T, recs []arrow.RecordBatch) []arrow.RecordBatch {
	dt := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}
	return mapKeys(t, recs, dt, func(b array.Builder, v string) {
		if err := b.(*array.BinaryDictionaryBuilder).AppendString(v); err != nil {
			t.Fatal(err)
		}
	})
}

// mapKeys rebuilds the string key columns of recs as dt, appending each
// key with add.
func mapKeys(t *testing.T, recs []arrow.RecordBatch, dt arrow.DataType, add func(array.Builder, string)) []arrow.RecordBatch {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{{Name: "src", Type: dt}, {Name: "dst", Type: dt}}, nil)
	var out []arrow.RecordBatch
	for _, r := range recs {
		var cols []arrow.Array
		for i := 0; i < 2; i++ {
			b := array.NewBuilder(memory.DefaultAllocator, dt)
			src := r.Column(i).(*array.String)
			for j := 0; j < src.Len(); j++ {
				add(b, src.Value(j))
			}
			cols = append(cols, b.NewArray())
			b.Release()
		}
		out = append(out, array.NewRecordBatch(schema, cols, r.NumRows()))
		for _, c := range cols {
			c.Release()
		}
	}
	t.Cleanup(func() { releaseRecords(out) })
	return out
}

// withDictColumn is recs with a dictionary-encoded column "tag" after the
// edge columns: its dictionary sent once, before the first batch (the
// others then come straight from their messages), or, with changing, a new
// one before each batch.
func withDictColumn(t *testing.T, recs []arrow.RecordBatch, changing bool) []arrow.RecordBatch {
	dt := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.String}
	fields := append(recs[0].Schema().Fields(), arrow.Field{Name: "tag", Type: dt})
	schema := arrow.NewSchema(fields, nil)
	var out []arrow.RecordBatch
	for bi, r := range recs {
		b := array.NewDictionaryBuilder(memory.DefaultAllocator, dt).(*array.BinaryDictionaryBuilder)
		for j := 0; j < int(r.NumRows()); j++ {
			v := fmt.Sprintf("tag%d", j%3)
			if changing {
				v = fmt.Sprintf("tag%d-%d", bi, j%3)
			}
			if err := b.AppendString(v); err != nil {
				t.Fatal(err)
			}
		}
		tag := b.NewArray()
		b.Release()
		out = append(out, array.NewRecordBatch(schema, append(r.Columns()[:len(r.Columns()):len(r.Columns())], tag), r.NumRows()))
		tag.Release()
	}
	t.Cleanup(func() { releaseRecords(out) })
	return out
}

func releaseRecords(recs []arrow.RecordBatch) {
	for _, r := range recs {
		r.Release()
	}
}
