package gpu

// NCCL, the collectives between GPUs, loaded at run time like the driver:
// where libnccl.so.2 is looked for, its version, communicators over the
// GPUs of this process, and the collectives and point-to-point calls the
// multi-GPU operators exchange their partitions' state with.
// docs/multi-gpu.md says why one process drives all GPUs.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"unsafe"

	"github.com/gpipe/gpipe/internal/usererr"
)

// MinNCCLVersion is the oldest NCCL gpipe accepts, as ncclGetVersion codes
// it (10000*major + 100*minor + patch): 2.18.0.
const MinNCCLVersion = 21800

// ncclSoname is the library's soname, what NCCL's packages and pip's
// nvidia-nccl-cu12 and -cu13 wheels install.
const ncclSoname = "libnccl.so.2"

// NCCLInfo is the loaded NCCL.
type NCCLInfo struct {
	Version string `json:"version"` // "2.21.5"
	Path    string `json:"path"`    // the file loaded, where the loader says
}

// ncclAPI holds NCCL's function addresses, bound once by loadNCCL.
type ncclAPI struct {
	getVersion, getErrorString, getLastError uintptr
	commInitAll, commDestroy                 uintptr
	groupStart, groupEnd                     uintptr
	allGather, broadcast, allReduce          uintptr
	send, recv                               uintptr
}

var (
	nccl       ncclAPI
	ncclOnce   sync.Once
	ncclLoaded *NCCLInfo
	ncclErr    error
)

// LoadNCCL loads NCCL (once; later calls return the same answer). It looks
// for libnccl.so.2 where $GPIPE_NCCL says (the library, or the folder that
// holds it), else through the dynamic loader's path, else in pip's NCCL
// wheels (nvidia/nccl/lib/ in Python's site-packages), and needs NCCL 2.18
// or newer. The error, a usererr.Backend error, names what was tried. It
// needs no GPU.
func LoadNCCL() (*NCCLInfo, error) {
	ncclOnce.Do(func() { ncclLoaded, ncclErr = loadNCCL(defaultNCCLSearch()) })
	return ncclLoaded, ncclErr
}

const fixNoNCCL = "install NCCL 2.18 or newer (pip install nvidia-nccl-cu12, or the distribution's libnccl2), " +
	"or set GPIPE_NCCL to libnccl.so.2 or the folder that holds it"

func loadNCCL(s ncclSearch) (*NCCLInfo, error) {
	if !platformSupported {
		_, err := dlopen(ncclSoname)
		return nil, usererr.New(usererr.Backend, fmt.Sprintf("no NCCL on this platform (%v)", err), "use one GPU")
	}
	lib, path, err := s.find()
	if err != nil {
		return nil, err
	}
	n := ncclAPI{getVersion: dlsym(lib, "ncclGetVersion")}
	if n.getVersion == 0 {
		return nil, usererr.New(usererr.Backend, fmt.Sprintf("%s is not NCCL (it has no ncclGetVersion)", path), fixNoNCCL)
	}
	var code int32
	if r := ccall(n.getVersion, uintptr(unsafe.Pointer(&code))); r != success {
		return nil, usererr.New(usererr.Backend, fmt.Sprintf("%s does not report its version (ncclGetVersion: error %d)", path, r), fixNoNCCL)
	}
	version, err := checkNCCLVersion(int(code), path)
	if err != nil {
		return nil, err
	}
	for _, b := range []struct {
		to   *uintptr
		name string
	}{
		{&n.getErrorString, "ncclGetErrorString"},
		{&n.getLastError, "ncclGetLastError"},
		{&n.commInitAll, "ncclCommInitAll"},
		{&n.commDestroy, "ncclCommDestroy"},
		{&n.groupStart, "ncclGroupStart"},
		{&n.groupEnd, "ncclGroupEnd"},
		{&n.allGather, "ncclAllGather"},
		{&n.broadcast, "ncclBroadcast"},
		{&n.allReduce, "ncclAllReduce"},
		{&n.send, "ncclSend"},
		{&n.recv, "ncclRecv"},
	} {
		if *b.to = dlsym(lib, b.name); *b.to == 0 {
			return nil, usererr.New(usererr.Backend, fmt.Sprintf("%s (NCCL %s) lacks %s", path, version, b.name), fixNoNCCL)
		}
	}
	nccl = n
	return &NCCLInfo{Version: version, Path: path}, nil
}

