package gpuop

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"github.com/gpipe/gpipe/gpu"
)

func TestPinnedClass(t *testing.T) {
	for _, c := range []struct{ bytes, class int }{
		{0, 4096}, {1, 4096}, {4096, 4096}, {4097, 8192}, {3 << 20, 4 << 20}, {4 << 20, 4 << 20},
	} {
		if got := pinnedClass(c.bytes); got != c.class {
			t.Errorf("pinnedClass(%d) = %d, want %d", c.bytes, got, c.class)
		}
	}
}

// TestCopyParallel copies lengths around the pieces' size, each byte
// checked, into destinations filled with another pattern first.
func TestCopyParallel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, copyPiece - 1, copyPiece, copyPiece + 1, 7*copyPiece + 12345} {
		src := make([]byte, n)
		for i := range src {
			src[i] = byte(rng.Uint32())
		}
		dst := bytes.Repeat([]byte{0xa5}, n+3)
		copyParallel(dst[:n], src)
		if !bytes.Equal(dst[:n], src) {
			t.Errorf("%d bytes: the copy differs", n)
		}
		if !bytes.Equal(dst[n:], []byte{0xa5, 0xa5, 0xa5}) {
			t.Errorf("%d bytes: written past the end", n)
		}
	}
}

// BenchmarkGPUHostRead reads a result's 19 MB (Kronecker 22's ranks) a
// message at a time, as a Flight server's encoders do, from pinned memory
// of the pool (PinnedResults) and from Go memory: whether the CPU reads
// pinned memory as fast (it is mapped cached).
func BenchmarkGPUHostRead(b *testing.B) {
	c, err := gpu.Default()
	if err != nil {
		b.Skipf("no GPU: %v", err)
	}
	const size, msg = 19 << 20, 1 << 20
	h, err := c.AllocHost(size)
	if err != nil {
		b.Fatal(err)
	}
	defer h.Free()
	for _, src := range []struct {
		name string
		mem  []byte
	}{{"pinned", h.Bytes()}, {"go", make([]byte, size)}} {
		b.Run(src.name, func(b *testing.B) {
			for i := range src.mem {
				src.mem[i] = byte(i)
			}
			dst := make([]byte, msg)
			b.SetBytes(size)
			for b.Loop() {
				for off := 0; off < size; off += msg {
					copy(dst, src.mem[off:off+msg])
				}
			}
		})
	}
}

// TestGPUDownloadWaits: downloadAll returns once every destination holds
// its data, pinned ones (written by an asynchronous DMA) and Go memory
// alike, alone and together: 64 MB each, poisoned first and compared as
// soon as it returns.
func TestGPUDownloadWaits(t *testing.T) {
	b := testGPU(t)
	s, err := b.ctx.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Destroy()
	const n = 16 << 20 // uint32s: 64 MB
	want := make([]uint32, n)
	for i := range want {
		want[i] = uint32(i)*2654435761 + 1
	}
	src, err := gpu.UploadNew(b.ctx, s, want)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Free()
	h, err := b.ctx.AllocHost(4 * n)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Free()
	pinnedDst := unsafe.Slice((*uint32)(unsafe.Pointer(&h.Bytes()[0])), n)
	goDst := make([]uint32, n)
	for _, c := range []struct {
		name string
		dsts [][]uint32
	}{{"pinned", [][]uint32{pinnedDst}}, {"go", [][]uint32{goDst}}, {"both", [][]uint32{pinnedDst, goDst}}} {
		var copies []HostCopy
		for _, d := range c.dsts {
			for i := range d {
				d[i] = 0xa5a5a5a5
			}
			copies = append(copies, HostCopyOf(d, src))
		}
		if err := b.DownloadAll(s, copies...); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		for j, d := range c.dsts {
			if i := slices.IndexFunc(d, func(v uint32) bool { return v == 0xa5a5a5a5 }); i >= 0 || !slices.Equal(d, want) {
				t.Fatalf("%s: destination %d differs after downloadAll returned (first poisoned element %d)", c.name, j, i)
			}
		}
	}
}

// TestGPUPinnedPoolEvicts: a buffer given back to a full pool stays, and
// buffers of other sizes make room for it.
func TestGPUPinnedPoolEvicts(t *testing.T) {
	b := testGPU(t)
	b.pins.keep = 3 << 20
	var bufs []*gpu.HostBuffer
	for _, size := range []int{1 << 20, 1 << 20, 1 << 20, 2 << 20} {
		h, err := b.ctx.AllocHost(size)
		if err != nil {
			t.Fatal(err)
		}
		bufs = append(bufs, h)
	}
	for _, h := range bufs {
		b.pins.put(h)
	}
	p := &b.pins
	if len(p.free[1<<20]) != 1 || len(p.free[2<<20]) != 1 || p.kept != 3<<20 {
		t.Fatalf("kept %d buffers of 1 MiB and %d of 2 MiB (%d bytes), want one each (3 MiB)", len(p.free[1<<20]), len(p.free[2<<20]), p.kept)
	}
}
