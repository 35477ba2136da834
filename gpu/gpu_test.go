package gpu

// Tests that need a GPU. Without one they skip, unless GPIPE_REQUIRE_GPU=1,
// where they fail: one run of the test binary on a GPU machine
// (.gpu-bundle/run.sh) checks everything.

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/gpipe/gpipe/internal/alloc"
	"github.com/gpipe/gpipe/internal/bytesize"
	"github.com/gpipe/gpipe/internal/usererr"
)

func requireGPU() bool { return os.Getenv("GPIPE_REQUIRE_GPU") == "1" }

// testContext is the default GPU's context; without one the test skips,
// or fails under GPIPE_REQUIRE_GPU=1.
func testContext(tb testing.TB) *Context {
	tb.Helper()
	c, err := Default()
	if err != nil {
		if requireGPU() {
			tb.Fatalf("GPIPE_REQUIRE_GPU=1 but no usable GPU: %v", err)
		}
		tb.Skipf("no GPU: %v", err)
	}
	return c
}

func must(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}

func newStream(tb testing.TB, c *Context) *Stream {
	tb.Helper()
	s, err := c.NewStream()
	must(tb, err)
	tb.Cleanup(func() { must(tb, s.Destroy()) })
	return s
}

func loadTestModule(tb testing.TB, c *Context) *Module {
	tb.Helper()
	m, err := c.LoadPTX(testPTX)
	must(tb, err)
	tb.Cleanup(func() { must(tb, m.Unload()) })
	return m
}

func function(tb testing.TB, m *Module, name string) *Function {
	tb.Helper()
	f, err := m.Function(name)
	must(tb, err)
	return f
}

func alloc64(tb testing.TB, c *Context, n int64) *DeviceBuffer {
	tb.Helper()
	b, err := c.Alloc(n)
	must(tb, err)
	tb.Cleanup(func() { must(tb, b.Free()) })
	return b
}

// cudaError is err's *Error, failing the test when there is none.
func cudaError(t *testing.T, err error, wantName string) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) carries no *Error", err, err)
	}
	if !strings.HasPrefix(e.Name, "CUDA_ERROR_") || (wantName != "" && e.Name != wantName) {
		t.Fatalf("error name %q, want %q (%v)", e.Name, wantName, err)
	}
	return e
}

func TestDeviceAttributes(t *testing.T) {
	c := testContext(t)
	info, err := Available()
	must(t, err)
	if info.DriverVersion < MinDriverVersion {
		t.Errorf("driver version %d", info.DriverVersion)
	}
	t.Logf("driver: CUDA %s (%s), %d GPU(s)", info.DriverVersionString(), drv.eventElapsedName, len(info.Devices))
	busID := regexp.MustCompile(`^[0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-9a-f]$`)
	for i, d := range info.Devices {
		a := d.Attributes
		t.Logf("%v\n%+v\npeak memory bandwidth %.0f GB/s", d, a, a.PeakMemoryBandwidth()/1e9)
		if d.Ordinal != i || d.Name == "" || strings.HasPrefix(d.Name, "GPU ") {
			t.Errorf("GPU %d: ordinal %d, name %q", i, d.Ordinal, d.Name)
		}
		if a.TotalMemory < 1<<30 || a.SMs <= 0 || a.WarpSize != 32 || a.ComputeMajor < 3 {
			t.Errorf("GPU %d: implausible memory, SMs, warp size or compute capability: %+v", i, a)
		}
		if a.MaxThreadsPerBlock != 1024 || a.MaxThreadsPerSM < 1024 || a.MaxBlockDim != [3]int{1024, 1024, 64} ||
			a.MaxGridDim[0] != 1<<31-1 || a.MaxGridDim[1] != 65535 || a.MaxGridDim[2] != 65535 {
			t.Errorf("GPU %d: thread and grid limits %+v", i, a)
		}
		if a.SharedMemPerBlock != 48<<10 || a.SharedMemPerBlockOptin < a.SharedMemPerBlock ||
			a.SharedMemPerSM < a.SharedMemPerBlockOptin || a.RegistersPerBlock < 32768 || a.RegistersPerSM < 32768 {
			t.Errorf("GPU %d: shared memory or registers %+v", i, a)
		}
		if a.L2CacheSize <= 0 || a.MemoryBusWidth <= 0 || a.AsyncEngines <= 0 || !a.ConcurrentKernels || !a.UnifiedAddressing {
			t.Errorf("GPU %d: L2, bus, copy engines, concurrency or UVA %+v", i, a)
		}
		if !busID.MatchString(a.PCIBusID) {
			t.Errorf("GPU %d: PCI bus id %q", i, a.PCIBusID)
		}
		if 10*a.ComputeMajor+a.ComputeMinor >= MinComputeCapability && d.Supported() != nil {
			t.Errorf("GPU %d: Supported = %v", i, d.Supported())
		}
		if got, err := DeviceAt(i); err != nil || got != d {
			t.Errorf("DeviceAt(%d) = %v, %v", i, got, err)
		}
	}
	if _, err := DeviceAt(len(info.Devices)); err == nil {
		t.Error("DeviceAt past the last GPU succeeded")
	}

	d := c.Device()
	if c2, err := d.Context(); err != nil || c2 != c {
		t.Errorf("second Context() = %p, %v; want the same context %p", c2, err, c)
	}
	free, total, err := c.MemInfo()
	must(t, err)
	t.Logf("%s: %s free of %s", d.Name, bytesize.Format(free), bytesize.Format(total))
	if free <= 0 || free > total || total != d.TotalMemory {
		t.Errorf("MemInfo free %d total %d, TotalMemory %d", free, total, d.TotalMemory)
	}
	must(t, d.MemoryFits(1<<20))
	err = d.MemoryFits(2 * total)
	if err == nil || usererr.KindOf(err) != usererr.Backend {
		t.Fatalf("MemoryFits(2*total) = %v", err)
	}
	for _, want := range []string{"the graph needs", d.Name, "GiB free", "use --backend cpu"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("MemoryFits error %q lacks %q", err, want)
		}
	}
	t.Log(err)
}