// ncclVersionString is ncclGetVersion's code as "2.21.5". NCCL before 2.9
// coded it as 1000*major + 100*minor + patch.
func ncclVersionString(code int) string {
	if code < 10000 {
		return fmt.Sprintf("%d.%d.%d", code/1000, code%1000/100, code%100)
	}
	return fmt.Sprintf("%d.%d.%d", code/10000, code%10000/100, code%100)
}

// checkNCCLVersion is the version string of the NCCL at path, or the error
// that says it is too old.
func checkNCCLVersion(code int, path string) (string, error) {
	v := ncclVersionString(code)
	if code < MinNCCLVersion {
		return v, usererr.New(usererr.Backend,
			fmt.Sprintf("%s is NCCL %s, but gpipe needs NCCL %s or newer", path, v, ncclVersionString(MinNCCLVersion)),
			"install a newer NCCL (pip install -U nvidia-nccl-cu12) or point GPIPE_NCCL at one")
	}
	return v, nil
}

// ncclSearch is how LoadNCCL looks for libnccl.so.2: the environment, the
// file system and the loader, as functions so that tests can replace them.
type ncclSearch struct {
	getenv func(string) string
	glob   func(pattern string) ([]string, error)
	isDir  func(path string) (dir, exists bool)
	open   func(path string) (uintptr, error)
	// mapped is the file the loader opened for a library opened by soname,
	// "" when it cannot tell.
	mapped func(soname string) string
}

func defaultNCCLSearch() ncclSearch {
	return ncclSearch{
		getenv: os.Getenv,
		glob:   filepath.Glob,
		isDir: func(p string) (bool, bool) {
			fi, err := os.Stat(p)
			return err == nil && fi.IsDir(), err == nil
		},
		open:   dlopen,
		mapped: mappedFile,
	}
}

// find opens libnccl.so.2: the one $GPIPE_NCCL names (and no other, so that
// a wrong setting is an error and not a silent fallback), else the
// loader's, else the first pip wheel's.
func (s ncclSearch) find() (lib uintptr, path string, err error) {
	if v := s.getenv("GPIPE_NCCL"); v != "" {
		path = v
		if dir, _ := s.isDir(v); dir {
			path = filepath.Join(v, ncclSoname)
		}
		lib, err := s.open(path)
		if err != nil {
			return 0, "", usererr.New(usererr.Backend, fmt.Sprintf("GPIPE_NCCL=%s: %s does not load (%v)", v, path, err),
				"point GPIPE_NCCL at libnccl.so.2 (NCCL 2.18 or newer) or the folder that holds it, or unset it")
		}
		return lib, path, nil
	}
	lib, loaderErr := s.open(ncclSoname)
	if loaderErr == nil {
		if path = s.mapped(ncclSoname); path == "" {
			path = ncclSoname
		}
		return lib, path, nil
	}
	var unloadable []string
	roots := s.pythonRoots()
	for _, dir := range s.sitePackages(roots) {
		path := filepath.Join(dir, "nvidia", "nccl", "lib", ncclSoname)
		if _, exists := s.isDir(path); !exists {
			continue
		}
		lib, err := s.open(path)
		if err == nil {
			return lib, path, nil
		}
		unloadable = append(unloadable, fmt.Sprintf("%s (%v)", path, err))
	}
	problem := fmt.Sprintf("NCCL not found: GPIPE_NCCL is unset, %s is not on the loader's path (%v), "+
		"and no python3*/site-packages or dist-packages under %s holds nvidia/nccl/lib/%s (pip's nvidia-nccl wheels)",
		ncclSoname, loaderErr, strings.Join(roots, ", "), ncclSoname)
	if len(unloadable) > 0 {
		problem += "; found but not loadable: " + strings.Join(unloadable, ", ")
	}
	return 0, "", usererr.New(usererr.Backend, problem, fixNoNCCL)
}

