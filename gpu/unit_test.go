package gpu

// Tests that need no GPU: error texts, argument packing, the pinned range
// table and the PinnedAllocator's pool logic over ordinary memory.

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/gpipe/gpipe/internal/alloc"
	"github.com/gpipe/gpipe/internal/par"
	"github.com/gpipe/gpipe/internal/usererr"
)

func TestAvailableError(t *testing.T) {
	info, err := Available()
	if err == nil {
		t.Skipf("a driver is present (CUDA %s, %d GPUs): TestDeviceAttributes covers it", info.DriverVersionString(), len(info.Devices))
	}
	t.Logf("Available: %v", err)
	if k := usererr.KindOf(err); k != usererr.Backend {
		t.Errorf("kind %v, want Backend", k)
	}
	msg := err.Error()
	known := []string{
		"no NVIDIA driver found (libcuda.so.1 not loadable: ",
		"no GPU backend on this platform",
		"the NVIDIA driver supports CUDA ",
		"the NVIDIA driver failed to initialize",
		"no NVIDIA GPU found",
		"the NVIDIA driver reports no GPU",
		"is the CUDA toolkit's stub library",
	}
	ok := false
	for _, k := range known {
		ok = ok || strings.Contains(msg, k)
	}
	if !ok {
		t.Errorf("Available error %q says none of the known reasons", msg)
	}
	if !strings.Contains(msg, "--backend cpu") {
		t.Errorf("Available error %q does not say what to do", msg)
	}
	if _, err2 := Available(); err2 != err {
		t.Errorf("second Available gave %v, want the same error", err2)
	}
	if _, err := Default(); err == nil {
		t.Error("Default without a driver succeeded")
	}
	if _, err := DeviceAt(0); err == nil {
		t.Error("DeviceAt(0) without a driver succeeded")
	}
}

func TestMemoryFitsMessage(t *testing.T) {
	gib := float64(1 << 30)
	err := memoryFits(int64(12.3*gib), int64(9.1*gib), "NVIDIA H100")
	want := "the graph needs 12.3 GiB on the GPU but NVIDIA H100 has 9.1 GiB free; use --backend cpu"
	if err == nil || err.Error() != want {
		t.Fatalf("memoryFits = %v, want %q", err, want)
	}
	if usererr.KindOf(err) != usererr.Backend {
		t.Errorf("kind %v, want Backend", usererr.KindOf(err))
	}
	if err := memoryFits(100, 100, "x"); err != nil {
		t.Errorf("memoryFits(100, 100) = %v", err)
	}
}

func TestErrorText(t *testing.T) {
	e := &Error{Op: "cuMemAlloc_v2", Code: CodeOutOfMemory, Name: "CUDA_ERROR_OUT_OF_MEMORY", Desc: "out of memory"}
	if got, want := e.Error(), "cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY (out of memory)"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	e = &Error{Op: "cuLaunchKernel", Target: "bfs", Code: CodeIllegalAddress, Name: "CUDA_ERROR_ILLEGAL_ADDRESS"}
	if got, want := e.Error(), "cuLaunchKernel(bfs): CUDA_ERROR_ILLEGAL_ADDRESS"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if !e.Sticky() || (&Error{Code: CodeOutOfMemory}).Sticky() {
		t.Error("Sticky wrong")
	}
	wrapped := backendError("out of GPU memory", fixNoGPU, &Error{Code: CodeOutOfMemory})
	if !IsCode(wrapped, CodeOutOfMemory) || IsCode(wrapped, CodeInvalidValue) || IsCode(errors.New("x"), CodeOutOfMemory) {
		t.Error("IsCode through usererr wrong")
	}
	e = &Error{Op: "cuModuleLoadDataEx", Name: "CUDA_ERROR_INVALID_PTX", Log: "ptxas fatal: line 3"}
	if !strings.Contains(e.Error(), "JIT log:\nptxas fatal: line 3") {
		t.Errorf("log missing from %q", e.Error())
	}
}