func TestAllocFree(t *testing.T) {
	c := testContext(t)
	base := c.Allocated()
	b, err := c.Alloc(1 << 20)
	must(t, err)
	if b.Size() != 1<<20 || b.Ptr() == 0 || b.Ptr()%256 != 0 || b.Context() != c {
		t.Errorf("buffer size %d ptr %#x", b.Size(), b.Ptr())
	}
	if c.Allocated() != base+1<<20 {
		t.Errorf("Allocated %d, want %d", c.Allocated(), base+1<<20)
	}
	view, err := b.Slice(4096, 1024)
	must(t, err)
	if view.Ptr() != b.Ptr()+4096 || view.Size() != 1024 {
		t.Error("Slice wrong")
	}
	if view.Free() == nil {
		t.Error("Free of a view succeeded")
	}
	if _, err := b.Slice(1<<20-10, 11); err == nil {
		t.Error("Slice past the end succeeded")
	}
	must(t, b.Free())
	must(t, b.Free())
	if c.Allocated() != base {
		t.Errorf("Allocated %d after Free, want %d", c.Allocated(), base)
	}
	if err := b.Memset8(nil, 0); !errors.Is(err, errDestroyed) {
		t.Errorf("Memset8 after Free = %v", err)
	}

	z, err := c.Alloc(0)
	must(t, err)
	must(t, z.Memset8(nil, 1))
	must(t, z.CopyFromHost(nil, nil))
	must(t, z.CopyToHost(nil, nil))
	must(t, z.Free())
	if _, err := c.Alloc(-1); err == nil {
		t.Error("Alloc(-1) succeeded")
	}

	_, err = c.Alloc(1 << 50)
	if usererr.KindOf(err) != usererr.Backend || !IsCode(err, CodeOutOfMemory) {
		t.Fatalf("Alloc(1 PiB) = %v", err)
	}
	cudaError(t, err, "CUDA_ERROR_OUT_OF_MEMORY")
	if !strings.Contains(err.Error(), c.Device().Name) || !strings.Contains(err.Error(), "1024 TiB") {
		t.Errorf("out-of-memory error %q does not name the GPU and size", err)
	}
	t.Log(err)
}

// hostBuffer is n bytes of host memory of the given kind, freed at the
// end of the test.
func hostBuffer(tb testing.TB, c *Context, kind string, pa *PinnedAllocator, n int) []byte {
	tb.Helper()
	switch kind {
	case "pageable":
		return make([]byte, n)
	case "HostBuffer":
		h, err := c.AllocHost(n)
		must(tb, err)
		tb.Cleanup(func() { must(tb, h.Free()) })
		return h.Bytes()
	case "PinnedAllocator":
		b := pa.Allocate(n)
		tb.Cleanup(func() { pa.Free(b) })
		return b
	}
	panic(kind)
}

