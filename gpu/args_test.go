package gpu

import (
	"strings"
	"structs"
	"testing"
	"unsafe"
)

// testArgs lays out as `struct { const unsigned* p; int n; float x; long long m; }`.
type testArgs struct {
	_ structs.HostLayout
	p DevicePtr
	n int32
	x float32
	m int64
}

// TestArgsPack packs a struct argument between plain ones: its bytes are
// the struct's, the parameter points at them, the sizes are checked
// against the kernel's, and the block is as the pool expects afterwards.
func TestArgsPack(t *testing.T) {
	a := testArgs{p: 0x1234_5678_9abc, n: -7, x: 1.5, m: 1 << 40}
	fn := &Function{name: "k", params: []int{4, 24, 8}}
	pb := paramPool.Get().(*paramBlock)
	defer paramPool.Put(pb)
	if err := pb.pack(fn, []any{int32(3), Args(&a), DevicePtr(9)}); err != nil {
		t.Fatal(err)
	}
	got := *(*testArgs)(pb.ptrs[1])
	if got != a || pb.vals[0] != 3 || pb.vals[2] != 9 || pb.ptrs[0] != unsafe.Pointer(&pb.vals[0]) {
		t.Fatalf("packed %+v, vals %v", got, pb.vals[:3])
	}
	a.n = 99 // Args copied the struct: a later change is not in the launch
	if (*testArgs)(pb.ptrs[1]).n != -7 {
		t.Fatal("the struct's bytes were not copied")
	}
	pb.pointAtVals(3)
	if pb.ptrs[1] != unsafe.Pointer(&pb.vals[1]) {
		t.Fatal("parameter 1 still points at the struct bytes")
	}
	fn.params = []int{4, 16, 8}
	err := pb.pack(fn, []any{int32(3), Args(&a), DevicePtr(9)})
	if err == nil || !strings.Contains(err.Error(), "parameter 1 is 16 bytes, but argument 1 is a gpu.testArgs (24 bytes)") {
		t.Fatalf("size mismatch: %v", err)
	}
}

// TestArgsLimits: struct arguments beyond CUDA's 4 KiB of parameters are
// refused; a struct that cannot lay out as C does panics at Args.
func TestArgsLimits(t *testing.T) {
	type big struct {
		_ structs.HostLayout
		v [300]uint64
	}
	var b big
	pb := paramPool.Get().(*paramBlock)
	defer paramPool.Put(pb)
	err := pb.pack(&Function{name: "k"}, []any{Args(&b), Args(&b)})
	if err == nil || !strings.Contains(err.Error(), "more than 4096 bytes") {
		t.Fatalf("4.8 KiB of structs: %v", err)
	}
	pb.pointAtVals(2)
	type noLayout struct{ N int32 }
	type withPointer struct {
		_ structs.HostLayout
		p *int32
	}
	type withInt struct {
		_ structs.HostLayout
		n int
	}
	for name, f := range map[string]func(){
		"noLayout":    func() { Args(&noLayout{}) },
		"withPointer": func() { Args(&withPointer{}) },
		"withInt":     func() { Args(&withInt{}) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Args(%s) did not panic", name)
				}
			}()
			f()
		}()
	}
}

// A nil buffer (an absent optional array) is address 0 in an argument
// struct, as Launch passes a nil *DeviceBuffer.
func TestNilBufferPtr(t *testing.T) {
	var b *DeviceBuffer
	if b.Ptr() != 0 {
		t.Fatalf("nil buffer's Ptr = %#x", b.Ptr())
	}
}
