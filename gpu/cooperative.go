package gpu

import (
	"fmt"
	"sync"
)

// Cooperative launches: a grid whose blocks all run at once, so that they
// may wait for each other (a grid-wide barrier). The driver refuses a
// cooperative grid larger than the GPU holds at once
// (CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE), rather than run blocks that a
// barrier would wait on forever; a plain launch of a grid sized by
// occupancy has no such promise (another stream's kernel may hold the
// SMs). Bound here, not in driver.go's table, since only the persistent
// kernels need it and a driver without it still serves every other
// kernel.

// CodeCooperativeTooLarge is CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE: a
// cooperative grid has more blocks than the GPU runs at once.
const CodeCooperativeTooLarge = 720

var cooperative struct {
	once  sync.Once
	entry uintptr
}

// cooperativeEntry is cuLaunchCooperativeKernel, looked up once.
func cooperativeEntry() (uintptr, error) {
	cooperative.once.Do(func() {
		if drv.lib != 0 {
			cooperative.entry = dlsym(drv.lib, "cuLaunchCooperativeKernel")
		}
	})
	if cooperative.entry == 0 {
		return 0, fmt.Errorf("gpu: the NVIDIA driver has no cuLaunchCooperativeKernel")
	}
	return cooperative.entry, nil
}

// LaunchCooperative queues fn as Launch does, as a cooperative grid: every
// block is resident at once, or the launch fails (CodeCooperativeTooLarge).
// CooperativeGrid is the most blocks it takes. The GPU must support
// cooperative launches (DeviceAttributes.CooperativeLaunch).
func LaunchCooperative(fn *Function, grid, block [3]uint32, sharedMem uint32, s *Stream, args ...any) error {
	if fn != nil && fn.mod != nil && fn.mod.ctx != nil && !fn.mod.ctx.dev.CooperativeLaunch {
		return fmt.Errorf("gpu: kernel %s: %s does not support cooperative launches", fn.name, fn.mod.ctx.dev.Name)
	}
	return launch(fn, true, grid, block, sharedMem, s, args)
}

// CooperativeGrid is the most blocks of blockSize threads, each with
// dynSmem bytes of dynamic shared memory, that a cooperative launch of f
// runs: its occupancy on one SM times the SMs.
func (f *Function) CooperativeGrid(blockSize, dynSmem int) (int, error) {
	perSM, err := f.Occupancy(blockSize, dynSmem)
	if err != nil {
		return 0, err
	}
	return perSM * f.mod.ctx.dev.SMs, nil
}
