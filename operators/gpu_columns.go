package operators

import (
	"time"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/gpu"
	"github.com/gpipe/gpipe/ingest/edges"
	"github.com/gpipe/gpipe/internal/alloc"
	"github.com/gpipe/gpipe/kernels"
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
	copies   []hostCopy
	free     func()
	transfer time.Duration // the keys' first copy to the device
}

// bfsColumns queues on s the kernels that make a BFS's depth bitmap and, for
// integer keys, its parents as keys with their bitmap, and sets the
// columns' Keys and Valid to the host memory they will be downloaded to
// (res's, which Result.Release gives back).
// The caller downloads ac.copies with the values, then calls ac.free.
func (b *GPU) bfsColumns(s *gpu.Stream, g *convert.Graph, depthBuf, parentBuf *gpu.DeviceBuffer, res *Result, depth, parent *Column) (ac *arrowColumns, err error) {
	n := int64(gpu.Len[int32](depthBuf))
	w := keyWidth(g)
	ac = &arrowColumns{free: func() {}}
	if n == 0 {
		return ac, nil
	}
	nonneg, err := b.kernel(kernels.Columns, "col_valid_nonneg")
	if err != nil {
		return nil, err
	}
	sizes := []int64{bitmapBytes(n)}
	if w > 0 {
		sizes = append(sizes, bitmapBytes(n), n*w)
	}
	bufs, free, err := b.buffers(sizes...)
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
	if err := launchColumns(nonneg, s, 32*words, depthBuf, bufs[0], n); err != nil {
		return nil, err
	}
	depth.Valid = resultSlice[byte](res, int(bitmapBytes(n)))
	ac.copies = append(ac.copies, hostCopy{dst: depth.Valid, src: bufs[0]})
	if w == 0 {
		return ac, nil
	}
	keys, transfer, err := b.layouts(g, s, vertexKeys)
	if err != nil {
		return nil, err
	}
	ac.transfer = transfer
	name := "col_keys64"
	if w == 4 {
		name = "col_keys32"
	}
	mapKeys, err := b.kernel(kernels.Columns, name)
	if err != nil {
		return nil, err
	}
	if err := launchColumns(mapKeys, s, 32*words, parentBuf, keys[0], bufs[2], bufs[1], n); err != nil {
		return nil, err
	}
	parent.Valid = resultSlice[byte](res, int(bitmapBytes(n)))
	parent.Keys = resultSlice[byte](res, int(n*w))
	poisonHost(b, parent.Keys, 0xa5)
	ac.copies = append(ac.copies, hostCopy{dst: parent.Valid, src: bufs[1]}, hostCopy{dst: parent.Keys, src: bufs[2]})
	return ac, nil
}

// columnsMaxBlocks, above 0, caps the blocks of the column kernels, so that
// tests make each warp take several trips of their loops.
var columnsMaxBlocks int64

// launchColumns launches a column kernel with a thread a row (rows a
// multiple of 32), at most the grid that fills the GPU.
func launchColumns(k *launchable, s *gpu.Stream, rows int64, args ...any) error {
	blocks := min((rows+blockSize-1)/blockSize, int64(k.grid))
	if columnsMaxBlocks > 0 {
		blocks = min(blocks, columnsMaxBlocks)
	}
	return gpu.Launch(k.fn, gpu.Dim(uint32(max(blocks, 1))), gpu.Dim(blockSize), 0, s, args...)
}

// allValid is a validity bitmap of n rows, every one valid, in res's
// memory (Column.Valid's layout: whole words, the bits past n zero).
func allValid(res *Result, n int64) []byte {
	bits := resultSlice[byte](res, int(bitmapBytes(n)))
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
