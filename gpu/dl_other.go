//go:build !(linux && (amd64 || arm64))

package gpu

import (
	"fmt"
	"runtime"
)

// platformSupported is whether this build can load the NVIDIA driver.
const platformSupported = false

const libcudaName = "libcuda.so.1"

func dlopen(name string) (uintptr, error) {
	return 0, fmt.Errorf("the GPU backend runs on linux/amd64 and linux/arm64, not %s/%s", runtime.GOOS, runtime.GOARCH)
}

func dlsym(lib uintptr, name string) uintptr { return 0 }

// ccall is never reached here: no driver symbol is ever bound.
func ccall(fn uintptr, args ...uintptr) result { return CodeNotSupported }

func ccallString(fn uintptr, args ...uintptr) string { return "" }