func fillRandom(b []byte, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 7))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
}

func expectAll(t *testing.T, what string, b []byte, v byte) {
	t.Helper()
	for i, x := range b {
		if x != v {
			t.Fatalf("%s: byte %d is %#x, want %#x", what, i, x, v)
		}
	}
}

func TestCopyRoundTrip(t *testing.T) {
	c := testContext(t)
	s := newStream(t, c)
	pa := NewPinnedAllocator(c)
	defer func() { must(t, pa.Close()) }()
	const pad = 256
	for _, kind := range []string{"pageable", "HostBuffer", "PinnedAllocator"} {
		for _, n := range []int{1, 3, 4096 + 7, 8<<20 + 13} {
			t.Run(fmt.Sprintf("%s/%d", kind, n), func(t *testing.T) {
				src := hostBuffer(t, c, kind, pa, n)
				if IsPinned(src) != (kind != "pageable") {
					t.Fatalf("IsPinned(%s) = %v", kind, IsPinned(src))
				}
				fillRandom(src, uint64(n))
				dev := alloc64(t, c, int64(n+pad))
				must(t, dev.Memset8(s, 0xCD))
				must(t, dev.CopyFromHost(s, src))
				back := hostBuffer(t, c, kind, pa, n+pad+64)
				for i := range back {
					back[i] = 0xAB
				}
				must(t, dev.CopyToHost(s, back[:n+pad]))
				// D2D into a second buffer, and back.
				dev2 := alloc64(t, c, int64(n))
				view, err := dev.Slice(0, int64(n))
				must(t, err)
				must(t, dev2.CopyFromDevice(s, view))
				back2 := hostBuffer(t, c, kind, pa, n)
				must(t, dev2.CopyToHost(s, back2))
				must(t, s.Synchronize())
				if !bytes.Equal(back[:n], src) {
					t.Fatalf("%d bytes from %s memory came back different", n, kind)
				}
				expectAll(t, "device bytes past the copy", back[n:n+pad], 0xCD)
				expectAll(t, "host bytes past the copy", back[n+pad:], 0xAB)
				if !bytes.Equal(back2, src) {
					t.Fatal("device-to-device copy differs")
				}
				if err := dev2.CopyFromHost(s, make([]byte, n+1)); err == nil {
					t.Error("copy larger than the buffer succeeded")
				}
			})
		}
	}

	// Typed copies.
	f := make([]float64, 100003)
	for i := range f {
		f[i] = float64(i) * -1.25
	}
	fd, err := UploadNew(c, s, f)
	must(t, err)
	defer fd.Free()
	if Len[float64](fd) != len(f) || Len[int32](fd) != 2*len(f) {
		t.Error("Len wrong")
	}
	g := make([]float64, len(f))
	must(t, Download(s, g, fd))
	for i := range f {
		if g[i] != f[i] {
			t.Fatalf("float64 %d: %v, want %v", i, g[i], f[i])
		}
	}
}

func TestMemset(t *testing.T) {
	c := testContext(t)
	s := newStream(t, c)
	b := alloc64(t, c, 4096)
	must(t, b.Memset8(s, 0x5A))
	v, err := b.Slice(100, 200)
	must(t, err)
	must(t, v.Memset8(s, 0x11))
	w, err := b.Slice(1024, 1024)
	must(t, err)
	must(t, w.Memset32(s, 0xDEADBEEF))
	host := make([]byte, 4096)
	must(t, b.CopyToHost(s, host))
	expectAll(t, "before the slice", host[:100], 0x5A)
	expectAll(t, "Memset8 slice", host[100:300], 0x11)
	expectAll(t, "between", host[300:1024], 0x5A)
	words := make([]uint32, 256)
	must(t, Download(s, words, w))
	for i, x := range words {
		if x != 0xDEADBEEF {
			t.Fatalf("word %d = %#x", i, x)
		}
	}
	expectAll(t, "after the words", host[2048:], 0x5A)
	odd, err := b.Slice(1, 8)
	must(t, err)
	if err := odd.Memset32(s, 0); err == nil {
		t.Error("Memset32 at an odd address succeeded")
	}
}

