// Package flatbuf reads flatbuffers (the encoding of Arrow IPC metadata)
// without trusting them: every read checks its bounds against the bytes, so
// that a damaged buffer gives ok == false (Table.OK false), never a panic.
// A field's slot in its table's vtable is at byte 4+2·k.
package flatbuf

import (
	"encoding/binary"

	flatbuffers "github.com/google/flatbuffers/go"
)

// Table is a flatbuffers table whose reads are checked against its bytes.
type Table struct {
	t flatbuffers.Table
	// OK says the table lies within its bytes; reads of a table that is not
	// OK fail.
	OK bool
}

// in says whether size bytes at pos lie within b.
func in(b []byte, pos, size uint64) bool {
	return pos <= uint64(len(b)) && size <= uint64(len(b))-pos
}

// Root is the root table of a flatbuffer.
func Root(b []byte) Table {
	if !in(b, 0, 4) {
		return Table{}
	}
	return At(b, uint64(binary.LittleEndian.Uint32(b)))
}

// At is the table at pos, with its vtable checked.
func At(b []byte, pos uint64) Table {
	if !in(b, pos, 4) {
		return Table{}
	}
	vt := int64(pos) - int64(int32(binary.LittleEndian.Uint32(b[pos:])))
	if vt < 0 || !in(b, uint64(vt), 4) {
		return Table{}
	}
	vtLen := uint64(binary.LittleEndian.Uint16(b[vt:]))
	if vtLen < 4 || !in(b, uint64(vt), vtLen) {
		return Table{}
	}
	return Table{t: flatbuffers.Table{Bytes: b, Pos: flatbuffers.UOffsetT(pos)}, OK: true}
}

// Field is the position of field k's value holding size bytes, 0 when absent.
func (f Table) Field(k int, size uint64) (uint64, bool) {
	if !f.OK {
		return 0, false
	}
	o := uint64(f.t.Offset(flatbuffers.VOffsetT(4 + 2*k)))
	if o == 0 {
		return 0, true
	}
	pos := uint64(f.t.Pos) + o
	return pos, in(f.t.Bytes, pos, size)
}

// absent says field k is absent (and its slot lies within the bytes).
func (f Table) absent(k int) bool {
	pos, ok := f.Field(k, 4)
	return ok && pos == 0
}

// Int64 is the int64 field k, def when absent.
func (f Table) Int64(k int, def int64) (int64, bool) {
	pos, ok := f.Field(k, 8)
	if !ok || pos == 0 {
		return def, ok
	}
	return int64(binary.LittleEndian.Uint64(f.t.Bytes[pos:])), true
}

// Int32 is the int32 field k, def when absent.
func (f Table) Int32(k int, def int32) (int32, bool) {
	pos, ok := f.Field(k, 4)
	if !ok || pos == 0 {
		return def, ok
	}
	return int32(binary.LittleEndian.Uint32(f.t.Bytes[pos:])), true
}

// Int16 is the int16 field k, def when absent.
func (f Table) Int16(k int, def int16) (int16, bool) {
	pos, ok := f.Field(k, 2)
	if !ok || pos == 0 {
		return def, ok
	}
	return int16(binary.LittleEndian.Uint16(f.t.Bytes[pos:])), true
}

// Uint8 is the uint8 field k, def when absent.
func (f Table) Uint8(k int, def uint8) (uint8, bool) {
	pos, ok := f.Field(k, 1)
	if !ok || pos == 0 {
		return def, ok
	}
	return f.t.Bytes[pos], true
}

// Table is the table field k points to; present is false when absent (or
// when the field does not lie within the bytes), and then tab is not OK.
func (f Table) Table(k int) (tab Table, present bool) {
	pos, ok := f.Field(k, 4)
	if !ok || pos == 0 {
		return Table{}, false
	}
	return At(f.t.Bytes, pos+uint64(binary.LittleEndian.Uint32(f.t.Bytes[pos:]))), true
}

// Vector is a vector of structs of a fixed size.
type Vector struct {
	b    []byte // the elements
	pos  uint64 // where they start in the flatbuffer
	size int
	N    int
}

// Vector is field k as a vector of elem-byte structs (empty when absent).
func (f Table) Vector(k, elem int) (Vector, bool) {
	pos, ok := f.Field(k, 4)
	if !ok || pos == 0 {
		return Vector{size: elem}, ok
	}
	b := f.t.Bytes
	start := pos + uint64(binary.LittleEndian.Uint32(b[pos:]))
	if !in(b, start, 4) {
		return Vector{}, false
	}
	n := uint64(binary.LittleEndian.Uint32(b[start:]))
	if !in(b, start+4, n*uint64(elem)) {
		return Vector{}, false
	}
	return Vector{b: b[start+4 : start+4+n*uint64(elem)], pos: start + 4, size: elem, N: int(n)}, true
}

