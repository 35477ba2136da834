//go:build !unix

package rusage

func peakRSS() int64 { return 0 }
