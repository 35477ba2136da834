package edgetest

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/internal/usererr"
)

// Edge is an edge as the tests compare them.
type Edge struct {
	Row      int64
	Src, Dst any
	W        float64
}

// Key is key i of k, normalized (int64, uint64, string) as the tests compare keys.
func Key(k *edges.Keys, i int) any {
	switch {
	case k.Int32 != nil:
		return int64(k.Int32[i])
	case k.Int64 != nil:
		return k.Int64[i]
	case k.Uint32 != nil:
		return uint64(k.Uint32[i])
	case k.Uint64 != nil:
		return k.Uint64[i]
	case k.Str != nil:
		return string(k.Str.At(i))
	}
	return nil
}

// Edges lists a table's edges.
func Edges(t testing.TB, tbl *edges.Table) []Edge {
	t.Helper()
	var out []Edge
	for ci := range tbl.Chunks {
		c := &tbl.Chunks[ci]
		if c.Dst.Len() != c.Len() || (c.Weight != nil && len(c.Weight) != c.Len()) || (c.Rows != nil && len(c.Rows) != c.Len()) {
			t.Fatalf("chunk %d: lengths src %d dst %d weight %d rows %d", ci, c.Len(), c.Dst.Len(), len(c.Weight), len(c.Rows))
		}
		if tbl.HasWeight != (c.Weight != nil) {
			t.Fatalf("chunk %d: HasWeight %v but weight column %v", ci, tbl.HasWeight, c.Weight != nil)
		}
		for i := 0; i < c.Len(); i++ {
			e := Edge{Row: c.Row(i), Src: Key(&c.Src, i), Dst: Key(&c.Dst, i)}
			if c.Weight != nil {
				e.W = c.Weight[i]
			}
			out = append(out, e)
		}
	}
	return out
}

// Same compares edges read with edges expected.
func Same(t testing.TB, got, want []Edge) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d edges, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("edge %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}

// UserErr checks err is a one-line user error naming name, and returns it.
func UserErr(t testing.TB, err error, name string, contains ...string) *usererr.Error {
	t.Helper()
	var ue *usererr.Error
	if !errors.As(err, &ue) {
		t.Fatalf("error %v (%T) is not a usererr.Error", err, err)
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") {
		t.Errorf("error is not one line: %q", msg)
	}
	if name != "" && !strings.HasPrefix(msg, name) {
		t.Errorf("error %q does not start with the input name %q", msg, name)
	}
	for _, c := range contains {
		if !strings.Contains(msg, c) {
			t.Errorf("error %q does not say %q", msg, c)
		}
	}
	return ue
}

// ParseKey is a field as a key of a table of type kt.
func ParseKey(s string, kt edges.KeyType) any {
	if kt == edges.KeyString {
		return s
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		panic(err)
	}
	return v
}