// pythonRoots are the lib folders whose python3* folders may hold pip's
// wheels, in Python's own order of precedence: the active virtual
// environment, the user's site-packages, conda, then the system's.
func (s ncclSearch) pythonRoots() []string {
	var roots []string
	if v := s.getenv("VIRTUAL_ENV"); v != "" {
		roots = append(roots, filepath.Join(v, "lib"))
	}
	if h := s.getenv("HOME"); h != "" {
		roots = append(roots, filepath.Join(h, ".local", "lib"))
	}
	return append(roots, "/opt/conda/lib", "/usr/local/lib", "/usr/lib")
}

// sitePackages are the python3*/site-packages and python3*/dist-packages
// folders under roots, in the roots' order, each once.
func (s ncclSearch) sitePackages(roots []string) []string {
	var dirs []string
	seen := map[string]bool{}
	for _, root := range roots {
		for _, kind := range []string{"site-packages", "dist-packages"} {
			matches, _ := s.glob(filepath.Join(root, "python3*", kind))
			for _, m := range matches {
				if !seen[m] {
					seen[m] = true
					dirs = append(dirs, m)
				}
			}
		}
	}
	return dirs
}

// mappedFile is the file mapped into this process whose name starts with
// soname (libnccl.so.2 may be a link to libnccl.so.2.21.5), from
// /proc/self/maps; "" when there is none.
func mappedFile(soname string) string {
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return ""
	}
	sc := bufio.NewScanner(bytes.NewReader(maps))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 6 && strings.HasPrefix(filepath.Base(f[5]), soname) {
			return f[5]
		}
	}
	return ""
}

// NCCLType is an element type of a collective: ncclDataType_t.
type NCCLType int

const (
	NCCLInt8    NCCLType = 0
	NCCLUint8   NCCLType = 1
	NCCLInt32   NCCLType = 2
	NCCLUint32  NCCLType = 3
	NCCLInt64   NCCLType = 4
	NCCLUint64  NCCLType = 5
	NCCLFloat32 NCCLType = 7
	NCCLFloat64 NCCLType = 8
)

// Size is the type's size in bytes; 0 for a type not listed here.
func (t NCCLType) Size() int64 {
	switch t {
	case NCCLInt8, NCCLUint8:
		return 1
	case NCCLInt32, NCCLUint32, NCCLFloat32:
		return 4
	case NCCLInt64, NCCLUint64, NCCLFloat64:
		return 8
	}
	return 0
}

// NCCLOp is a reduction: ncclRedOp_t.
type NCCLOp int

const (
	NCCLSum  NCCLOp = 0
	NCCLProd NCCLOp = 1
	NCCLMax  NCCLOp = 2
	NCCLMin  NCCLOp = 3
)

// NCCLError is a failed NCCL call.
type NCCLError struct {
	Op   string // the NCCL function, e.g. "ncclAllGather"
	Code int    // the ncclResult_t
	Desc string // ncclGetErrorString's description of the code
	Last string // ncclGetLastError: NCCL's own account of what failed
}

// ncclResultNames are the ncclResult_t names (nccl.h).
var ncclResultNames = []string{"ncclSuccess", "ncclUnhandledCudaError", "ncclSystemError", "ncclInternalError",
	"ncclInvalidArgument", "ncclInvalidUsage", "ncclRemoteError", "ncclInProgress"}

func (e *NCCLError) Error() string {
	name := fmt.Sprintf("ncclResult %d", e.Code)
	if e.Code >= 0 && e.Code < len(ncclResultNames) {
		name = ncclResultNames[e.Code]
	}
	s := e.Op + ": " + name
	if e.Desc != "" {
		s += " (" + e.Desc + ")"
	}
	if e.Last != "" {
		s += ": " + strings.TrimSpace(e.Last)
	}
	return s
}

// ncclCall makes one NCCL call, with c current when c is not nil, and
// reads NCCL's error texts on the same thread (its last error is per
// thread). As with ccall, a pointer argument must be converted to uintptr
// in the call expression itself.
//
//go:uintptrescapes
func ncclCall(c *Context, op string, fn uintptr, args ...uintptr) error {
	if c != nil {
		if err := c.bind(); err != nil {
			return err
		}
		defer c.unbind()
	} else {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
	}
	r := ccall(fn, args...)
	if r == success {
		return nil
	}
	e := &NCCLError{Op: op, Code: int(r)}
	if nccl.getErrorString != 0 {
		e.Desc = ccallString(nccl.getErrorString, uintptr(r))
	}
	if nccl.getLastError != 0 {
		e.Last = ccallString(nccl.getLastError, 0)
	}
	return e
}

