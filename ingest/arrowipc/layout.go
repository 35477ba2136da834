package arrowipc

import (
	"fmt"

	"github.com/gpipe/gpipe/ingest/arrowipc/internal/flatbuf"
	"github.com/gpipe/gpipe/internal/echo"
)

// Where a record batch's columns lie in its field nodes and buffers, and the
// checks of that layout. The schema's fields say how many field nodes,
// buffers and variadic buffer counts each column takes; a batch must list
// exactly as many (arrow's reader takes them in order and panics where they
// run out), and its buffers follow one another through the body as the IPC
// format writes them: end to end, each at the next multiple of the writer's
// alignment (8 bytes, or 16, 32 or 64 for some writers). Every check is
// O(columns + buffers), none reads the values.

// columnLayout is what one column of a type takes of a record batch: field
// nodes, buffers, its string and binary views (each takes a variadic buffer
// count, and that many buffers more), and its unions (each takes a validity
// buffer more in metadata before V5). name is a top-level column's.
type columnLayout struct {
	nodes, buffers, views, unions int
	name                          string
}

func (l *columnLayout) add(o columnLayout) {
	l.nodes += o.nodes
	l.buffers += o.buffers
	l.views += o.views
	l.unions += o.unions
}

// schemaLayout is the layout of a schema's top-level columns in a record
// batch, and of each dictionary batch's values, by dictionary id.
type schemaLayout struct {
	columns []columnLayout
	dicts   map[int64]columnLayout
}

// Field numbers of Schema.fbs's Field, DictionaryEncoding and Union.
const (
	fieldName       = 0
	fieldDictionary = 4
	fieldChildren   = 5
	fieldType       = 3
	dictID          = 0
	unionMode       = 0
	unionDense      = 1
)

// layoutOf is the layout of the schema a flatbuffer Schema table holds
// (one that flatbuf.Check passed), or false for a field of a type the
// format does not have.
func layoutOf(schema flatbuf.Table) (*schemaLayout, bool) {
	s := &schemaLayout{dicts: map[int64]columnLayout{}}
	ok := flatbuf.EachTable(schema, schemaFields, func(f flatbuf.Table) bool {
		l, ok := s.field(f, 0, false)
		l.name, _ = f.String(fieldName)
		s.columns = append(s.columns, l)
		return ok
	})
	return s, ok
}

// Field numbers of Schema.fbs's Schema.
const schemaFields = 1

// field is the layout of a column of field f's type: of its dictionary
// indices where it is dictionary-encoded, unless values asks for its
// values' (which its dictionary batches hold).
func (s *schemaLayout) field(f flatbuf.Table, depth int, values bool) (columnLayout, bool) {
	if depth > 64 {
		return columnLayout{}, false
	}
	if dict, encoded := f.Table(fieldDictionary); encoded && !values {
		id, _ := dict.Int64(dictID, 0)
		vl, ok := s.field(f, depth, true)
		s.dicts[id] = vl
		return columnLayout{nodes: 1, buffers: 2}, ok
	}
	l := columnLayout{nodes: 1}
	tag, _ := f.Uint8(fieldTypeType, 0)
	typ, _ := f.Table(fieldType)
	if !typeOK(tag, typ, f) {
		return l, false
	}
	switch tag {
	case 1: // Null
	case 2, 3, 6, 7, 8, 9, 10, 11, 15, 18: // Int, FloatingPoint, Bool, Decimal, Date, Time, Timestamp, Interval, FixedSizeBinary, Duration
		l.buffers = 2
	case 4, 5, 19, 20: // Binary, Utf8, LargeBinary, LargeUtf8
		l.buffers = 3
	case 23, 24: // BinaryView, Utf8View
		l.buffers, l.views = 2, 1
	case 12, 17, 21: // List, Map, LargeList
		l.buffers = 2
	case 25, 26: // ListView, LargeListView
		l.buffers = 3
	case 13, 16: // Struct_, FixedSizeList
		l.buffers = 1
	case 14: // Union: type ids, and offsets when dense
		l.buffers, l.unions = 1, 1
		if mode, _ := typ.Int16(unionMode, 0); mode == unionDense {
			l.buffers = 2
		}
	case 22: // RunEndEncoded: no buffers of its own
	default:
		return l, false
	}
	ok := flatbuf.EachTable(f, fieldChildren, func(c flatbuf.Table) bool {
		cl, ok := s.field(c, depth+1, false)
		l.add(cl)
		return ok
	})
	return l, ok
}