func TestPackArg(t *testing.T) {
	for _, c := range []struct {
		arg  any
		bits uint64
		size int
	}{
		{DevicePtr(0x7f0000001000), 0x7f0000001000, 8},
		{uintptr(0x1234), 0x1234, 8},
		{int64(-2), math.MaxUint64 - 1, 8},
		{uint64(1 << 63), 1 << 63, 8},
		{float64(1.5), math.Float64bits(1.5), 8},
		{int32(-1), 0xffffffff, 4},
		{uint32(7), 7, 4},
		{float32(-0.5), uint64(math.Float32bits(-0.5)), 4},
		{int16(-1), 0xffff, 2},
		{uint16(9), 9, 2},
		{int8(-1), 0xff, 1},
		{uint8(200), 200, 1},
		{true, 1, 1},
		{false, 0, 1},
		{(*DeviceBuffer)(nil), 0, 8},
		{&DeviceBuffer{ptr: 0xabc}, 0xabc, 8},
	} {
		bits, size, err := packArg(c.arg)
		if err != nil || bits != c.bits || size != c.size {
			t.Errorf("packArg(%T %v) = %#x, %d, %v; want %#x, %d", c.arg, c.arg, bits, size, err, c.bits, c.size)
		}
	}
	for _, bad := range []any{int(1), uint(1), "s", []int32{1}, struct{}{}, &DeviceBuffer{freed: true}} {
		if _, _, err := packArg(bad); err == nil {
			t.Errorf("packArg(%T) accepted", bad)
		}
	}
	if _, _, err := packArg(int(3)); !strings.Contains(err.Error(), "int32 or int64") {
		t.Errorf("int error %q does not say what to pass", err)
	}
}

func TestParamBlock(t *testing.T) {
	pb := paramPool.Get().(*paramBlock)
	defer paramPool.Put(pb)
	for i := range pb.ptrs {
		if pb.ptrs[i] != unsafe.Pointer(&pb.vals[i]) {
			t.Fatalf("ptrs[%d] does not point at vals[%d]", i, i)
		}
	}
	pb.pinner.Pin(pb)
	pb.pinner.Unpin()
}

func TestLaunchHelpers(t *testing.T) {
	if BlocksFor(0, 256) != 1 || BlocksFor(1, 256) != 1 || BlocksFor(256, 256) != 1 || BlocksFor(257, 256) != 2 {
		t.Error("BlocksFor wrong")
	}
	if Dim(5) != [3]uint32{5, 1, 1} {
		t.Error("Dim wrong")
	}
}

func TestPinnedRanges(t *testing.T) {
	a := make([]byte, 1000)
	b := make([]byte, 1000)
	registerPinned(unsafe.Pointer(&a[0]), len(a))
	registerPinned(unsafe.Pointer(&b[0]), len(b))
	if !IsPinned(a) || !IsPinned(a[10:20]) || !IsPinned(b[999:]) || !IsPinned(b) {
		t.Error("registered memory not pinned")
	}
	if IsPinned(a[:0]) || IsPinned(make([]byte, 10)) || IsPinned(nil) {
		t.Error("unregistered memory pinned")
	}
	if IsPinned(unsafe.Slice(&a[500], 501)) {
		t.Error("a range past the end is pinned")
	}
	unregisterPinned(unsafe.Pointer(&a[0]))
	if IsPinned(a) || !IsPinned(b) {
		t.Error("unregister wrong")
	}
	unregisterPinned(unsafe.Pointer(&b[0]))
	if IsPinned(b) {
		t.Error("unregister wrong")
	}
}

// fakeHostMemory hands out page-aligned Go memory in place of pinned memory.
type fakeHostMemory struct {
	mu        sync.Mutex
	live      map[uintptr][]byte
	failAbove int // allocations larger than this fail; 0: none fail
	failAll   bool
	allocs    int
	frees     int
}

func newFakeHostMemory() *fakeHostMemory { return &fakeHostMemory{live: map[uintptr][]byte{}} }

func (m *fakeHostMemory) alloc(n int) (unsafe.Pointer, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failAll || (m.failAbove > 0 && n > m.failAbove) {
		return nil, &Error{Op: "cuMemHostAlloc", Code: CodeOutOfMemory, Name: "CUDA_ERROR_OUT_OF_MEMORY"}
	}
	buf := make([]byte, n+4096)
	off := (4096 - int(uintptr(unsafe.Pointer(&buf[0]))%4096)) % 4096
	p := unsafe.Pointer(&buf[off])
	m.live[uintptr(p)] = buf
	m.allocs++
	return p, nil
}

func (m *fakeHostMemory) free(p unsafe.Pointer) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.live[uintptr(p)]; !ok {
		return fmt.Errorf("fake free of %p: not allocated", p)
	}
	delete(m.live, uintptr(p))
	m.frees++
	return nil
}

func (m *fakeHostMemory) outstanding() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.live)
}