// I64 is the 8-byte integer at byte off of element i.
func (v Vector) I64(i, off int) int64 {
	return int64(binary.LittleEndian.Uint64(v.b[i*v.size+off:]))
}

// I32 is the 4-byte integer at byte off of element i.
func (v Vector) I32(i, off int) int32 {
	return int32(binary.LittleEndian.Uint32(v.b[i*v.size+off:]))
}

// String is the string field k of t ("" when absent); false when it does
// not lie within the bytes.
func (f Table) String(k int) (string, bool) {
	if !CheckString(f, k) {
		return "", false
	}
	pos, _ := f.Field(k, 4)
	if pos == 0 {
		return "", true
	}
	b := f.t.Bytes
	start := pos + uint64(binary.LittleEndian.Uint32(b[pos:]))
	n := uint64(binary.LittleEndian.Uint32(b[start:]))
	return string(b[start+4 : start+4+n]), true
}

// CheckString checks the string field k of t (absent is fine).
func CheckString(t Table, k int) bool {
	pos, ok := t.Field(k, 4)
	if !ok || pos == 0 {
		return ok
	}
	b := t.t.Bytes
	start := pos + uint64(binary.LittleEndian.Uint32(b[pos:]))
	if !in(b, start, 4) {
		return false
	}
	return in(b, start+4, uint64(binary.LittleEndian.Uint32(b[start:])))
}

// EachTable calls f on each table of the vector of tables in field k.
func EachTable(t Table, k int, f func(Table) bool) bool {
	vec, ok := t.Vector(k, 4)
	if !ok {
		return false
	}
	for i := 0; i < vec.N; i++ {
		// Each element is an offset from its own position.
		elem := vec.pos + uint64(4*i)
		child := At(t.t.Bytes, elem+uint64(binary.LittleEndian.Uint32(vec.b[4*i:])))
		if !child.OK || !f(child) {
			return false
		}
	}
	return true
}

// Shape is what a reader reads of a table: the kind of each field, by field
// number. Check walks a table by its shape, so that every read the reader
// will make of it (through code that does not check bounds, as the
// flatbuffers-generated accessors do not) is known to lie within the bytes.
type Shape struct {
	Fields []Slot
}

// Slot is one field of a Shape.
type Slot struct {
	Kind Kind
	// Size is the bytes of a Scalar, or of each element of a StructVector.
	Size int
	// Table is the shape of a TableRef, or of each element of a TableVector.
	Table *Shape
	// Union gives the shape of a Union field's table by its type tag, which
	// field Tag holds (a ubyte); nil means a table whose fields are not read.
	Union func(tag uint8) *Shape
	Tag   int
	// Required says a TableRef or Union must be present: the reader uses it
	// without asking.
	Required bool
}

// Kinds of field.
type Kind uint8

const (
	Unread       Kind = iota // a field the reader does not read
	Scalar                   // Size bytes inline
	String                   // a string (or [ubyte])
	StructVector             // a vector of Size-byte structs or scalars
	TableRef                 // a table of shape Table
	TableVector              // a vector of tables of shape Table
	Union                    // a table whose shape its type tag gives
)

// Limits of Check: the tables it visits in all, and how deep they nest.
const (
	maxTables = 1 << 20
	maxDepth  = 64
)

// Check says whether every field s names of t, and of the tables it points
// to, lies within the flatbuffer's bytes; it gives up (false) past a million
// tables or 64 levels of nesting.
func Check(t Table, s *Shape) bool {
	budget := maxTables
	return check(t, s, &budget, 0)
}

func check(t Table, s *Shape, budget *int, depth int) bool {
	if *budget--; *budget <= 0 || depth > maxDepth || !t.OK {
		return false
	}
	for k, slot := range s.Fields {
		ok := true
		switch slot.Kind {
		case Scalar:
			_, ok = t.Field(k, uint64(slot.Size))
		case String:
			ok = CheckString(t, k)
		case StructVector:
			_, ok = t.Vector(k, slot.Size)
		case TableRef:
			if sub, present := t.Table(k); present {
				ok = check(sub, slot.Table, budget, depth+1)
			} else {
				ok = t.absent(k) && !slot.Required
			}
		case TableVector:
			ok = EachTable(t, k, func(sub Table) bool { return check(sub, slot.Table, budget, depth+1) })
		case Union:
			tag, tagOK := t.Uint8(slot.Tag, 0)
			sub, present := t.Table(k)
			switch {
			case !tagOK:
				ok = false
			case !present:
				ok = t.absent(k) && !slot.Required
			default:
				shape := &Shape{}
				if slot.Union != nil {
					if u := slot.Union(tag); u != nil {
						shape = u
					}
				}
				ok = check(sub, shape, budget, depth+1)
			}
		}
		if !ok {
			return false
		}
	}
	return true
}
