package gpu

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/gpipe/gpipe/internal/usererr"
)

// CUdevice_P2PAttribute values (cuda.h).
const (
	p2pPerformanceRank = 0x01
	p2pAccessSupported = 0x02
	p2pNativeAtomics   = 0x03
)

// PeerLink is what the driver says of one GPU's path to another's memory.
type PeerLink struct {
	// Access: the first GPU can read and write the second's memory
	// directly, once its context has enabled it (Context.EnablePeerAccess).
	Access bool `json:"access"`
	// Atomics: atomic operations over the link are native.
	Atomics bool `json:"atomics"`
	// PerformanceRank is the driver's relative rank of the link, for
	// comparing the links of one machine with each other; it has no unit.
	PerformanceRank int `json:"performance_rank"`
}

// CanAccessPeer reports whether a can access b's memory directly
// (cuDeviceCanAccessPeer). A GPU always reaches its own memory.
func CanAccessPeer(a, b *Device) (bool, error) {
	if a == nil || b == nil {
		return false, errors.New("gpu: CanAccessPeer of a nil device")
	}
	if a == b {
		return true, nil
	}
	if err := needDriverSymbol(drv.deviceCanAccessPeer, "cuDeviceCanAccessPeer"); err != nil {
		return false, err
	}
	var v int32
	if r := ccall(drv.deviceCanAccessPeer, uintptr(unsafe.Pointer(&v)), uintptr(a.handle), uintptr(b.handle)); r != success {
		return false, newError("cuDeviceCanAccessPeer", r)
	}
	return v != 0, nil
}

// P2PLink is the driver's description of the link from a to b
// (cuDeviceGetP2PAttribute), for two different GPUs.
func P2PLink(a, b *Device) (PeerLink, error) {
	if a == nil || b == nil {
		return PeerLink{}, errors.New("gpu: P2PLink of a nil device")
	}
	if a == b {
		return PeerLink{}, fmt.Errorf("gpu: P2PLink of GPU %d with itself", a.Ordinal)
	}
	if err := needDriverSymbol(drv.deviceGetP2PAttribute, "cuDeviceGetP2PAttribute"); err != nil {
		return PeerLink{}, err
	}
	attr := func(which int) (int, error) {
		var v int32
		if r := ccall(drv.deviceGetP2PAttribute, uintptr(unsafe.Pointer(&v)), uintptr(which),
			uintptr(a.handle), uintptr(b.handle)); r != success {
			return 0, newError("cuDeviceGetP2PAttribute", r)
		}
		return int(v), nil
	}
	var l PeerLink
	access, err := attr(p2pAccessSupported)
	if err != nil {
		return l, err
	}
	atomics, err := attr(p2pNativeAtomics)
	if err != nil {
		return l, err
	}
	rank, err := attr(p2pPerformanceRank)
	if err != nil {
		return l, err
	}
	return PeerLink{Access: access != 0, Atomics: atomics != 0, PerformanceRank: rank}, nil
}

// EnablePeerAccess lets kernels and copies in c reach peer's memory
// directly (cuCtxEnablePeerAccess, c current). Access is one way: peer
// reaches c's memory only after peer.EnablePeerAccess(c). Enabling it
// twice, or for c itself, does nothing.
func (c *Context) EnablePeerAccess(peer *Context) error {
	if c == nil || peer == nil {
		return errors.New("gpu: EnablePeerAccess with a nil context")
	}
	if c == peer {
		return nil
	}
	if err := needDriverSymbol(drv.ctxEnablePeerAccess, "cuCtxEnablePeerAccess"); err != nil {
		return err
	}
	err := ctxCall(c, "cuCtxEnablePeerAccess", drv.ctxEnablePeerAccess, peer.h, 0)
	switch {
	case err == nil, IsCode(err, CodePeerAccessEnabled):
		return nil
	case IsCode(err, CodePeerAccessUnsupported), IsCode(err, CodeTooManyPeers):
		return backendError(fmt.Sprintf("GPU %d (%s) cannot access the memory of GPU %d (%s) directly (%v)",
			c.dev.Ordinal, c.dev.Name, peer.dev.Ordinal, peer.dev.Name, err),
			"gpipe devices shows which GPUs reach each other; use GPUs that do", err)
	}
	return err
}

// CopyPeer copies bytes from src in srcCtx's GPU to dst in dstCtx's, on
// stream s, asynchronously: cuMemcpyPeerAsync, or cuMemcpyDtoDAsync when
// both are one context. s (nil: the default stream of srcCtx) must belong
// to one of the two contexts. Without peer access the driver stages the
// copy through the host; with it (EnablePeerAccess) the copy goes over
// the link.
func CopyPeer(s *Stream, dst DevicePtr, dstCtx *Context, src DevicePtr, srcCtx *Context, bytes int64) error {
	if dstCtx == nil || srcCtx == nil {
		return errors.New("gpu: CopyPeer with a nil context")
	}
	if bytes < 0 {
		return fmt.Errorf("gpu: CopyPeer of %d bytes", bytes)
	}
	on := srcCtx
	if s != nil {
		if s.h == 0 {
			return errDestroyed
		}
		if s.ctx != dstCtx && s.ctx != srcCtx {
			return errors.New("gpu: CopyPeer on a stream of " + s.ctx.dev.String() + ", which is neither the source's nor the destination's GPU")
		}
		on = s.ctx
	}
	if bytes == 0 {
		return nil
	}
	if dstCtx == srcCtx {
		return ctxCall(on, "cuMemcpyDtoDAsync_v2", drv.memcpyDtoDAsync, uintptr(dst), uintptr(src), uintptr(bytes), s.handle())
	}
	if err := needDriverSymbol(drv.memcpyPeerAsync, "cuMemcpyPeerAsync"); err != nil {
		return err
	}
	return ctxCall(on, "cuMemcpyPeerAsync", drv.memcpyPeerAsync,
		uintptr(dst), dstCtx.h, uintptr(src), srcCtx.h, uintptr(bytes), s.handle())
}

// needDriverSymbol says, as a usererr.Backend error, that the driver lacks
// an optional function; nil when fn is bound.
func needDriverSymbol(fn uintptr, name string) error {
	if fn != 0 {
		return nil
	}
	return usererr.New(usererr.Backend,
		fmt.Sprintf("the NVIDIA driver (CUDA %s) lacks %s, which work on several GPUs needs", versionString(drv.version), name),
		"update the NVIDIA driver, or use one GPU")
}