func TestEvents(t *testing.T) {
	c := testContext(t)
	s := newStream(t, c)
	m := loadTestModule(t, c)
	f := function(t, m, "axpb_i32")
	const n = 1 << 24
	in := alloc64(t, c, 4*n)
	out := alloc64(t, c, 4*n)
	must(t, in.Memset32(s, 5))
	start, err := c.NewEvent()
	must(t, err)
	defer start.Destroy()
	end, err := c.NewEvent()
	must(t, err)
	defer end.Destroy()
	must(t, start.Record(s))
	const reps = 20
	for i := 0; i < reps; i++ {
		must(t, Launch(f, Dim(BlocksFor(n, 256)), Dim(256), 0, s, out, in, int32(3), int32(1), uint32(n)))
	}
	must(t, end.Record(s))
	must(t, end.Synchronize())
	if done, err := end.Query(); err != nil || !done {
		t.Errorf("Query after Synchronize = %v, %v", done, err)
	}
	d, err := Elapsed(start, end)
	must(t, err)
	gbs := float64(reps) * 8 * n / d.Seconds() / 1e9
	t.Logf("%d launches over %d ints: %v (%.0f GB/s)", reps, n, d, gbs)
	if d <= 0 || d > 10*time.Second {
		t.Errorf("elapsed %v", d)
	}

	// Another stream waits for this one's work through an event.
	s2 := newStream(t, c)
	marker, err := c.NewMarker()
	must(t, err)
	defer marker.Destroy()
	must(t, in.Memset32(s, 7))
	must(t, Launch(f, Dim(BlocksFor(n, 256)), Dim(256), 0, s, out, in, int32(3), int32(1), uint32(n)))
	must(t, marker.Record(s))
	must(t, s2.WaitEvent(marker))
	h, err := c.AllocHost(4 * n)
	must(t, err)
	defer h.Free()
	must(t, out.CopyToHost(s2, h.Bytes()))
	must(t, s2.Synchronize())
	if done, err := s2.Query(); err != nil || !done {
		t.Errorf("stream Query after Synchronize = %v, %v", done, err)
	}
	for i, x := range unsafeSlice[int32](h.Bytes()) {
		if x != 22 {
			t.Fatalf("element %d = %d after waiting on the event, want 22", i, x)
		}
	}

	if _, err := Elapsed(marker, end); err == nil {
		t.Error("Elapsed of a marker succeeded")
	}
	fresh, err := c.NewEvent()
	must(t, err)
	defer fresh.Destroy()
	_, err = Elapsed(fresh, end)
	e := cudaError(t, err, "")
	t.Logf("Elapsed from an unrecorded event: %v", e)
}

// unsafeSlice views bytes as T (for pinned memory, in place).
func unsafeSlice[T Scalar](b []byte) []T {
	var zero T
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/int(unsafe.Sizeof(zero)))
}