// typeOK says whether the values of a type table (of a field f whose type
// union's tag is tag) are ones arrow's reader takes: it panics on a time
// unit, union mode or union type code out of range, and a fixed-size list
// of no elements.
func typeOK(tag uint8, typ, f flatbuf.Table) bool {
	switch tag {
	case 9, 10: // Time, Timestamp: unit
		unit, _ := typ.Int16(0, 0)
		return unit >= 0 && unit <= 3
	case 16: // FixedSizeList: listSize
		size, _ := typ.Int32(0, 0)
		return size > 0
	case 14: // Union: mode, typeIds (one a child, or none: 0, 1, ...)
		mode, _ := typ.Int16(unionMode, 0)
		ids, _ := typ.Vector(1, 4)
		children, _ := f.Vector(fieldChildren, 4)
		if mode != 0 && mode != unionDense || ids.N != 0 && ids.N != children.N || children.N > 128 {
			return false
		}
		for i := 0; i < ids.N; i++ {
			if id := ids.I32(i, 0); id < 0 || id > 127 {
				return false
			}
		}
	}
	return true
}

// columnStart is where a column's field nodes and buffers start in a batch.
type columnStart struct{ node, buf int }

// place checks that a batch holds what columns take, and that each
// top-level column has the batch's length, and records where each starts.
func (b *batchMeta) place(columns []columnLayout) string {
	v5 := b.version >= metadataV5
	b.starts = make([]columnStart, len(columns))
	var node, buf, view int
	for i, c := range columns {
		b.starts[i] = columnStart{node, buf}
		if node < b.nodes.N {
			if n := b.nodes.I64(node, 0); n != b.length {
				return fmt.Sprintf("column %s has %d values in a batch of %d rows", echo.Quote(c.name), n, b.length)
			}
		}
		node += c.nodes
		buf += c.buffers
		if !v5 {
			buf += c.unions
		}
		for k := 0; k < c.views; k++ {
			if view < b.variadic.N {
				buf += int(b.variadic.I64(view, 0)) // checkBody bounds it by the buffers
			}
			view++
		}
	}
	if node != b.nodes.N || buf != b.buffers.N || view != b.variadic.N {
		return fmt.Sprintf("its header lists %d field nodes, %d buffers and %d variadic buffer counts where the schema's columns take %d, %d and %d",
			b.nodes.N, b.buffers.N, b.variadic.N, node, buf, view)
	}
	return ""
}

// alignments are the buffer alignments writers use.
var alignments = [...]int64{8, 16, 32, 64}

// checkBufferLayout checks that the batch's buffers (those that are not
// empty) follow one another from the body's start, each at the next multiple
// of one alignment after the one before. (How far the body runs past the
// last is not checked: the footer and the message agree on it.)
func (b *batchMeta) checkBufferLayout() string {
	fits := (1 << len(alignments)) - 1 // the alignments that fit so far
	var end int64
	at := func(pos int64) {
		for k, a := range alignments {
			if pos != (end+a-1)/a*a {
				fits &^= 1 << k
			}
		}
	}
	for i := 0; i < b.buffers.N; i++ {
		off, length := b.buffers.I64(i, 0), b.buffers.I64(i, 8)
		if length == 0 {
			continue
		}
		if at(off); fits == 0 {
			return fmt.Sprintf("buffer %d starts at byte %d of the body where the one before it ends at byte %d", i, off, end)
		}
		end = off + length
	}
	return ""
}
