//go:build !linux

package convert

// adviseHuge is a no-op where there are no transparent huge pages to ask for.
func adviseHuge[T any](s []T) {}