func TestLaunch(t *testing.T) {
	c := testContext(t)
	s := newStream(t, c)
	m := loadTestModule(t, c)
	dev := c.Device()

	f := function(t, m, "axpb_i32")
	at := f.Attributes()
	t.Logf("axpb_i32: %+v; JIT log %q", at, m.JITLog())
	if f.Name() != "axpb_i32" || at.NumRegs <= 0 || at.MaxThreadsPerBlock < 256 || at.PTXVersion != 80 ||
		at.BinaryVersion != 10*dev.ComputeMajor+dev.ComputeMinor || at.MaxDynamicShared <= 0 {
		t.Errorf("attributes %+v", at)
	}
	occ, err := f.Occupancy(256, 0)
	must(t, err)
	t.Logf("axpb_i32 occupancy at 256 threads: %d blocks per SM", occ)
	if occ < 1 || occ*256 > dev.MaxThreadsPerSM {
		t.Errorf("occupancy %d", occ)
	}
	if n, ok := f.NumParams(); ok && n != 5 {
		t.Errorf("NumParams = %d, want 5", n)
	} else if !ok {
		t.Log("the driver does not report kernel parameters: Launch cannot check them")
	}

	// int32 kernel.
	const n = 1000003
	in := make([]int32, n)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range in {
		in[i] = int32(r.Uint32())
	}
	din, err := UploadNew(c, s, in)
	must(t, err)
	defer din.Free()
	dout, err := AllocSlice[int32](c, n+64)
	must(t, err)
	defer dout.Free()
	must(t, dout.Memset8(s, 0xEE))
	a, b := int32(-7), int32(123456)
	must(t, Launch(f, Dim(BlocksFor(n, 256)), Dim(256), 0, s, dout, din.Ptr(), a, b, uint32(n)))
	out := make([]int32, n+64)
	must(t, Download(s, out, dout))
	for i := 0; i < n; i++ {
		if out[i] != a*in[i]+b {
			t.Fatalf("axpb_i32[%d] = %d, want %d", i, out[i], a*in[i]+b)
		}
	}
	for i := n; i < n+64; i++ {
		if uint32(out[i]) != 0xEEEEEEEE {
			t.Fatalf("kernel wrote past n at %d", i)
		}
	}

	// float64 kernel with a 64-bit count.
	fd := function(t, m, "axpb_f64")
	inF := make([]float64, n)
	for i := range inF {
		inF[i] = r.NormFloat64() * 1e6
	}
	dinF, err := UploadNew(c, s, inF)
	must(t, err)
	defer dinF.Free()
	doutF, err := AllocSlice[float64](c, n)
	must(t, err)
	defer doutF.Free()
	af, bf := 1.0000001, -3.5
	must(t, Launch(fd, Dim(BlocksFor(n, 128)), Dim(128), 0, s, uintptr(doutF.Ptr()), dinF, af, bf, int64(n)))
	outF := make([]float64, n)
	must(t, Download(s, outF, doutF))
	for i := range outF {
		if want := math.FMA(inF[i], af, bf); outF[i] != want {
			t.Fatalf("axpb_f64[%d] = %v, want %v", i, outF[i], want)
		}
	}

	// Every argument type, with 4- and 8-byte parameters interleaved.
	ep := function(t, m, "echo_params")
	echo := alloc64(t, c, 10*8)
	must(t, echo.Memset8(s, 0))
	i32, i64 := int32(-123456789), int64(-(1<<40)-5)
	args := []any{echo, i32, i64, uint32(0xDEADBEEF), float32(3.25),
		uint64(0xFEDCBA9876543210), -2.5e-300, uint8(0xAB), uint16(0xBEEF), true, echo.Ptr()}
	must(t, Launch(ep, Dim(1), Dim(1), 0, s, args...))
	got := make([]uint64, 10)
	must(t, Download(s, got, echo))
	want := []uint64{uint64(int64(i32)), uint64(i64), 0xDEADBEEF, uint64(math.Float32bits(3.25)),
		0xFEDCBA9876543210, math.Float64bits(-2.5e-300), 0xAB, 0xBEEF, 1, uint64(echo.Ptr())}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("echo_params slot %d = %#x, want %#x", i, got[i], want[i])
		}
	}

	// A struct argument (Args), as kernels with many parameters take one.
	es := function(t, m, "echo_struct")
	sa := testArgs{p: echo.Ptr(), n: -77, x: 0.75, m: -(1 << 50)}
	must(t, Launch(es, Dim(1), Dim(1), 0, s, Args(&sa), echo))
	must(t, Download(s, got, echo))
	for i, w := range []uint64{uint64(echo.Ptr()), uint64(int64(sa.n)), uint64(math.Float32bits(sa.x)), uint64(sa.m)} {
		if got[i] != w {
			t.Errorf("echo_struct slot %d = %#x, want %#x", i, got[i], w)
		}
	}

	// A kernel without parameters.
	nop := function(t, m, "noop")
	if n, ok := nop.NumParams(); ok && n != 0 {
		t.Errorf("noop NumParams = %d", n)
	}
	must(t, Launch(nop, Dim(1), Dim(32), 0, s))

	// Zero-copy: the kernel reads pinned host memory through its device
	// address.
	h, err := c.AllocHost(4 * 1000)
	must(t, err)
	defer h.Free()
	hv := unsafeSlice[int32](h.Bytes())
	for i := range hv {
		hv[i] = int32(i)
	}
	hp, err := h.DevicePtr()
	must(t, err)
	must(t, Launch(f, Dim(4), Dim(256), 0, s, dout, hp, int32(2), int32(1), uint32(1000)))
	must(t, Download(s, out[:1000], dout))
	for i := 0; i < 1000; i++ {
		if out[i] != int32(2*i+1) {
			t.Fatalf("zero-copy element %d = %d", i, out[i])
		}
	}

	// A module global.
	g, err := m.Global("gpipe_counter")
	must(t, err)
	if g.Size() != 4 {
		t.Errorf("global size %d", g.Size())
	}
	cnt := make([]uint32, 1)
	must(t, Download(s, cnt, g))
	if cnt[0] != 42 {
		t.Errorf("gpipe_counter = %d, want 42", cnt[0])
	}
	must(t, Upload(s, g, []uint32{7}))
	must(t, Download(s, cnt, g))
	if cnt[0] != 7 {
		t.Errorf("gpipe_counter = %d after writing 7", cnt[0])
	}

	// Mistakes.
	_, err = m.Function("no_such_kernel")
	if e := cudaError(t, err, "CUDA_ERROR_NOT_FOUND"); e.Target != "no_such_kernel" {
		t.Errorf("Target %q", e.Target)
	}
	_, err = m.Global("no_such_global")
	cudaError(t, err, "CUDA_ERROR_NOT_FOUND")
	if err := Launch(f, Dim(1), Dim(2048), 0, s, dout, din, a, b, uint32(n)); err == nil || !strings.Contains(err.Error(), "2048 threads") {
		t.Errorf("block of 2048 threads: %v", err)
	}
	if err := Launch(f, Dim(0), Dim(1), 0, s, dout, din, a, b, uint32(n)); err == nil {
		t.Error("empty grid accepted")
	}
	if err := Launch(f, Dim(1), Dim(1), 0, s, dout, din, 3, b, uint32(n)); err == nil || !strings.Contains(err.Error(), "int32 or int64") {
		t.Errorf("an int argument: %v", err)
	}
	if _, ok := f.NumParams(); ok {
		if err := Launch(f, Dim(1), Dim(1), 0, s, dout, din, int64(a), b, uint32(n)); err == nil || !strings.Contains(err.Error(), "parameter 2 is 4 bytes") {
			t.Errorf("int64 for an int32 parameter: %v", err)
		}
		if err := Launch(f, Dim(1), Dim(1), 0, s, dout, din, a, b); err == nil || !strings.Contains(err.Error(), "takes 5 arguments") {
			t.Errorf("too few arguments: %v", err)
		}
	}
	must(t, s.Synchronize())
}

