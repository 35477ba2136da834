package convert

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/internal/echo"
	"github.com/gpipe/gpipe/internal/usererr"
)

// VertexKeys maps dense ids back to the input's keys: id i has the i-th
// smallest key. Exactly one slice is set, the one that matches Type.
type VertexKeys struct {
	Type edges.KeyType
	// ArrowType is the type of the output's vertex column: the input key
	// column's type, with dictionary encoding removed.
	ArrowType arrow.DataType

	Int32  []int32
	Int64  []int64
	Uint32 []uint32
	Uint64 []uint64
	Str    *edges.Strings // sorted bytewise
}

// Len is the number of vertices.
func (k *VertexKeys) Len() int {
	switch k.Type {
	case edges.KeyInt32:
		return len(k.Int32)
	case edges.KeyInt64:
		return len(k.Int64)
	case edges.KeyUint32:
		return len(k.Uint32)
	case edges.KeyUint64:
		return len(k.Uint64)
	case edges.KeyString:
		if k.Str == nil {
			return 0
		}
		return k.Str.Len()
	}
	return 0
}

// Bytes is the memory the keys hold (none for a graph without keys, as
// a chains' contraction is).
func (k *VertexKeys) Bytes() int64 {
	if k == nil {
		return 0
	}
	switch k.Type {
	case edges.KeyInt32, edges.KeyUint32:
		return int64(k.Len()) * 4
	case edges.KeyInt64, edges.KeyUint64:
		return int64(k.Len()) * 8
	case edges.KeyString:
		if k.Str == nil {
			return 0
		}
		return int64(len(k.Str.Offsets))*8 + int64(len(k.Str.Data))
	}
	return 0
}

// Format is vertex id's key as text.
func (k *VertexKeys) Format(id uint32) string {
	switch k.Type {
	case edges.KeyInt32:
		return strconv.FormatInt(int64(k.Int32[id]), 10)
	case edges.KeyInt64:
		return strconv.FormatInt(k.Int64[id], 10)
	case edges.KeyUint32:
		return strconv.FormatUint(uint64(k.Uint32[id]), 10)
	case edges.KeyUint64:
		return strconv.FormatUint(k.Uint64[id], 10)
	case edges.KeyString:
		return string(k.Str.At(int(id)))
	}
	return ""
}

// Find is the id of the vertex whose key is text (written as the key would
// be in a CSV file). A key that does not parse is a Usage error; a key that
// parses but is not a vertex of the graph is NotFound. what names the key in
// messages ("source").
func (k *VertexKeys) Find(what, text string) (uint32, error) {
	notFound := func() error {
		return &usererr.Error{Kind: usererr.NotFound, Row: -1,
			Problem: fmt.Sprintf("%s key %s is not a vertex of the graph (no edge has it as an endpoint)", what, echo.Quote(text)),
			Fix:     "pick a key that appears in the src or dst column"}
	}
	badKey := func(err error) error {
		why := "it is not an integer"
		if errors.Is(err, strconv.ErrRange) {
			why = "it is out of the type's range"
		}
		return &usererr.Error{Kind: usererr.Usage, Row: -1,
			Problem: fmt.Sprintf("%s key %s is not a valid %s key: %s", what, echo.Quote(text), k.Type, why),
			Fix:     fmt.Sprintf("give the key as it appears in the input's %s columns", k.Type)}
	}
	var i int
	var ok bool
	switch k.Type {
	case edges.KeyInt32:
		v, err := strconv.ParseInt(text, 10, 32)
		if err != nil {
			return 0, badKey(err)
		}
		i, ok = search(k.Int32, int32(v))
	case edges.KeyInt64:
		v, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			return 0, badKey(err)
		}
		i, ok = search(k.Int64, v)
	case edges.KeyUint32:
		v, err := strconv.ParseUint(strings.TrimPrefix(text, "+"), 10, 32)
		if err != nil {
			return 0, badKey(err)
		}
		i, ok = search(k.Uint32, uint32(v))
	case edges.KeyUint64:
		v, err := strconv.ParseUint(strings.TrimPrefix(text, "+"), 10, 64)
		if err != nil {
			return 0, badKey(err)
		}
		i, ok = search(k.Uint64, v)
	case edges.KeyString:
		n := k.Str.Len()
		i = sort.Search(n, func(j int) bool { return bytes.Compare(k.Str.At(j), []byte(text)) >= 0 })
		ok = i < n && bytes.Equal(k.Str.At(i), []byte(text))
	}
	if !ok {
		return 0, notFound()
	}
	return uint32(i), nil
}

func search[T int32 | int64 | uint32 | uint64](keys []T, v T) (int, bool) {
	i := sort.Search(len(keys), func(j int) bool { return keys[j] >= v })
	return i, i < len(keys) && keys[i] == v
}

// Array is the key column for ids: the key of ids[i] at row i, null where
// ids[i] is NoVertex. With ids nil it is every vertex's key in id order.
func (k *VertexKeys) Array(mem memory.Allocator, ids []uint32) arrow.Array {
	if ids == nil {
		return k.Range(mem, 0, k.Len())
	}
	return k.array(mem, len(ids), func(i int) (uint32, bool) { return ids[i], ids[i] != NoVertex })
}

// Range is the key column of the vertices with ids [lo, hi), in id order:
// a slice of the vertex column, so that a result can be written a batch at
// a time.
func (k *VertexKeys) Range(mem memory.Allocator, lo, hi int) arrow.Array {
	return k.array(mem, hi-lo, func(i int) (uint32, bool) { return uint32(lo + i), true })
}

// array is the key column of rows rows, row i holding the key of id(i), or
// null where id says there is none.
func (k *VertexKeys) array(mem memory.Allocator, rows int, id func(i int) (uint32, bool)) arrow.Array {
	b := array.NewBuilder(mem, k.ArrowType)
	defer b.Release()
	b.Reserve(rows)
	switch bb := b.(type) {
	case *array.Int32Builder:
		for i := 0; i < rows; i++ {
			if v, ok := id(i); ok {
				bb.UnsafeAppend(k.Int32[v])
			} else {
				bb.UnsafeAppendBoolToBitmap(false)
			}
		}
	case *array.Int64Builder:
		for i := 0; i < rows; i++ {
			if v, ok := id(i); ok {
				bb.UnsafeAppend(k.Int64[v])
			} else {
				bb.UnsafeAppendBoolToBitmap(false)
			}
		}
	case *array.Uint32Builder:
		for i := 0; i < rows; i++ {
			if v, ok := id(i); ok {
				bb.UnsafeAppend(k.Uint32[v])
			} else {
				bb.UnsafeAppendBoolToBitmap(false)
			}
		}
	case *array.Uint64Builder:
		for i := 0; i < rows; i++ {
			if v, ok := id(i); ok {
				bb.UnsafeAppend(k.Uint64[v])
			} else {
				bb.UnsafeAppendBoolToBitmap(false)
			}
		}
	case *array.StringBuilder:
		for i := 0; i < rows; i++ {
			if v, ok := id(i); ok {
				bb.BinaryBuilder.Append(k.Str.At(int(v)))
			} else {
				bb.AppendNull()
			}
		}
	case *array.LargeStringBuilder:
		for i := 0; i < rows; i++ {
			if v, ok := id(i); ok {
				bb.BinaryBuilder.Append(k.Str.At(int(v)))
			} else {
				bb.AppendNull()
			}
		}
	default:
		panic(fmt.Sprintf("convert: vertex keys of arrow type %s", k.ArrowType))
	}
	return b.NewArray()
}
