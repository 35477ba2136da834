//go:build linux && (amd64 || arm64)

package gpu

import (
	"runtime"
	"unsafe"

	"github.com/ebitengine/purego"
)

// platformSupported is whether this build can load the NVIDIA driver.
const platformSupported = true

// libcudaName is the driver library's soname. The driver installs it in the
// dynamic loader's path (also where `ldconfig -p` does not list it).
const libcudaName = "libcuda.so.1"

// dlopen opens the library called name, with RTLD_NOW|RTLD_GLOBAL.
func dlopen(name string) (uintptr, error) {
	// dlerror is per thread: keep dlopen and the dlerror that purego reads
	// after it on one thread.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return purego.Dlopen(name, purego.RTLD_NOW|purego.RTLD_GLOBAL)
}

// dlsym is the address of symbol name in lib, or 0 when it has none.
func dlsym(lib uintptr, name string) uintptr {
	p, err := purego.Dlsym(lib, name)
	if err != nil {
		return 0
	}
	return p
}

// ccall calls the C function at fn with integer and pointer arguments and
// returns its CUresult (an int in the low 32 bits of the return register).
//
// //go:uintptrescapes makes every uintptr(unsafe.Pointer(x)) written in a
// call's argument list keep x alive, and on the heap (where the Go collector
// never moves objects), until ccall returns; the caller must write the
// conversion in the call expression itself, as for syscall.Syscall.
//
//go:uintptrescapes
func ccall(fn uintptr, args ...uintptr) result {
	r1, _, _ := purego.SyscallN(fn, args...)
	return result(int32(uint32(r1)))
}

// ccallString calls the C function at fn, which returns a const char *
// (static memory of the library, such as ncclGetErrorString's), and copies
// that string; "" for NULL.
//
//go:uintptrescapes
func ccallString(fn uintptr, args ...uintptr) string {
	r1, _, _ := purego.SyscallN(fn, args...)
	// Reading the return register as a pointer without converting a uintptr
	// variable: the string is C memory, never moved by the Go collector.
	p := *(**byte)(unsafe.Pointer(&r1))
	if p == nil {
		return ""
	}
	return goString(p)
}
