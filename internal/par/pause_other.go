//go:build !amd64 && !arm64

package par

// pause is a spin-wait hint where the platform has none.
func pause() {}
