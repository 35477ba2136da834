//go:build unix && !darwin

package rusage

// maxrssUnit is ru_maxrss's unit: Linux and the BSDs report kibibytes.
const maxrssUnit = 1024
