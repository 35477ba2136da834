package gpuop

// The last steps of the GPU build (build.go): the entries sorted and
// merged into the CSR, the CSC, the degree statistics, and the device
// primitives they rest on (the scan and the radix sort).

import (
	"math/bits"

	"github.com/gpipe/gpipe/convert"
	"github.com/gpipe/gpipe/gpu"
)

// deviceCSR is a layout on the device.
type deviceCSR struct {
	offsets, targets, weights *gpu.DeviceBuffer
	edges                     int64
	merged                    int64 // entries merged into another
}

// csr sorts the entries, merges equal ones (the minimum weight kept) and
// cuts them into the out-edge layout. It also returns the merged entries
// (for the in-edge layout), which the caller frees.
func (d *devBuild) csr(e entryBuffers, n int64, idBits int, self int64) (*deviceCSR, *gpu.DeviceBuffer, error) {
	scratch, err := d.alloc(e.count * 8)
	if err != nil {
		return nil, nil, err
	}
	var vscratch *gpu.DeviceBuffer
	if e.vals != nil {
		if vscratch, err = d.alloc(e.count * 8); err != nil {
			return nil, nil, err
		}
	}
	keys, vals, err := d.radixSort(e.keys, scratch, e.vals, vscratch, e.count, 2*idBits)
	if err != nil {
		return nil, nil, err
	}
	merged := otherOf(keys, e.keys, scratch)
	if vals != nil {
		d.free(otherOf(vals, e.vals, vscratch))
	}
	valid := e.count - self
	if d.opts.Undirected {
		valid -= self
	}
	flags, err := d.runStarts(keys, valid)
	if err != nil {
		return nil, nil, err
	}
	k32, err := d.readU32(flags, valid)
	if err != nil {
		return nil, nil, err
	}
	k := int64(k32)
	c := &deviceCSR{edges: k, merged: valid - k}
	if c.targets, err = d.alloc(k * 4); err != nil {
		return nil, nil, err
	}
	mask := uint64(1)<<idBits - 1
	if err := d.launch("gb_merge", valid, keys, flags, uint64(valid), mask, merged, c.targets); err != nil {
		return nil, nil, err
	}
	if vals != nil {
		if c.weights, err = d.alloc(k * 8); err != nil {
			return nil, nil, err
		}
		if err := c.weights.Memset8(d.s, 0xff); err != nil {
			return nil, nil, err
		}
		if err := d.launch("gb_merge_weights", valid, vals, flags, uint64(valid), c.weights); err != nil {
			return nil, nil, err
		}
		if err := d.launch("gb_weights_from_keys", k, c.weights, uint64(k)); err != nil {
			return nil, nil, err
		}
	}
	d.free(keys, vals, flags)
	if c.offsets, err = d.offsets(merged, k, idBits, n); err != nil {
		return nil, nil, err
	}
	return c, merged, nil
}

// offsets is the layout's offsets over the k sorted entries at keys.
func (d *devBuild) offsets(keys *gpu.DeviceBuffer, k int64, idBits int, n int64) (*gpu.DeviceBuffer, error) {
	off, err := d.alloc((n + 1) * 8)
	if err != nil {
		return nil, err
	}
	return off, d.launch("gb_offsets", n+1, keys, uint64(k), uint32(idBits), uint64(n), off)
}

// csc is the in-edge layout of out, from its merged entries: their ends
// swapped and sorted again (there is nothing left to merge).
func (d *devBuild) csc(out *deviceCSR, merged *gpu.DeviceBuffer, n int64, idBits int) (*deviceCSR, error) {
	k := out.edges
	swapped, err := d.alloc(k * 8)
	if err != nil {
		return nil, err
	}
	if err := d.launch("gb_swap_ends", k, merged, uint64(k), uint32(idBits), swapped); err != nil {
		return nil, err
	}
	d.free(merged)
	scratch, err := d.alloc(k * 8)
	if err != nil {
		return nil, err
	}
	var vals, vscratch *gpu.DeviceBuffer
	if out.weights != nil {
		if vals, err = d.alloc(k * 8); err != nil {
			return nil, err
		}
		if err := vals.CopyFromDevice(d.s, out.weights); err != nil {
			return nil, err
		}
		if vscratch, err = d.alloc(k * 8); err != nil {
			return nil, err
		}
	}
	keys, sortedVals, err := d.radixSort(swapped, scratch, vals, vscratch, k, 2*idBits)
	if err != nil {
		return nil, err
	}
	d.free(otherOf(keys, swapped, scratch))
	if sortedVals != nil {
		d.free(otherOf(sortedVals, vals, vscratch))
	}
	in := &deviceCSR{edges: k, weights: sortedVals}
	if in.targets, err = d.alloc(k * 4); err != nil {
		return nil, err
	}
	if err := d.launch("gb_low_ends", k, keys, uint64(k), uint64(1)<<idBits-1, in.targets); err != nil {
		return nil, err
	}
	if in.offsets, err = d.offsets(keys, k, idBits, n); err != nil {
		return nil, err
	}
	d.free(keys)
	return in, nil
}

