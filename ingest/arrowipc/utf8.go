package arrowipc

import (
	"unicode/utf8"

	"github.com/gpipe/gpipe/ingest/edges"
)

// String keys must be UTF-8 (edges.ValidUTF8 says why). Every Arrow source
// (files, streams, Flight) goes through the Appender, so the check is here,
// on each chunk's keys once they are made.

// checkUTF8 checks the string keys of ch, a chunk of the Appender's: a key
// that is not valid UTF-8 is an error naming its column and input row, or
// with SkipInvalid its row is dropped and counted (edges.SkipBadUTF8, the
// CSV reader's reason). It says whether any row is left.
func (a *Appender) checkUTF8(ch *edges.Chunk) (bool, error) {
	if ch.Src.Str == nil || (validKeys(ch.Src.Str) && validKeys(ch.Dst.Str)) {
		return true, nil
	}
	// Rare: find the rows, one by one.
	n := ch.Len()
	var keep []int32
	for i := range n {
		col, key := roleSrc, ch.Src.Str.At(i)
		if utf8.Valid(key) {
			col, key = roleDst, ch.Dst.Str.At(i)
		}
		if utf8.Valid(key) {
			keep = append(keep, int32(i))
			continue
		}
		if !a.opts.SkipInvalid {
			return false, edges.ErrBadUTF8(a.name, a.cols.names[col], ch.Row(i), key, "an Arrow string")
		}
	}
	a.t.Skipped.Add(edges.SkipBadUTF8, int64(n-len(keep)))
	a.keepRows(ch, keep)
	return len(keep) > 0, nil
}

// keepRows cuts ch, a chunk of string keys, down to its positions keep, in
// new buffers.
func (a *Appender) keepRows(ch *edges.Chunk, keep []int32) {
	m := len(keep)
	ch.Src.Str = a.gatherStrings(ch.Src.Str.Offsets, ch.Src.Str.Data, keep, nil, m)
	ch.Dst.Str = a.gatherStrings(ch.Dst.Str.Offsets, ch.Dst.Str.Data, keep, nil, m)
	if ch.Weight != nil {
		w := allocate[float64](a, m)
		for k, i := range keep {
			w[k] = ch.Weight[i]
		}
		ch.Weight = w
	}
	rows := make([]int64, m)
	for k, i := range keep {
		rows[k] = ch.Row(int(i))
	}
	ch.Rows = rows
}

// validKeys says whether every key of s is valid UTF-8.
func validKeys(s *edges.Strings) bool { return edges.ValidUTF8(s.Data, s.Offsets) }
