package pipeline

import (
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/gpipe/gpipe/gpu"
	"github.com/gpipe/gpipe/internal/usererr"
	"github.com/gpipe/gpipe/operators/gpuop"
	"github.com/gpipe/gpipe/operators/multigpu"
)

var sharedMulti struct {
	mu      sync.Mutex
	byCount map[int]*multigpu.MultiGPU
}

// SharedMultiGPU is the process's backend over gpus GPUs (0: every usable
// GPU), opened once per count: the first is SharedGPU's, the others the
// next usable ones by ordinal; NCCL's communicators over them where libnccl
// loads, else peer copies (or as $GPIPE_TRANSPORT says). It is nil, without an error, where only one GPU
// would take part.
func SharedMultiGPU(gpus int) (*multigpu.MultiGPU, error) {
	transport, err := chosenTransport()
	if err != nil {
		return nil, err
	}
	first, err := SharedGPU()
	if err != nil {
		return nil, err
	}
	usable, err := multiGPUDevices(gpus)
	if err != nil || len(usable) < 2 {
		return nil, err
	}
	gpus = len(usable)
	sharedMulti.mu.Lock()
	defer sharedMulti.mu.Unlock()
	if m := sharedMulti.byCount[gpus]; m != nil {
		return m, nil
	}
	backends := []*gpuop.GPU{first}
	var ctxs []*gpu.Context
	for i, d := range usable {
		c, err := d.Context()
		if err != nil {
			return nil, err
		}
		ctxs = append(ctxs, c)
		if i > 0 {
			backends = append(backends, gpuop.NewGPU(c))
		}
	}
	// Peer access lets the peer copies (the transport without NCCL) go
	// GPU to GPU; NCCL sets up its own.
	for _, a := range ctxs {
		for _, b := range ctxs {
			if ok, err := gpu.CanAccessPeer(a.Device(), b.Device()); a != b && err == nil && ok {
				a.EnablePeerAccess(b)
			}
		}
	}
	var m *multigpu.MultiGPU
	if transport == "peer" {
		m = multigpu.NewMultiGPU(backends, nil, "")
	} else {
		var comms []*gpu.Comm
		_, nerr := gpu.LoadNCCL()
		if nerr == nil {
			comms, nerr = gpu.NewComms(ctxs)
		}
		switch {
		case nerr == nil:
			m = multigpu.NewMultiGPU(backends, comms, "")
		case transport == "nccl":
			return nil, usererr.New(usererr.Backend, fmt.Sprintf("%s=nccl, but NCCL cannot carry the exchanges: %v", transportEnv, nerr),
				fmt.Sprintf("install NCCL or set GPIPE_NCCL (docs/multi-gpu.md), or unset %s to fall back to the driver's peer copies", transportEnv))
		default:
			m = multigpu.NewMultiGPU(backends, nil, nerr.Error())
		}
	}
	// GPIPE_TRANSPORT=nccl keeps every exchange on NCCL, BFS's bitmaps too.
	m.PeerStores = transport != "nccl"
	if sharedMulti.byCount == nil {
		sharedMulti.byCount = map[int]*multigpu.MultiGPU{}
	}
	sharedMulti.byCount[gpus] = m
	return m, nil
}

// multiGPUDevices are the GPUs a run over gpus GPUs (0: every usable one)
// takes: SharedGPU's first, then the other usable ones by ordinal. Asking
// for more than there are is a usage error that lists them.
func multiGPUDevices(gpus int) ([]*gpu.Device, error) {
	first, err := SharedGPU()
	if err != nil {
		return nil, err
	}
	info, err := gpu.Available()
	if err != nil {
		return nil, err
	}
	usable := []*gpu.Device{first.Device()}
	for _, d := range info.Devices {
		if d.Ordinal != first.Device().Ordinal && d.Supported() == nil {
			usable = append(usable, d)
		}
	}
	if gpus == 0 {
		return usable, nil
	}
	if gpus > len(usable) {
		var names []string
		for _, d := range usable {
			names = append(names, fmt.Sprintf("%d (%s)", d.Ordinal, d.Name))
		}
		return nil, usererr.New(usererr.Usage, fmt.Sprintf("--gpus %d: %d usable GPUs here: %s", gpus, len(usable), strings.Join(names, ", ")),
			fmt.Sprintf("use --gpus %d or fewer (gpipe devices lists them)", len(usable)))
	}
	return usable[:gpus], nil
}

// transportEnv chooses how several GPUs exchange values: unset, NCCL
// where it loads and the driver's peer copies elsewhere; "nccl", NCCL or
// an error, and NCCL for BFS's bitmaps too (which otherwise go by peer
// stores where the GPUs reach each other: MultiGPU.PeerStores); "peer", the
// peer copies without NCCL.
const transportEnv = "GPIPE_TRANSPORT"

// chosenTransport is transportEnv's value: "" (unset), "nccl" or "peer".
func chosenTransport() (string, error) {
	switch v := os.Getenv(transportEnv); v {
	case "", "nccl", "peer":
		return v, nil
	default:
		return "", usererr.New(usererr.Usage, fmt.Sprintf("%s=%q is not a transport", transportEnv, v),
			fmt.Sprintf("set %s to nccl or peer, or unset it", transportEnv))
	}
}
