package convert

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"hash/maphash"
	"math"
	"math/bits"
	"runtime"
	"sync/atomic"
)

// Distinct keys are found with lock-free open-addressing hash tables
// (linear probing, compare-and-swap inserts), sized from a HyperLogLog
// estimate of the number of distinct keys so that they are built in one pass;
// a table that fills past maxLoad all the same is rebuilt twice as large.

// targetLoad and maxLoad are the hoped-for and the largest fill of a table.
const (
	targetLoad = 0.6
	maxLoad    = 0.9
	// flushEvery is how many new keys a worker inserts between updates of
	// the shared count: the table may overshoot maxLoad by workers·flushEvery.
	flushEvery = 256
)

// maxSlots is the largest table: slot numbers, and the extra slot at
// index len(slots), must stay below NoVertex.
const maxSlots = int64(NoVertex) - 1

// tableSlots is the number of slots for about est distinct keys. Tests
// start tables at their smallest size (tune.smallTables), so that they go
// through the rebuild, which a sound estimate rarely needs.
func tableSlots(est float64, workers int, tune tuning) int64 {
	n := int64(est/targetLoad) + 1
	// Room for every worker's unflushed inserts past the limit.
	n = max(n, int64(float64(workers*flushEvery)/(1-maxLoad))+64)
	if tune.smallTables {
		n = int64(workers*flushEvery)*10 + 64
	}
	return min(n, maxSlots)
}

