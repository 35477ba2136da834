package gpu

import (
	"errors"
	"fmt"
	"strings"
	"unsafe"

	"github.com/gpipe/gpipe/internal/usererr"
)

// CUresult codes that callers test for (values from cuda.h, stable across
// CUDA 12 and 13). IsCode compares an error against them.
const (
	CodeInvalidValue          = 1
	CodeOutOfMemory           = 2
	CodeNotInitialized        = 3
	CodeStubLibrary           = 34
	CodeInsufficientDriver    = 35
	CodeDeviceUnavailable     = 46
	CodeNoDevice              = 100
	CodeInvalidDevice         = 101
	CodeInvalidImage          = 200
	CodeInvalidContext        = 201
	CodeNoBinaryForGPU        = 209
	CodePeerAccessUnsupported = 217
	CodeInvalidPTX            = 218
	CodeUnsupportedPTXVersion = 222
	CodeInvalidHandle         = 400
	CodeNotFound              = 500
	CodeNotReady              = 600
	CodeIllegalAddress        = 700
	CodeLaunchOutOfResources  = 701
	CodeLaunchTimeout         = 702
	CodePeerAccessEnabled     = 704 // CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED
	CodePeerAccessNotEnabled  = 705
	CodeAssert                = 710
	CodeTooManyPeers          = 711
	CodeHardwareStackError    = 714
	CodeIllegalInstruction    = 715
	CodeMisalignedAddress     = 716
	CodeInvalidAddressSpace   = 717
	CodeInvalidPC             = 718
	CodeLaunchFailed          = 719
	CodeNotSupported          = 801
	CodeUnknown               = 999
)

// Error is a failed CUDA driver call.
type Error struct {
	Op     string // the driver function, e.g. "cuMemAlloc_v2"
	Target string // what it was applied to, e.g. a kernel name; may be empty
	Code   int    // the CUresult
	Name   string // e.g. "CUDA_ERROR_OUT_OF_MEMORY"
	Desc   string // the driver's description, e.g. "out of memory"
	Log    string // the JIT compiler's log, for module loads
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Op)
	if e.Target != "" {
		fmt.Fprintf(&b, "(%s)", e.Target)
	}
	fmt.Fprintf(&b, ": %s", e.Name)
	if e.Desc != "" {
		fmt.Fprintf(&b, " (%s)", e.Desc)
	}
	if e.Log != "" {
		b.WriteString("; JIT log:\n")
		b.WriteString(e.Log)
	}
	return b.String()
}

// Sticky reports whether the error leaves the context unusable: after an
// illegal address, a trap or a failed launch every later call in this
// process fails too, and only a new process can use the GPU again.
func (e *Error) Sticky() bool {
	switch e.Code {
	case CodeIllegalAddress, CodeLaunchTimeout, CodeAssert, CodeHardwareStackError,
		CodeIllegalInstruction, CodeMisalignedAddress, CodeInvalidAddressSpace,
		CodeInvalidPC, CodeLaunchFailed:
		return true
	}
	return false
}

// IsCode reports whether err is, or wraps, a driver *Error with the given
// CUresult code.
func IsCode(err error, code int) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}

// result is a CUresult as a driver call returns it.
type result int32

const success result = 0

// newError builds the *Error for a failed call, with the driver's name and
// description of the code.
func newError(op string, r result) *Error {
	e := &Error{Op: op, Code: int(r)}
	e.Name, e.Desc = errorText(r)
	return e
}

// check is nil for success, else newError.
func check(op string, r result) error {
	if r == success {
		return nil
	}
	return newError(op, r)
}

// errorText asks the driver for the name and description of r. Codes the
// driver does not know (or a driver not loaded) give CUDA_ERROR_<code>.
func errorText(r result) (name, desc string) {
	name = fmt.Sprintf("CUDA_ERROR_%d", int(r))
	if drv.getErrorName == 0 {
		return name, ""
	}
	var p *byte
	if ccall(drv.getErrorName, uintptr(r), uintptr(unsafe.Pointer(&p))) == success && p != nil {
		name = goString(p)
	}
	p = nil
	if drv.getErrorString != 0 && ccall(drv.getErrorString, uintptr(r), uintptr(unsafe.Pointer(&p))) == success && p != nil {
		desc = goString(p)
	}
	return name, desc
}

// goString copies the NUL-terminated C string at p (C memory the driver
// owns, such as the static strings of cuGetErrorName).
func goString(p *byte) string {
	n := 0
	for *(*byte)(unsafe.Add(unsafe.Pointer(p), n)) != 0 {
		n++
	}
	return string(unsafe.Slice(p, n))
}

// cString is s as a NUL-terminated byte slice for a driver call.
func cString(s string) ([]byte, error) {
	if strings.IndexByte(s, 0) >= 0 {
		return nil, fmt.Errorf("gpu: name %q contains a NUL byte", s)
	}
	b := make([]byte, len(s)+1)
	copy(b, s)
	return b, nil
}

// backendError is a usererr.Backend error with a cause.
func backendError(problem, fix string, cause error) error {
	e := usererr.New(usererr.Backend, problem, fix)
	e.Err = cause
	return e
}
