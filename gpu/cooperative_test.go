package gpu

import (
	"errors"
	"testing"
)

// A cooperative launch runs the kernel like Launch, and the driver refuses
// a grid larger than the GPU holds at once, which CooperativeGrid sizes.
func TestLaunchCooperative(t *testing.T) {
	c := testContext(t)
	if !c.Device().CooperativeLaunch {
		t.Skipf("%s does not support cooperative launches", c.Device().Name)
	}
	s := newStream(t, c)
	m := loadTestModule(t, c)
	f := function(t, m, "axpb_i32")
	most, err := f.CooperativeGrid(256, 0)
	must(t, err)
	if most < c.Device().SMs {
		t.Fatalf("CooperativeGrid = %d blocks, fewer than the %d SMs", most, c.Device().SMs)
	}
	n := most * 256
	in := make([]int32, n)
	for i := range in {
		in[i] = int32(i*7 - 3)
	}
	din, err := UploadNew(c, s, in)
	must(t, err)
	defer din.Free()
	dout, err := AllocSlice[int32](c, n)
	must(t, err)
	defer dout.Free()
	must(t, dout.Memset8(s, 0xEE))
	must(t, LaunchCooperative(f, Dim(uint32(most)), Dim(256), 0, s, dout, din.Ptr(), int32(3), int32(-1), uint32(n)))
	out := make([]int32, n)
	must(t, Download(s, out, dout))
	for i := range out {
		if want := 3*in[i] - 1; out[i] != want {
			t.Fatalf("out[%d] = %d, want %d", i, out[i], want)
		}
	}
	err = LaunchCooperative(f, Dim(uint32(most+1)), Dim(256), 0, s, dout, din.Ptr(), int32(3), int32(-1), uint32(n))
	var ge *Error
	if !errors.As(err, &ge) || ge.Code != CodeCooperativeTooLarge || ge.Op != "cuLaunchCooperativeKernel" {
		t.Fatalf("a cooperative grid of %d blocks, one past CooperativeGrid: err %v, want CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE", most+1, err)
	}
	must(t, s.Synchronize())
}
