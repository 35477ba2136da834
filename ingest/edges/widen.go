package edges

import (
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/gpipe/gpipe/internal/alloc"
	"github.com/gpipe/gpipe/internal/echo"
	"github.com/gpipe/gpipe/internal/usererr"
)

// Integer key columns of different widths or signedness in one table
// (int32 sources and int64 destinations, as a join or a cast in a pipeline
// leaves them) are read as one type that holds both: the wider signed
// type where one is signed, else the wider unsigned one. Where one column
// is uint64 and the other signed, the keys decide: int64 when no uint64
// key is above its range, uint64 when no signed key is negative, and an
// error naming a row of each otherwise.

// isInteger says whether keys of type k are integers.
func (k KeyType) isInteger() bool { return k >= KeyInt32 && k <= KeyUint64 }

// signed says whether an integer key type is signed.
func (k KeyType) signed() bool { return k == KeyInt32 || k == KeyInt64 }

// CommonKeyType is the type integer keys of types a and b are read as
// together, before the values are seen: ok is false where they are not
// both integers; a uint64 column beside a signed one gives KeyInt64 and
// mixed (the values decide, in UnifyKeys).
func CommonKeyType(a, b KeyType) (t KeyType, mixed, ok bool) {
	switch {
	case a == b:
		return a, false, true
	case !a.isInteger() || !b.isInteger():
		return 0, false, false
	case a == KeyUint64 && b.signed(), b == KeyUint64 && a.signed():
		return KeyInt64, true, true
	case a == KeyUint64 || b == KeyUint64:
		return KeyUint64, false, true // with uint32
	}
	return KeyInt64, false, true // int32, uint32, int64: int64 holds them all
}

// UnifyKeys converts the keys of a table whose source keys were read as
// type src and destination keys as dst (the chunks hold each column in its
// own type) to one type, CommonKeyType's or, where that depends on the
// values, the one they fit. It refuses keys no one type holds, naming
// their rows. Converted columns are allocated from mem (nil: Go memory)
// and freed with the table.
func UnifyKeys(t *Table, src, dst KeyType, mem memory.Allocator) error {
	to, mixed, ok := CommonKeyType(src, dst)
	cols := t.Columns.WithDefaults()
	if !ok {
		return ErrKeyTypesDiffer(t.Name, cols.Src, src.String(), cols.Dst, dst.String())
	}
	if mixed {
		var err error
		if to, err = mixedType(t, src, dst); err != nil {
			return err
		}
	}
	for i := range t.Chunks {
		c := &t.Chunks[i]
		for _, k := range []*Keys{&c.Src, &c.Dst} {
			if conv := convertKeys(k, to, mem); conv != nil {
				t.OnRelease(conv)
			}
		}
	}
	t.KeyType, t.KeyArrowType = to, to.ArrowType()
	return nil
}

// mixedType is the type a uint64 column and a signed one fit together:
// int64 unless a uint64 key is above it, then uint64 unless a signed key
// is negative.
func mixedType(t *Table, src, dst KeyType) (KeyType, error) {
	big, neg := keyAt{row: -1}, keyAt{row: -1}
	for i := range t.Chunks {
		c := &t.Chunks[i]
		for role, k := range []*Keys{&c.Src, &c.Dst} {
			for j := 0; j < k.Len() && (big.row < 0 || neg.row < 0); j++ {
				switch {
				case k.Uint64 != nil && k.Uint64[j] > math.MaxInt64 && big.row < 0:
					big = keyAt{row: c.Row(j), role: role, text: fmt.Sprint(k.Uint64[j])}
				case k.Uint64 == nil && signedAt(k, j) < 0 && neg.row < 0:
					neg = keyAt{row: c.Row(j), role: role, text: fmt.Sprint(signedAt(k, j))}
				}
			}
		}
	}
	switch {
	case big.row < 0:
		return KeyInt64, nil
	case neg.row < 0:
		return KeyUint64, nil
	}
	cols := t.Columns.WithDefaults()
	names := [2]string{cols.Src, cols.Dst}
	types := [2]KeyType{src, dst}
	return 0, &usererr.Error{Kind: usererr.Input, File: t.Name, Column: names[big.role], Row: big.row,
		Problem: fmt.Sprintf("source column %s is %s and destination column %s is %s, and no integer type holds both: key %s is above int64's range, and column %s has the negative key %s (row %d), which uint64 cannot hold",
			echo.Quote(names[0]), types[0], echo.Quote(names[1]), types[1], big.text, echo.Quote(names[neg.role]), neg.text, neg.row),
		Fix: "cast both key columns to one type (string holds any key)"}
}

// keyAt is a key named in a message: its row, column role (0 source, 1
// destination) and value.
type keyAt struct {
	row  int64
	role int
	text string
}

// signedAt is key j of a signed integer column.
func signedAt(k *Keys, j int) int64 {
	if k.Int32 != nil {
		return int64(k.Int32[j])
	}
	return k.Int64[j]
}

// convertKeys converts k to type to (a no-op where it is that already) and
// returns what frees the new slice, if anything must.
func convertKeys(k *Keys, to KeyType, mem memory.Allocator) func() {
	n := k.Len()
	switch {
	case to == KeyInt64 && k.Int64 == nil:
		out := alloc.Slice[int64](mem, n)
		for j := range out {
			out[j] = integerAt(k, j)
		}
		*k = Keys{Int64: out}
		return freeFunc(mem, out)
	case to == KeyUint64 && k.Uint64 == nil:
		out := alloc.Slice[uint64](mem, n)
		for j := range out {
			out[j] = uint64(integerAt(k, j)) // checked >= 0 (mixedType) or uint32
		}
		*k = Keys{Uint64: out}
		return freeFunc(mem, out)
	}
	return nil
}

// integerAt is key j of an integer column as int64 (uint64 keys checked to
// fit before).
func integerAt(k *Keys, j int) int64 {
	switch {
	case k.Int32 != nil:
		return int64(k.Int32[j])
	case k.Uint32 != nil:
		return int64(k.Uint32[j])
	case k.Uint64 != nil:
		return int64(k.Uint64[j])
	}
	return k.Int64[j]
}

// freeFunc frees s where mem allocated it.
func freeFunc[T any](mem memory.Allocator, s []T) func() {
	if mem == nil || len(s) == 0 {
		return nil
	}
	return func() { alloc.Free(mem, s) }
}
