package pqwrite

import "unsafe"

// Dictionary encoding is tried on every column chunk, as Arrow's writers
// do, and given up for plain encoding when the dictionary would pass
// dictLimit bytes (Arrow's dictionary page limit). The dictionary of a
// column of unique values (vertex keys, PageRank scores) grows with every
// value; rather than hash values until the limit, the attempt stops after
// dictProbe values if more than half of them were new.
const (
	dictLimit = 1 << 20
	dictProbe = 1 << 12
)

// fixedDict is a dictionary of fixed-width values (their bits), with an
// open-addressing hash table from value to index. A slot holds the key
// beside its index, so that a lookup misses the cache once.
type fixedDict struct {
	slots []slot
	shift uint     // 64 - log2(len(slots))
	keys  []uint64 // the entries, in the order of their first use
}

type slot struct {
	key uint64
	idx int32 // 1 + the entry's index; 0: empty
}

func (d *fixedDict) reset() {
	if d.slots == nil {
		d.slots, d.shift = make([]slot, 1<<10), 64-10
	}
	clear(d.slots)
	d.keys = d.keys[:0]
}

// index is k's index in the dictionary, added if new.
func (d *fixedDict) index(k uint64) int32 {
	mask := uint64(len(d.slots) - 1)
	h := (k * 0x9E3779B97F4A7C15) >> d.shift
	for {
		s := &d.slots[h]
		if s.idx == 0 {
			d.keys = append(d.keys, k)
			s.key, s.idx = k, int32(len(d.keys))
			if 2*len(d.keys) > len(d.slots) {
				d.grow()
			}
			return int32(len(d.keys) - 1)
		}
		if s.key == k {
			return s.idx - 1
		}
		h = (h + 1) & mask
	}
}

// grow doubles the table and hashes the entries again.
func (d *fixedDict) grow() {
	d.slots = make([]slot, 2*len(d.slots))
	d.shift--
	mask := uint64(len(d.slots) - 1)
	for i, k := range d.keys {
		h := (k * 0x9E3779B97F4A7C15) >> d.shift
		for d.slots[h].idx != 0 {
			h = (h + 1) & mask
		}
		d.slots[h] = slot{k, int32(i + 1)}
	}
}

// bytesDict is a dictionary of byte arrays. Its keys view the column's
// Arrow buffers, which outlive the chunk's encoding.
type bytesDict struct {
	index map[string]int32
	vals  [][]byte
	size  int // PLAIN size of the entries: a 4-byte length and the bytes each
}

func (d *bytesDict) reset() {
	if d.index == nil {
		d.index = make(map[string]int32)
	}
	clear(d.index)
	clear(d.vals)
	d.vals, d.size = d.vals[:0], 0
}

func (d *bytesDict) indexOf(v []byte) int32 {
	if i, ok := d.index[unsafe.String(unsafe.SliceData(v), len(v))]; ok {
		return i
	}
	i := int32(len(d.vals))
	d.index[unsafe.String(unsafe.SliceData(v), len(v))] = i
	d.vals = append(d.vals, v)
	d.size += 4 + len(v)
	return i
}
