//go:build amd64 || arm64

package par

// pause tells the core that the goroutine is spinning (PAUSE on x86,
// YIELD on ARM): it waits a few dozen cycles without flooding the memory
// system with loads, and leaves the pipeline ready for the store that ends
// the wait.
//
//go:noescape
func pause()
