// Package gpuop runs the operators on one GPU. The registry (strategies.go)
// lists each operator's strategies: name, seed paper, the options it reads,
// the layouts it needs, its memory and its run. GPU.Plan chooses a strategy
// once from the graph and the request (plan.go); the Plan sizes, checks
// and runs it, and every run goes through the enactor (enactor.go): its
// stream, layouts, buffers, kernels, timer and result. The strategies'
// runners are the files named after them; the graph built on the device
// is build*.go, its uploads upload.go, stage.go and columns.go.
package gpuop
