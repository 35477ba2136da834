package rusage

// maxrssUnit is ru_maxrss's unit: macOS reports bytes.
const maxrssUnit = 1