// Comm is one GPU's member of an NCCL communicator: rank Rank of Size,
// bound to Context. Its calls are queued on a stream of that context.
type Comm struct {
	h    uintptr // ncclComm_t
	ctx  *Context
	rank int
	size int
}

// NewComms creates one communicator over the GPUs of ctxs
// (ncclCommInitAll), one Comm a GPU, rank i on ctxs[i]. The GPUs must be
// distinct. It sets NCCL_NVLS_ENABLE=0 in the process environment first,
// whatever it was: the GPU machines require NVLink multicast off.
//
// One thread drives all the ranks: wrap the calls of one collective, one
// a rank, in NCCLGroup, or the first rank's call waits for the others.
// NCCL enables peer access between the GPUs' primary contexts where its
// transport uses it, so a later EnablePeerAccess finds it enabled.
func NewComms(ctxs []*Context) ([]*Comm, error) {
	if _, err := LoadNCCL(); err != nil {
		return nil, err
	}
	if len(ctxs) == 0 {
		return nil, errors.New("gpu: NewComms of no GPUs")
	}
	devs := make([]int32, len(ctxs))
	seen := map[*Device]bool{}
	var names []string
	for i, c := range ctxs {
		if c == nil {
			return nil, fmt.Errorf("gpu: NewComms: context %d is nil", i)
		}
		if seen[c.dev] {
			return nil, fmt.Errorf("gpu: NewComms: GPU %d given twice", c.dev.Ordinal)
		}
		seen[c.dev] = true
		devs[i] = int32(c.dev.Ordinal)
		names = append(names, fmt.Sprint(c.dev.Ordinal))
	}
	if err := disableNVLS(); err != nil {
		return nil, err
	}
	hs := make([]uintptr, len(ctxs))
	// ncclCommInitAll makes each GPU current in turn (through the CUDA
	// runtime, whose contexts are the primary contexts used here); c.bind
	// sets the context again before every later call.
	err := ncclCall(nil, "ncclCommInitAll", nccl.commInitAll,
		uintptr(unsafe.Pointer(&hs[0])), uintptr(len(ctxs)), uintptr(unsafe.Pointer(&devs[0])))
	if err != nil {
		return nil, backendError(fmt.Sprintf("NCCL cannot connect GPUs %s (%v)", strings.Join(names, ", "), err),
			"NCCL_DEBUG=INFO shows NCCL's reasons; or run on one GPU", err)
	}
	comms := make([]*Comm, len(ctxs))
	for i, c := range ctxs {
		comms[i] = &Comm{h: hs[i], ctx: c, rank: i, size: len(ctxs)}
	}
	return comms, nil
}

// disableNVLS turns NVLink multicast (NVLS) off for every communicator of
// this process. NCCL reads its settings from the C environment, which
// os.Setenv writes through purego's runtime hooks.
func disableNVLS() error { return os.Setenv("NCCL_NVLS_ENABLE", "0") }

// Rank is c's rank in its communicator.
func (c *Comm) Rank() int { return c.rank }

// Size is the number of ranks in c's communicator.
func (c *Comm) Size() int { return c.size }

// Context is the context of c's GPU.
func (c *Comm) Context() *Context { return c.ctx }

// Destroy releases c (ncclCommDestroy). NCCL frees the resources of a
// communicator's ranks in this process when the last of them is destroyed
// (it counts them; the earlier calls return at once), so destroy every Comm
// from NewComms, in any order, from any goroutine. Destroying a destroyed
// Comm does nothing.
func (c *Comm) Destroy() error {
	if c == nil || c.h == 0 {
		return nil
	}
	h := c.h
	c.h = 0
	return ncclCall(c.ctx, "ncclCommDestroy", nccl.commDestroy, h)
}

