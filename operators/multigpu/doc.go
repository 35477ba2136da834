// Package multigpu runs the operators over several GPUs of one host: the
// graph cut into one part per GPU (convert.Partitions), each part run by a
// gpuop.GPU, the parts exchanging values over NCCL or by peer copies. The
// operators with a path over several GPUs are the table paths
// (multigpu.go); the drivers run in steps: a level, an exchange, a
// decision (bfs.go, pagerank.go, vp.go).
package multigpu
