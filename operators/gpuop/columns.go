package gpuop

import (
	"time"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/gpu"
	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/internal/alloc"
	"github.com/gpipe/gpipe/kernels"
	"github.com/gpipe/gpipe/operators"
)

// A result's columns as Arrow lays them out, made on the GPU beside the
// values (kernels/columns.cu) and downloaded with them: a vertex column
// mapped to the graph's integer keys, and validity bitmaps. On the host the
// mapping reads the key array at random, one row at a time: 19 ms of a
// Flight server's CPU for each BFS of Kronecker 22 (2.4 M parents), on the
// encoders that build the batches while gRPC sends. gpipe.Result.Rows wraps
// what is made here (Column.Keys, Column.Valid) and makes the rest itself,
// as it does for a CPU run.

// keyWidth is the bytes of one of g's keys where the GPU can map ids to
// them (integer keys), else 0.
func keyWidth(g *convert.Graph) int64 {
	switch g.Keys.Type {
	case edges.KeyInt32, edges.KeyUint32:
		return 4
	case edges.KeyInt64, edges.KeyUint64:
		return 8
	}
	return 0
}

// integerKeys is g's key array as bytes (nil for string keys).
func integerKeys(g *convert.Graph) []byte {
	k := g.Keys
	switch k.Type {
	case edges.KeyInt32:
		return alloc.Bytes(k.Int32)
	case edges.KeyUint32:
		return alloc.Bytes(k.Uint32)
	case edges.KeyInt64:
		return alloc.Bytes(k.Int64)
	case edges.KeyUint64:
		return alloc.Bytes(k.Uint64)
	}
	return nil
}

// bitmapBytes is the bytes of a validity bitmap of n rows in whole words.
func bitmapBytes(n int64) int64 { return 4 * ((n + 31) / 32) }

// bfsColumnsBytes is the device memory bfsColumns takes beyond the search:
// the graph's keys (kept with its layouts) and, while it runs, the mapped
// parents and two bitmaps.
func bfsColumnsBytes(g *convert.Graph) int64 {
	n, w := int64(g.NumVertices()), keyWidth(g)
	if w == 0 {
		return bitmapBytes(n) // the depth bitmap alone
	}
	return 2*n*w + 2*bitmapBytes(n)
}

// arrowColumns is what a run downloads beside its values: the host memory
// the device columns go to, and the device buffers to free after.
type arrowColumns struct {
	copies   []HostCopy
	free     func()
	transfer time.Duration // the keys' first copy to the device
}

// bfsColumns queues on s the kernels that make a BFS's depth bitmap and, for
// integer keys, its parents as keys with their bitmap, and sets the
// columns' Keys and Valid to the host memory they will be downloaded to
// (res's, which Result.Release gives back).
// The caller downloads ac.copies with the values, then calls ac.free.
func (b *GPU) bfsColumns(s *gpu.Stream, g *convert.Graph, depthBuf, parentBuf *gpu.DeviceBuffer, mem *resultMem, depth, parent *operators.Column) (ac *arrowColumns, err error) {
	n := int64(gpu.Len[int32](depthBuf))
	w := keyWidth(g)
	ac = &arrowColumns{free: func() {}}
	if n == 0 {
		return ac, nil
	}
	nonneg, err := b.Kernel(kernels.Columns, "col_valid_nonneg")
	if err != nil {
		return nil, err
	}
	sizes := []int64{bitmapBytes(n)}
	if w > 0 {
		sizes = append(sizes, bitmapBytes(n), n*w)
	}
	bufs, free, err := b.Buffers(sizes...)
	if err != nil {
		return nil, err
	}
	ac.free = free
	defer func() {
		if err != nil {
			free()
		}
	}()
	words := (n + 31) / 32
	if err := b.launchColumns(nonneg, s, 32*words, depthBuf, bufs[0], n); err != nil {
		return nil, err
	}
	depth.Valid = resultSlice[byte](mem, int(bitmapBytes(n)))
	ac.copies = append(ac.copies, HostCopy{dst: depth.Valid, src: bufs[0]})
	if w == 0 {
		return ac, nil
	}
	keys, transfer, err := b.Layouts(g, s, vertexKeys)
	if err != nil {
		return nil, err
	}
	ac.transfer = transfer
	name := "col_keys64"
	if w == 4 {
		name = "col_keys32"
	}
	mapKeys, err := b.Kernel(kernels.Columns, name)
	if err != nil {
		return nil, err
	}
	if err := b.launchColumns(mapKeys, s, 32*words, parentBuf, keys[0], bufs[2], bufs[1], n); err != nil {
		return nil, err
	}
	parent.Valid = resultSlice[byte](mem, int(bitmapBytes(n)))
	parent.Keys = resultSlice[byte](mem, int(n*w))
	PoisonHost(b, parent.Keys, 0xa5)
	ac.copies = append(ac.copies, HostCopy{dst: parent.Valid, src: bufs[1]}, HostCopy{dst: parent.Keys, src: bufs[2]})
	return ac, nil
}

// launchColumns launches a column kernel with a thread a row (rows a
// multiple of 32), at most the grid that fills the GPU.
func (b *GPU) launchColumns(k *Kernel, s *gpu.Stream, rows int64, args ...any) error {
	blocks := min((rows+BlockSize-1)/BlockSize, int64(k.grid))
	if b.tune.columnsMaxBlocks > 0 {
		blocks = min(blocks, b.tune.columnsMaxBlocks)
	}
	return gpu.Launch(k.Fn, gpu.Dim(uint32(max(blocks, 1))), gpu.Dim(BlockSize), 0, s, args...)
}

// allValid is a validity bitmap of n rows, every one valid, in res's
// memory (Column.Valid's layout: whole words, the bits past n zero).
func allValid(mem *resultMem, n int64) []byte {
	bits := resultSlice[byte](mem, int(bitmapBytes(n)))
	full := n / 8
	for i := range bits[:full] {
		bits[i] = 0xff
	}
	clear(bits[full:])
	if r := n % 8; r != 0 {
		bits[full] = byte(1)<<r - 1
	}
	return bits
}