func TestDynamicSharedMemory(t *testing.T) {
	c := testContext(t)
	s := newStream(t, c)
	m := loadTestModule(t, c)
	f := function(t, m, "smem_probe")
	dev := c.Device()
	out := alloc64(t, c, 4)
	run := func(bytes int) (uint32, error) {
		if err := Launch(f, Dim(1), Dim(256), uint32(bytes), s, out, uint32(bytes/4)); err != nil {
			return 0, err
		}
		v := make([]uint32, 1)
		err := Download(s, v, out)
		return v[0], err
	}
	sum := func(words uint32) uint32 { return words * (words - 1) / 2 }
	v, err := run(16 << 10)
	must(t, err)
	if v != sum(4096) {
		t.Errorf("16 KiB: sum %d, want %d", v, sum(4096))
	}
	big := dev.SharedMemPerBlockOptin - f.Attributes().SharedSizeBytes
	if big <= dev.SharedMemPerBlock {
		t.Skipf("no opt-in shared memory beyond %d bytes", dev.SharedMemPerBlock)
	}
	if _, err := run(big); err == nil || !strings.Contains(err.Error(), "SetMaxDynamicSharedMemory") {
		t.Errorf("launch with %d bytes before opting in: %v", big, err)
	}
	must(t, f.SetMaxDynamicSharedMemory(big))
	if f.Attributes().MaxDynamicShared != big {
		t.Errorf("MaxDynamicShared %d after setting %d", f.Attributes().MaxDynamicShared, big)
	}
	v, err = run(big)
	must(t, err)
	if v != sum(uint32(big/4)) {
		t.Errorf("%d bytes: sum %d, want %d", big, v, sum(uint32(big/4)))
	}
	occ, err := f.Occupancy(256, big)
	must(t, err)
	t.Logf("%d bytes of dynamic shared memory per block: %d blocks per SM", big, occ)
	err = f.SetMaxDynamicSharedMemory(dev.SharedMemPerBlockOptin + 4096)
	t.Logf("asking for too much: %v", err)
	cudaError(t, err, "CUDA_ERROR_INVALID_VALUE")
}

func TestJITErrorLog(t *testing.T) {
	c := testContext(t)
	_, err := c.LoadPTX(brokenPTX)
	if err == nil {
		t.Fatal("broken PTX loaded")
	}
	t.Logf("%v", err)
	e := cudaError(t, err, "")
	if e.Op != "cuModuleLoadDataEx" || e.Log == "" {
		t.Fatalf("no JIT log: %+v", e)
	}
	if !strings.Contains(e.Log, "undeclared_register") && !strings.Contains(strings.ToLower(e.Log), "error") {
		t.Errorf("JIT log %q does not point at the mistake", e.Log)
	}
	if !strings.Contains(err.Error(), e.Log) {
		t.Error("Error() leaves the log out")
	}
	if _, err := c.LoadPTX("not PTX at all"); err == nil {
		t.Error("garbage loaded")
	}
}