// degreeStats is the out-degree statistics (convert.DegreeStats) of the
// layouts, worked out on the device.
func (d *devBuild) degreeStats(out, in *deviceCSR, n int64, scalars *gpu.DeviceBuffer) (convert.DegreeStats, error) {
	deg := convert.DegreeStats{Vertices: int(n), Edges: out.edges}
	if n == 0 {
		return deg, nil
	}
	deg.Average = float64(out.edges) / float64(n)
	inOffs, marks := gpu.DevicePtr(0), gpu.DevicePtr(0)
	if !d.opts.Undirected {
		if in != nil {
			inOffs = in.offsets.Ptr()
		} else {
			buf, err := d.alloc((n + 31) / 32 * 4)
			if err != nil {
				return deg, err
			}
			defer d.free(buf)
			if err := buf.Memset32(d.s, 0); err != nil {
				return deg, err
			}
			if err := d.launch("gb_mark_targets", out.edges, out.targets, uint64(out.edges), buf); err != nil {
				return deg, err
			}
			marks = buf.Ptr()
		}
	}
	if err := setU64s(d.s, scalars, scalarStats, 66, 0); err != nil {
		return deg, err
	}
	if err := d.launch("gb_degree_stats", n, out.offsets, uint64(n), inOffs, marks, gpu.DevicePtr(scalars.Ptr()+scalarStats*8)); err != nil {
		return deg, err
	}
	st, err := d.readU64s(scalars, scalarStats, 66)
	if err != nil {
		return deg, err
	}
	deg.Max, deg.Isolated = int64(st[64]), int64(st[65])
	if deg.Max > 0 {
		for _, c := range st[:bits.Len64(uint64(deg.Max))] {
			deg.Log2 = append(deg.Log2, int64(c))
		}
	}
	return deg, nil
}

// runStarts flags the starts of runs of equal values among the count
// sorted values at keys and scans the flags: flags[i] is then the number of
// runs before i, and flags[count] the number of runs.
func (d *devBuild) runStarts(keys *gpu.DeviceBuffer, count int64) (*gpu.DeviceBuffer, error) {
	flags, err := d.alloc((count + 1) * 4)
	if err != nil {
		return nil, err
	}
	if err := d.launch("gb_heads", count, keys, uint64(count), flags); err != nil {
		return nil, err
	}
	return flags, d.scan(flags, count+1)
}

// otherOf is whichever of a and b is not x.
func otherOf(x, a, b *gpu.DeviceBuffer) *gpu.DeviceBuffer {
	if x == a {
		return b
	}
	return a
}

// scan turns the count uint32 at buf into their exclusive prefix sums, in
// place: per tile sums, their scan (recursively), then each tile's scan
// from its sum's.
func (d *devBuild) scan(buf *gpu.DeviceBuffer, count int64) error {
	if count <= 0 {
		return nil
	}
	tiles := (count + scanTile - 1) / scanTile
	if tiles == 1 {
		return d.launchTiles("scan_down", 1, buf, uint64(count), gpu.DevicePtr(0))
	}
	partial, err := d.alloc(tiles * 4)
	if err != nil {
		return err
	}
	defer d.free(partial)
	if err := d.launchTiles("scan_reduce", tiles, buf, uint64(count), partial); err != nil {
		return err
	}
	if err := d.scan(partial, tiles); err != nil {
		return err
	}
	return d.launchTiles("scan_down", tiles, buf, uint64(count), partial)
}

// radixSort sorts the count keys at a (with their values at va, or none)
// by their low keyBits bits, stably, 8 bits a pass, b and vb being scratch
// of the same sizes. It returns the buffers that hold the result: a and
// va, or b and vb.
func (d *devBuild) radixSort(a, b, va, vb *gpu.DeviceBuffer, count int64, keyBits int) (*gpu.DeviceBuffer, *gpu.DeviceBuffer, error) {
	if count <= 1 || keyBits == 0 {
		return a, va, nil
	}
	tiles := (count + rsTile - 1) / rsTile
	counts, err := d.alloc(256 * tiles * 4)
	if err != nil {
		return nil, nil, err
	}
	defer d.free(counts)
	for shift := 0; shift < keyBits; shift += 8 {
		if err := d.launchTiles("rs_hist", tiles, a, uint64(count), uint32(shift), counts, uint32(tiles)); err != nil {
			return nil, nil, err
		}
		if err := d.scan(counts, 256*tiles); err != nil {
			return nil, nil, err
		}
		if err := d.launchTiles("rs_scatter", tiles, a, PtrOf(va), uint64(count), uint32(shift), counts, uint32(tiles), b, PtrOf(vb)); err != nil {
			return nil, nil, err
		}
		a, b, va, vb = b, a, vb, va
	}
	return a, va, nil
}