// mix64 is a bijective 64-bit finalizer (MurmurHash3's fmix64).
func mix64(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

// home is the first slot to probe for hash h in a table of n slots.
func home(h uint64, n uint64) uint64 {
	hi, _ := bits.Mul64(h, n)
	return hi
}

// strSeed seeds the string hash; the build's result does not depend on it.
var strSeed = maphash.MakeSeed()

func hashBytes(b []byte) uint64 { return maphash.Bytes(strSeed, b) }

// hllBits is log2 of the number of HyperLogLog registers (1.6% error).
const hllBits = 12

// hll is a HyperLogLog sketch of 64-bit hashes.
type hll [1 << hllBits]uint8

func (s *hll) add(h uint64) {
	i := h >> (64 - hllBits)
	r := uint8(bits.LeadingZeros64(h<<hllBits|1<<(hllBits-1))) + 1
	if r > s[i] {
		s[i] = r
	}
}

func (s *hll) merge(o *hll) {
	for i, r := range o {
		if r > s[i] {
			s[i] = r
		}
	}
}

// estimate is the sketch's estimate of the number of distinct hashes.
func (s *hll) estimate() float64 {
	const m = float64(1 << hllBits)
	sum, zeros := 0.0, 0
	for _, r := range s {
		sum += math.Ldexp(1, -int(r))
		if r == 0 {
			zeros++
		}
	}
	e := 0.7213 / (1 + 1.079/m) * m * m / sum
	if e <= 2.5*m && zeros > 0 {
		e = m * math.Log(m/float64(zeros))
	}
	return e
}

// intTable is a set of 64-bit key ordinals. Slot value 0 means empty; the
// key 0 itself lives in the extra slot len(slots), flagged by zero.
type intTable struct {
	slots []uint64
	n     uint64
	zero  atomic.Bool
	// count and full track the fill (see flushEvery).
	count atomic.Int64
	limit int64
	full  atomic.Bool
}

func newIntTable(n int64) *intTable {
	return &intTable{slots: bigSlice[uint64](int(n)), n: uint64(n), limit: int64(float64(n) * maxLoad)}
}

// insert adds key k and returns its slot and whether it was new.
func (t *intTable) insert(k uint64) (uint32, bool) {
	if k == 0 {
		if t.zero.Load() {
			return uint32(t.n), false
		}
		return uint32(t.n), t.zero.CompareAndSwap(false, true)
	}
	i := home(mix64(k), t.n)
	for {
		cur := atomic.LoadUint64(&t.slots[i])
		if cur == k {
			return uint32(i), false
		}
		if cur == 0 {
			if atomic.CompareAndSwapUint64(&t.slots[i], 0, k) {
				return uint32(i), true
			}
			continue // someone took the slot: look at what they put there
		}
		if i++; i == t.n {
			i = 0
		}
	}
}

// find is the slot of a key known to be in the table.
func (t *intTable) find(k uint64) uint32 {
	if k == 0 {
		return uint32(t.n)
	}
	i := home(mix64(k), t.n)
	for t.slots[i] != k {
		if i++; i == t.n {
			i = 0
		}
	}
	return uint32(i)
}

// addCount adds a worker's new keys to the shared count; it reports false
// when the table is too full and the pass must stop.
func (t *intTable) addCount(n int64) bool {
	if t.count.Add(n) > t.limit {
		t.full.Store(true)
	}
	return !t.full.Load()
}

// strTable is a set of strings that live in the table's key columns. Each
// slot holds the string's hash and length, its first 16 bytes (so that short
// keys are compared, and all keys mostly sorted, without reaching into the
// columns) and a reference to where it was first seen (see strRef).
type strTable struct {
	slots []strSlot
	n     uint64
	spans []span
	count atomic.Int64
	limit int64
	full  atomic.Bool
}

// strSlot is one slot of a strTable. state is 0 while the slot is empty,
// slotBusy while its inserter writes the rest, then the published value
// hash<<32 | length<<1 | 1 (length capped at 2^31-1; longer strings are
// compared in full).
type strSlot struct {
	state atomic.Uint64
	pre   [2]uint64 // the first 16 bytes, big-endian, zero-padded
	ref   uint64
}

const slotBusy = 2

// strRef is the reference of the endpoint at position j (absolute, within
// span number si), source (side 0) or destination (side 1).
func strRef(si, j, side int, s *span) uint64 {
	return uint64(si)<<17 | uint64(j-s.lo)<<1 | uint64(side)
}

// at is the string a reference names.
func (t *strTable) at(ref uint64) []byte {
	s := &t.spans[ref>>17]
	j := s.lo + int(ref>>1&(spanLen-1))
	if ref&1 == 0 {
		return s.c.Src.Str.At(j)
	}
	return s.c.Dst.Str.At(j)
}

// prefix is b's first 16 bytes as two big-endian words, zero-padded, so that
// comparing prefixes as integers compares the bytes.
func prefix(b []byte) [2]uint64 {
	var buf [16]byte
	copy(buf[:], b)
	return [2]uint64{binary.BigEndian.Uint64(buf[:8]), binary.BigEndian.Uint64(buf[8:])}
}

// stateOf is the published state of a string of hash h and length l.
func stateOf(h uint64, l int) uint64 {
	return h&^(1<<32-1) | uint64(min(l, 1<<31-1))<<1 | 1
}

func newStrTable(n int64, spans []span) *strTable {
	return &strTable{slots: bigSlice[strSlot](int(n)), n: uint64(n), spans: spans, limit: int64(float64(n) * maxLoad)}
}

// insert adds string b, first seen at ref, with hash h; it returns the slot
// and whether the string was new.
func (t *strTable) insert(b []byte, h, ref uint64) (uint32, bool) {
	want := stateOf(h, len(b))
	pre := prefix(b)
	i := home(h, t.n)
	for {
		sl := &t.slots[i]
		cur := sl.state.Load()
		if cur == 0 {
			if sl.state.CompareAndSwap(0, slotBusy) {
				sl.pre, sl.ref = pre, ref
				sl.state.Store(want)
				return uint32(i), true
			}
			continue
		}
		for cur == slotBusy { // its inserter is writing it: a few stores away
			runtime.Gosched()
			cur = sl.state.Load()
		}
		if cur == want && sl.pre == pre && (len(b) <= 16 || bytes.Equal(t.at(sl.ref), b)) {
			return uint32(i), false
		}
		if i++; i == t.n {
			i = 0
		}
	}
}

// key is the string in an occupied slot.
func (t *strTable) key(slot uint32) []byte { return t.at(t.slots[slot].ref) }

// length is the length of the string in an occupied slot.
func (t *strTable) length(slot uint32) int {
	if l := int(t.slots[slot].state.Load() >> 1 & (1<<31 - 1)); l < 1<<31-1 {
		return l
	}
	return len(t.key(slot))
}

// compare orders two occupied slots by their strings, bytewise.
func (t *strTable) compare(a, b uint32) int {
	sa, sb := &t.slots[a], &t.slots[b]
	if c := cmp.Compare(sa.pre[0], sb.pre[0]); c != 0 {
		return c
	}
	if c := cmp.Compare(sa.pre[1], sb.pre[1]); c != 0 {
		return c
	}
	la, lb := t.length(a), t.length(b)
	if la <= 16 && lb <= 16 {
		// Equal prefixes: the shorter is a prefix of the other.
		return cmp.Compare(la, lb)
	}
	return bytes.Compare(t.key(a), t.key(b))
}

func (t *strTable) addCount(n int64) bool {
	if t.count.Add(n) > t.limit {
		t.full.Store(true)
	}
	return !t.full.Load()
}
