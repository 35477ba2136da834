// Package rusage reports what the process has used of the machine: its peak
// resident memory, for the reports of `gpipe run --json` and `gpipe bench`.
package rusage

// PeakRSS is the most memory the process has held resident so far, in
// bytes (getrusage's ru_maxrss), or 0 where the platform does not say. It
// counts pinned host memory and the Go heap's pages, not GPU memory.
func PeakRSS() int64 { return peakRSS() }