// TestConcurrentStreams runs 8 goroutines, each allocating, copying,
// launching and copying back on its own stream, against one shared module;
// goroutines yield between steps so that they move between OS threads.
func TestConcurrentStreams(t *testing.T) {
	c := testContext(t)
	m := loadTestModule(t, c)
	f := function(t, m, "axpb_i32")
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			errs <- func() error {
				s, err := c.NewStream()
				if err != nil {
					return err
				}
				defer s.Destroy()
				r := rand.New(rand.NewPCG(uint64(g), 99))
				for it := 0; it < 30; it++ {
					n := 1 + r.IntN(200000)
					in := make([]int32, n)
					for i := range in {
						in[i] = int32(r.Uint32())
					}
					var hostIn []byte
					if it%2 == 1 { // pinned half the time: asynchronous copies
						h, err := c.AllocHost(4 * n)
						if err != nil {
							return err
						}
						defer h.Free()
						copy(h.Bytes(), alloc.Bytes(in))
						hostIn = h.Bytes()
					} else {
						hostIn = alloc.Bytes(in)
					}
					din, err := c.Alloc(int64(4 * n))
					if err != nil {
						return err
					}
					dout, err := c.Alloc(int64(4 * n))
					if err != nil {
						return err
					}
					runtime.Gosched()
					if err := din.CopyFromHost(s, hostIn); err != nil {
						return err
					}
					runtime.Gosched()
					a, b := int32(g+2), int32(it)
					if err := Launch(f, Dim(BlocksFor(n, 128)), Dim(128), 0, s, dout, din, a, b, uint32(n)); err != nil {
						return err
					}
					runtime.Gosched()
					out := make([]int32, n)
					if err := Download(s, out, dout); err != nil {
						return err
					}
					if err := s.Synchronize(); err != nil {
						return err
					}
					for i := range out {
						if out[i] != a*in[i]+b {
							return errors.New("wrong result under concurrency")
						}
					}
					if err := din.Free(); err != nil {
						return err
					}
					if err := dout.Free(); err != nil {
						return err
					}
				}
				return nil
			}()
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

// TestStickyError faults a kernel in a child process (a fault leaves the
// context unusable for the rest of the process) and checks that the fault
// is an error, named, sticky, and not a crash.
func TestStickyError(t *testing.T) {
	if os.Getenv("GPIPE_GPU_STICKY_CHILD") == "1" {
		stickyChild(t)
		return
	}
	testContext(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestStickyError$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), "GPIPE_GPU_STICKY_CHILD=1")
	out, err := cmd.CombinedOutput()
	t.Logf("child:\n%s", out)
	if err != nil {
		t.Fatalf("child failed: %v", err)
	}
	if !strings.Contains(string(out), "CUDA_ERROR_ILLEGAL_ADDRESS") {
		t.Error("the child did not report CUDA_ERROR_ILLEGAL_ADDRESS")
	}
}

func stickyChild(t *testing.T) {
	c := testContext(t)
	s, err := c.NewStream()
	must(t, err)
	m, err := c.LoadPTX(testPTX)
	must(t, err)
	f := function(t, m, "echo_params")
	// out = 8: the kernel stores to an unmapped address.
	must(t, Launch(f, Dim(1), Dim(1), 0, s, DevicePtr(8), int32(0), int64(0), uint32(0), float32(0),
		uint64(0), 0.0, uint8(0), uint16(0), false, DevicePtr(0)))
	err = s.Synchronize()
	t.Logf("synchronize after the fault: %v", err)
	e := cudaError(t, err, "CUDA_ERROR_ILLEGAL_ADDRESS")
	if !e.Sticky() {
		t.Error("not sticky")
	}
	_, err = c.Alloc(1 << 20)
	t.Logf("an allocation after the fault: %v", err)
	if err == nil {
		t.Error("the context still works after a sticky error")
	}
}

// TestAllDevices touches every GPU through its own context.
func TestAllDevices(t *testing.T) {
	testContext(t)
	devs, err := Devices()
	must(t, err)
	for _, d := range devs {
		c, err := d.Context()
		must(t, err)
		b := alloc64(t, c, 1<<20)
		must(t, b.Memset32(nil, uint32(d.Ordinal)+1))
		v := make([]uint32, 1<<18)
		must(t, Download(nil, v, b))
		for _, x := range v {
			if x != uint32(d.Ordinal)+1 {
				t.Fatalf("%v: memset on the default stream wrong", d)
			}
		}
		must(t, c.Synchronize())
	}
}