// NCCLGroup runs fn between ncclGroupStart and ncclGroupEnd, on one locked
// OS thread (NCCL's group state is per thread), so that the collectives fn
// queues — typically one a rank of a communicator this process drives —
// are one operation. fn must make its NCCL calls on its own goroutine.
// ncclGroupEnd runs even when fn fails; fn's error comes first.
func NCCLGroup(fn func() error) (err error) {
	if _, err := LoadNCCL(); err != nil {
		return err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := ncclCall(nil, "ncclGroupStart", nccl.groupStart); err != nil {
		return err
	}
	defer func() {
		if endErr := ncclCall(nil, "ncclGroupEnd", nccl.groupEnd); err == nil {
			err = endErr
		}
	}()
	return fn()
}

// AllGather gathers count elements of t from every rank's send into recv
// (Size·count elements, rank r's at r·count) on every rank, on stream s.
func (c *Comm) AllGather(s *Stream, send, recv DevicePtr, count int64, t NCCLType) error {
	if err := c.check(s, count, t); err != nil {
		return err
	}
	return ncclCall(c.ctx, "ncclAllGather", nccl.allGather,
		uintptr(send), uintptr(recv), uintptr(count), uintptr(t), c.h, s.handle())
}

// Broadcast copies count elements of t from root's send to every rank's
// recv, on stream s (send is read on root only).
func (c *Comm) Broadcast(s *Stream, send, recv DevicePtr, count int64, t NCCLType, root int) error {
	if err := c.check(s, count, t); err != nil {
		return err
	}
	if err := c.checkRank("root", root); err != nil {
		return err
	}
	return ncclCall(c.ctx, "ncclBroadcast", nccl.broadcast,
		uintptr(send), uintptr(recv), uintptr(count), uintptr(t), uintptr(root), c.h, s.handle())
}

// AllReduce reduces count elements of t with op over every rank's send
// into every rank's recv, on stream s.
func (c *Comm) AllReduce(s *Stream, send, recv DevicePtr, count int64, t NCCLType, op NCCLOp) error {
	if err := c.check(s, count, t); err != nil {
		return err
	}
	if op < NCCLSum || op > NCCLMin {
		return fmt.Errorf("gpu: AllReduce with NCCL reduction %d", op)
	}
	return ncclCall(c.ctx, "ncclAllReduce", nccl.allReduce,
		uintptr(send), uintptr(recv), uintptr(count), uintptr(t), uintptr(op), c.h, s.handle())
}

// Send sends count elements of t from buf to rank peer, which must Recv
// them, on stream s. Sends and receives between several ranks go in one
// NCCLGroup.
func (c *Comm) Send(s *Stream, buf DevicePtr, count int64, t NCCLType, peer int) error {
	if err := c.check(s, count, t); err != nil {
		return err
	}
	if err := c.checkRank("peer", peer); err != nil {
		return err
	}
	return ncclCall(c.ctx, "ncclSend", nccl.send, uintptr(buf), uintptr(count), uintptr(t), uintptr(peer), c.h, s.handle())
}

// Recv receives count elements of t from rank peer into buf, on stream s.
func (c *Comm) Recv(s *Stream, buf DevicePtr, count int64, t NCCLType, peer int) error {
	if err := c.check(s, count, t); err != nil {
		return err
	}
	if err := c.checkRank("peer", peer); err != nil {
		return err
	}
	return ncclCall(c.ctx, "ncclRecv", nccl.recv, uintptr(buf), uintptr(count), uintptr(t), uintptr(peer), c.h, s.handle())
}

// check is the common validation of a call on c, on stream s.
func (c *Comm) check(s *Stream, count int64, t NCCLType) error {
	if c == nil || c.h == 0 {
		return errDestroyed
	}
	if count < 0 {
		return fmt.Errorf("gpu: NCCL call with %d elements", count)
	}
	if t.Size() == 0 {
		return fmt.Errorf("gpu: NCCL element type %d", t)
	}
	return sameContext(c.ctx, s)
}

func (c *Comm) checkRank(what string, r int) error {
	if r < 0 || r >= c.size {
		return fmt.Errorf("gpu: NCCL %s %d of a communicator of %d ranks", what, r, c.size)
	}
	return nil
}