// checkBuf checks a buffer from the allocator: length, capacity,
// alignment, zeroed. It then fills it with tag.
func checkBuf(t *testing.T, b []byte, size int, tag byte) {
	t.Helper()
	if len(b) != size || cap(b) != size {
		t.Fatalf("len %d cap %d, want %d", len(b), cap(b), size)
	}
	if size == 0 {
		return
	}
	if p := uintptr(unsafe.Pointer(&b[0])); p%alignment != 0 {
		t.Fatalf("%d-byte buffer at %#x is not 64-byte aligned", size, p)
	}
	for i, v := range b {
		if v != 0 {
			t.Fatalf("%d-byte buffer not zeroed at %d", size, i)
		}
	}
	for i := range b {
		b[i] = tag
	}
}

func TestPinnedAllocatorPool(t *testing.T) {
	mem := newFakeHostMemory()
	a := newPinnedAllocator(mem)
	sizes := []int{1, 63, 64, 65, 100, 4096, 65535, 65536, 65537, 100000, 1 << 20, 3<<20 + 5}
	var bufs [][]byte
	total := 0
	for round := 0; round < 2; round++ {
		for i, n := range sizes {
			b := a.Allocate(n)
			checkBuf(t, b, n, byte(i+1))
			bufs = append(bufs, b)
			total += n
		}
	}
	for i, b := range bufs {
		for _, v := range b {
			if v != byte(i%len(sizes)+1) {
				t.Fatalf("buffer %d overwritten by another", i)
			}
		}
	}
	st := a.Stats()
	if st.InUse != int64(total) || st.PeakInUse != int64(total) || st.Allocs != int64(len(bufs)) || st.Fallback != 0 {
		t.Errorf("stats %+v, want InUse %d", st, total)
	}
	// Small buffers share slabs: far fewer backing allocations than buffers.
	if mem.allocs >= len(bufs) {
		t.Errorf("%d backing allocations for %d buffers: no pooling", mem.allocs, len(bufs))
	}
	if a.Allocated() != int64(total) {
		t.Errorf("Allocated %d, want %d", a.Allocated(), total)
	}
	for _, b := range bufs {
		a.Free(b)
	}
	if err := a.Err(); err != nil {
		t.Fatalf("Err after clean frees: %v", err)
	}
	st = a.Stats()
	if st.InUse != 0 || st.Frees != int64(len(bufs)) {
		t.Errorf("stats after free %+v", st)
	}
	// Reuse: the same sizes again need no new backing memory (small from the
	// pool, large from the cache), and come back zeroed.
	before := mem.allocs
	for i, n := range sizes {
		b := a.Allocate(n)
		checkBuf(t, b, n, byte(i))
		a.Free(b)
	}
	if mem.allocs != before {
		t.Errorf("reallocating freed sizes took %d new backing allocations", mem.allocs-before)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if n := mem.outstanding(); n != 0 {
		t.Errorf("%d backing allocations not freed by Close", n)
	}
	if st := a.Stats(); st.Pinned != 0 || st.Cached != 0 {
		t.Errorf("stats after Close %+v", st)
	}
}

func TestPinnedAllocatorZeroAndMisuse(t *testing.T) {
	mem := newFakeHostMemory()
	a := newPinnedAllocator(mem)
	z := a.Allocate(0)
	if z == nil || len(z) != 0 {
		t.Errorf("Allocate(0) = %v", z)
	}
	a.Free(z)
	a.Free(nil)
	if a.Err() != nil {
		t.Fatalf("Free of empty slices recorded %v", a.Err())
	}
	foreign := make([]byte, 128)
	a.Free(foreign)
	if err := a.Err(); err == nil || !strings.Contains(err.Error(), "did not allocate") {
		t.Fatalf("Free of a foreign slice: Err = %v", err)
	}
	a = newPinnedAllocator(mem)
	b := a.Allocate(200)
	a.Free(b)
	a.Free(b)
	if a.Err() == nil {
		t.Error("double Free not detected")
	}
	a = newPinnedAllocator(mem)
	b = a.Allocate(300)
	a.Free(b[10:])
	if a.Err() == nil {
		t.Error("Free of an interior slice not detected")
	}
	if a.Stats().InUse != 300 {
		t.Error("a bad Free freed something")
	}
	out := a.Reallocate(500, foreign)
	if len(out) != 500 || a.Stats().InUse != 800 {
		t.Errorf("Reallocate of a foreign slice: len %d, stats %+v", len(out), a.Stats())
	}
	if err := a.Close(); err == nil {
		t.Error("Close with buffers in use succeeded")
	}
	a.Free(b)
	a.Free(out)
	if err := a.Close(); err != nil {
		t.Errorf("Close after freeing all: %v", err)
	}
}

func TestPinnedAllocatorReallocate(t *testing.T) {
	mem := newFakeHostMemory()
	a := newPinnedAllocator(mem)
	b := a.Allocate(10)
	for i := range b {
		b[i] = byte(i + 1)
	}
	// Growth within the 64-byte class stays in place, zero beyond.
	c := a.Reallocate(60, b)
	if &c[0] != &b[0] || len(c) != 60 {
		t.Error("growth within the class moved")
	}
	// Shrink then grow: the bytes beyond the shrunk size come back zero.
	c = a.Reallocate(5, c)
	c = a.Reallocate(40, c)
	for i, v := range c {
		want := byte(0)
		if i < 5 {
			want = byte(i + 1)
		}
		if v != want {
			t.Fatalf("byte %d = %d after shrink and grow, want %d", i, v, want)
		}
	}
	// Growth across classes and into large blocks keeps the contents.
	for _, n := range []int{1000, 70000, 5 << 20, 100} {
		c = a.Reallocate(n, c)
		if len(c) != n || uintptr(unsafe.Pointer(&c[0]))%alignment != 0 {
			t.Fatalf("Reallocate(%d): len %d", n, len(c))
		}
		for i := 0; i < 5; i++ {
			if c[i] != byte(i+1) {
				t.Fatalf("contents lost growing to %d", n)
			}
		}
		for i := 5; i < min(n, 1000); i++ {
			if c[i] != 0 {
				t.Fatalf("byte %d not zero after Reallocate(%d)", i, n)
			}
		}
	}
	if st := a.Stats(); st.InUse != 100 || a.Err() != nil {
		t.Errorf("stats %+v, err %v", st, a.Err())
	}
	if z := a.Reallocate(0, c); len(z) != 0 || a.Stats().InUse != 0 {
		t.Errorf("Reallocate to 0: len %d stats %+v", len(z), a.Stats())
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestPinnedAllocatorCacheLimit(t *testing.T) {
	mem := newFakeHostMemory()
	a := newPinnedAllocator(mem)
	a.SetCacheLimit(3 << 20)
	var bs [][]byte
	for i := 0; i < 4; i++ {
		bs = append(bs, a.Allocate(1<<20))
	}
	for _, b := range bs {
		a.Free(b)
	}
	st := a.Stats()
	if st.Cached != 3<<20 || st.Pinned != 3<<20 || mem.outstanding() != 3 {
		t.Errorf("after freeing 4 MiB with a 3 MiB cache: stats %+v, %d backing blocks", st, mem.outstanding())
	}
	// A 400 KiB request does not take a 1 MiB cached block (more than twice
	// its size)...
	small := a.Allocate(400 << 10)
	if a.Stats().Cached != 3<<20 {
		t.Error("a 400 KiB buffer took a 1 MiB cached block")
	}
	// ...but a 700 KiB one does.
	big := a.Allocate(700 << 10)
	if a.Stats().Cached != 2<<20 {
		t.Error("a 700 KiB buffer did not reuse a cached block")
	}
	a.SetCacheLimit(0)
	if st := a.Stats(); st.Cached != 0 || mem.outstanding() != 2 {
		t.Errorf("SetCacheLimit(0): stats %+v, %d backing blocks", st, mem.outstanding())
	}
	a.Free(small)
	a.Free(big)
	if err := a.Close(); err != nil || mem.outstanding() != 0 {
		t.Errorf("Close: %v, %d left", err, mem.outstanding())
	}
}

func TestPinnedAllocatorFallback(t *testing.T) {
	mem := newFakeHostMemory()
	mem.failAbove = 2 << 20
	a := newPinnedAllocator(mem)
	b := a.Allocate(4 << 20)
	checkBuf(t, b, 4<<20, 7)
	st := a.Stats()
	if st.Fallback != 4<<20 || a.Err() == nil || !IsCode(a.Err(), CodeOutOfMemory) {
		t.Errorf("fallback: stats %+v, err %v", st, a.Err())
	}
	b = a.Reallocate(4<<20+10, b)
	if b[0] != 7 || b[4<<20+9] != 0 {
		t.Error("Reallocate of a fallback buffer lost contents")
	}
	a.Free(b)
	if st := a.Stats(); st.Fallback != 0 || st.InUse != 0 {
		t.Errorf("after Free: %+v", st)
	}
	mem.failAll = true
	s := a.Allocate(100)
	checkBuf(t, s, 100, 1)
	a.Free(s)
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestPinnedAllocatorConcurrent(t *testing.T) {
	mem := newFakeHostMemory()
	a := newPinnedAllocator(mem)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			var held [][]byte
			for i := 0; i < 2000; i++ {
				n := 1 + (i*7919+g*104729)%200000
				b := a.Allocate(n)
				b[0], b[n-1] = byte(g), byte(g)
				held = append(held, b)
				if len(held) > 10 {
					x := held[0]
					if x[0] != byte(g) || x[len(x)-1] != byte(g) {
						t.Errorf("goroutine %d: buffer overwritten", g)
						return
					}
					a.Free(x)
					held = held[1:]
				}
			}
			for _, b := range held {
				a.Free(b)
			}
		}(g)
	}
	wg.Wait()
	if st := a.Stats(); st.InUse != 0 || a.Err() != nil {
		t.Errorf("stats %+v, err %v", st, a.Err())
	}
	if err := a.Close(); err != nil || mem.outstanding() != 0 {
		t.Errorf("Close: %v, %d left", err, mem.outstanding())
	}
}

// TestPinnedAllocatorArrow builds arrow arrays and typed slices through the
// allocator, as ingest and convert do.
func TestPinnedAllocatorArrow(t *testing.T) {
	pinned := newPinnedAllocator(newFakeHostMemory())
	checked := memory.NewCheckedAllocator(pinned)
	bld := array.NewInt64Builder(checked)
	for i := 0; i < 100000; i++ {
		if i%17 == 0 {
			bld.AppendNull()
		} else {
			bld.Append(int64(i) * 3)
		}
	}
	arr := bld.NewInt64Array()
	bld.Release()
	for i := 0; i < arr.Len(); i++ {
		if (i%17 == 0) != arr.IsNull(i) || (!arr.IsNull(i) && arr.Value(i) != int64(i)*3) {
			t.Fatalf("value %d wrong", i)
		}
	}
	if pinned.Allocated() == 0 {
		t.Error("the array's buffers did not come from the allocator")
	}
	arr.Release()
	checked.AssertSize(t, 0)

	s := alloc.Slice[uint32](pinned, 12345)
	for i := range s {
		s[i] = uint32(i)
	}
	alloc.Free(pinned, s)
	if pinned.Allocated() != 0 || pinned.Err() != nil {
		t.Errorf("after alloc.Free: %d bytes, err %v", pinned.Allocated(), pinned.Err())
	}
	if err := pinned.Close(); err != nil {
		t.Fatal(err)
	}
}

// Reading a column of 256 MiB into the pinned allocator (here over Go
// memory: its CPU side only, without cuMemHostAlloc's pinning), written
// whole by all cores, then freed, no cache; against the same in Go memory,
// as the CPU backend reads. pinned_bench_test.go has the real thing.
func BenchmarkColumnFakePinned(b *testing.B) {
	a := newPinnedAllocator(newFakeHostMemory())
	a.SetCacheLimit(0)
	benchColumn(b, 256<<20, func(n int) []int64 { return alloc.Slice[int64](a, n) }, func(s []int64) { alloc.Free(a, s) })
}

func BenchmarkColumnGo(b *testing.B) {
	benchColumn(b, 256<<20, func(n int) []int64 { return make([]int64, n) }, func([]int64) {})
}

func benchColumn(b *testing.B, bytes int, get func(n int) []int64, put func([]int64)) {
	n := bytes / 8
	b.SetBytes(int64(bytes))
	for i := 0; i < b.N; i++ {
		s := get(n)
		par.For(n, 1<<16, func(lo, hi int) {
			for j := lo; j < hi; j++ {
				s[j] = int64(j)
			}
		})
		put(s)
	}
}

// A large block comes back from the cache dirty; Allocate (which clears
// such blocks on all cores) must zero all of it.
func TestPinnedLargeReuseZeroed(t *testing.T) {
	a := newPinnedAllocator(newFakeHostMemory())
	const size = 24<<20 + 123
	b := a.Allocate(size)
	for i := range b {
		b[i] = 0xff
	}
	a.Free(b)
	c := a.Allocate(size - 1000)
	for i, x := range c {
		if x != 0 {
			t.Fatalf("byte %d of a reused block is %#x", i, x)
		}
	}
	c = a.Reallocate(size, c)
	for i, x := range c {
		if x != 0 {
			t.Fatalf("byte %d of a grown block is %#x", i, x)
		}
	}
	a.Free(c)
}