func TestPinnedAllocatorDevice(t *testing.T) {
	c := testContext(t)
	s := newStream(t, c)
	pa := NewPinnedAllocator(c)
	checked := memory.NewCheckedAllocator(pa)
	bld := array.NewInt64Builder(checked)
	const n = 1 << 20
	for i := 0; i < n; i++ {
		bld.Append(int64(i)*7 - 3)
	}
	arr := bld.NewInt64Array()
	bld.Release()
	data := arr.Data().Buffers()[1].Bytes()
	if !IsPinned(data) {
		t.Fatal("the arrow array's values are not in pinned memory")
	}
	dev, err := c.Alloc(int64(len(data)))
	must(t, err)
	defer dev.Free()
	must(t, dev.CopyFromHost(s, data)) // asynchronous: data is pinned
	vals := alloc.Slice[int64](pa, n)
	must(t, Download(s, vals, dev))
	must(t, s.Synchronize())
	for i, v := range vals {
		if v != int64(i)*7-3 {
			t.Fatalf("value %d = %d", i, v)
		}
	}
	alloc.Free(pa, vals)
	arr.Release()
	checked.AssertSize(t, 0)
	st := pa.Stats()
	t.Logf("pinned allocator: %+v", st)
	if st.InUse != 0 || st.Pinned == 0 || st.Fallback != 0 || pa.Err() != nil {
		t.Errorf("stats %+v, err %v", st, pa.Err())
	}
	must(t, pa.Close())
	if st := pa.Stats(); st.Pinned != 0 {
		t.Errorf("pinned memory left after Close: %+v", st)
	}
	if IsPinned(data) {
		t.Error("freed memory still registered as pinned")
	}
}

// Copy benchmarks: 256 MiB per copy; b.SetBytes gives MB/s and the GB/s
// metric is the same figure in 10^9 bytes per second.
const benchBytes = 256 << 20

func benchCopy(b *testing.B, toDevice, pinned bool) {
	c := testContext(b)
	s := newStream(b, c)
	dev, err := c.Alloc(benchBytes)
	must(b, err)
	defer dev.Free()
	var host []byte
	if pinned {
		h, err := c.AllocHost(benchBytes)
		must(b, err)
		defer h.Free()
		host = h.Bytes()
	} else {
		host = make([]byte, benchBytes)
	}
	for i := range host {
		host[i] = byte(i)
	}
	copyOnce := func() {
		if toDevice {
			must(b, dev.CopyFromHost(s, host))
		} else {
			must(b, dev.CopyToHost(s, host))
		}
		must(b, s.Synchronize())
	}
	copyOnce()
	b.SetBytes(benchBytes)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		copyOnce()
	}
	b.StopTimer()
	b.ReportMetric(float64(benchBytes)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
}

func BenchmarkH2DPinned(b *testing.B)   { benchCopy(b, true, true) }
func BenchmarkH2DPageable(b *testing.B) { benchCopy(b, true, false) }
func BenchmarkD2HPinned(b *testing.B)   { benchCopy(b, false, true) }
func BenchmarkD2HPageable(b *testing.B) { benchCopy(b, false, false) }

// BenchmarkLaunch is the host cost of one launch of an empty kernel.
func BenchmarkLaunch(b *testing.B) {
	c := testContext(b)
	s := newStream(b, c)
	m := loadTestModule(b, c)
	f := function(b, m, "noop")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := Launch(f, Dim(1), Dim(32), 0, s); err != nil {
			b.Fatal(err)
		}
		if i%1024 == 1023 {
			must(b, s.Synchronize())
		}
	}
	must(b, s.Synchronize())
}

// BenchmarkLaunchArgs is the same with five arguments to pack.
func BenchmarkLaunchArgs(b *testing.B) {
	c := testContext(b)
	s := newStream(b, c)
	m := loadTestModule(b, c)
	f := function(b, m, "axpb_i32")
	buf, err := c.Alloc(4096)
	must(b, err)
	defer buf.Free()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := Launch(f, Dim(1), Dim(32), 0, s, buf, buf, int32(1), int32(2), uint32(32)); err != nil {
			b.Fatal(err)
		}
		if i%1024 == 1023 {
			must(b, s.Synchronize())
		}
	}
	must(b, s.Synchronize())
}
