package ops

import (
	"fmt"

	"github.com/torchlean-go/torchlean/cpu"
	"github.com/torchlean-go/torchlean/ptx"
)

// The layout family (ptx/layout.cu): copies that move elements without arithmetic.
var (
	concat1dOp = row(&kernelOp{name: "concat1d", kernel: ptx.Concat1d, outs: 1, ins: 2,
		grid: strided(sizeSum), units: sizeSum,
		cpu: func(h *hostArgs, lo, hi int) { cpu.Concat1d(h.b[0], h.b[1][:h.s[0]], h.b[2][:h.s[1]], lo, hi) }})
	slice1dOp = row(&kernelOp{name: "slice1d", kernel: ptx.Slice1d, outs: 1, ins: 1,
		grid: strided(size(1)), units: size(1),
		cpu: func(h *hostArgs, lo, hi int) { cpu.Slice1d(h.b[0], h.b[1], h.s[0], lo, hi) }})
	vecToRowsOp = row(&kernelOp{name: "broadcast_vec_to_rows", kernel: ptx.BroadcastVecToRows, outs: 1, ins: 1,
		grid: strided(product(0, 1)), units: size(0),
		cpu: func(h *hostArgs, lo, hi int) { cpu.BroadcastVecToRows(h.b[0], h.b[1], h.s[1], lo, hi) }})
	vecToColsOp = row(&kernelOp{name: "broadcast_vec_to_cols", kernel: ptx.BroadcastVecToCols, outs: 1, ins: 1,
		grid: strided(product(0, 1)), units: size(0),
		cpu: func(h *hostArgs, lo, hi int) { cpu.BroadcastVecToCols(h.b[0], h.b[1], h.s[1], lo, hi) }})
	transposeOp = row(&kernelOp{name: "transpose2d", kernel: ptx.Transpose2d, outs: 1, ins: 1,
		grid: tileGrid{}, units: product(0, 2),
		cpu: func(h *hostArgs, lo, hi int) { cpu.Transpose2d(h.b[0], h.b[1], h.s[0], h.s[1], h.s[2], lo, hi) }})
	swapAdjacentOp = row(&kernelOp{name: "swap_adjacent", kernel: ptx.SwapAdjacent, outs: 1, ins: 1,
		grid: strided(swapThreads), units: product(0, 1, 2),
		cpu: func(h *hostArgs, lo, hi int) {
			cpu.SwapAdjacent(h.b[0], h.b[1], h.s[0], h.s[1], h.s[2], h.s[3], lo, hi)
		}})
	broadcastToOp = row(&kernelOp{name: "broadcast_to", kernel: ptx.BroadcastTo, outs: 1, ins: 1,
		grid: stridedGrid{threads: broadcastThreads, block: broadcastBlock}, units: size(0),
		cpu: func(h *hostArgs, lo, hi int) { cpu.BroadcastTo(h.b[0], h.b[1], h.s[3:3+h.s[1]], uint(h.s[2]), lo, hi) }})
)

func sizeSum(s []int) int { return s[0] + s[1] }

// swapThreads is the thread count of swap_adjacent for sizes (na, nb, nc, nd): one per element,
// or per 4 elements when nd % 4 == 0 (the kernel's 16-byte path).
func swapThreads(s []int) int {
	n := s[0] * s[1] * s[2] * s[3]
	if s[3]%4 == 0 {
		return n / 4
	}
	return n
}

// broadcastRows returns the rows of broadcast_to's output along its last axis and the vectors
// per row (4 elements each when the row length is a multiple of 4, as in the kernel), for sizes
// (n, rank, kept, d0..d7) with n > 0.
func broadcastRows(s []int) (rows, vecs int) {
	l := 1
	if s[1] > 0 {
		l = s[3+s[1]-1]
	}
	vecs = l
	if l%4 == 0 {
		vecs = l / 4
	}
	return s[0] / l, vecs
}

// broadcastBlock is broadcast_to's block: 256 threads as (x, 256/x), x the power of two covering
// a row's vectors, at most 256, so that short rows do not leave threads idle.
func broadcastBlock(s []int) [2]uint32 {
	_, v := broadcastRows(s)
	x := 1
	for x < 256 && x < v {
		x *= 2
	}
	return [2]uint32{uint32(x), uint32(256 / x)}
}

// broadcastThreads is the thread count of broadcast_to: blockDim.x threads per work unit (a row
// and a segment of 4*blockDim.x of its vectors).
func broadcastThreads(s []int) int {
	rows, v := broadcastRows(s)
	x := int(broadcastBlock(s)[0])
	return rows * ((v + 4*x - 1) / (4 * x)) * x
}

func checkLen(op string, x *Buffer, want int, what string) error {
	if err := x.liveIn(op); err != nil {
		return err
	}
	if want < 0 || x.n != want {
		return fmt.Errorf("ops: %s: %s has %d elements, want %d", op, what, x.n, want)
	}
	return nil
}

// Concat1d returns a followed by b (lengths n and m).
func Concat1d(a, b *Buffer, n, m int) (*Buffer, error) {
	if err := checkLen("concat1d", a, n, "a"); err != nil {
		return nil, err
	}
	if err := checkLen("concat1d", b, m, "b"); err != nil {
		return nil, err
	}
	return concat1dOp.call1(n+m, []*Buffer{a, b}, nil, []int{n, m})
}

// ConcatN returns the buffers xs, of one device, one after another: Concat1d of any number of
// buffers, each element copied once by the device's copy (the values are the inputs' bits). A
// buffer may be listed more than once.
func ConcatN(xs ...*Buffer) (*Buffer, error) {
	const op = "concat_n"
	if len(xs) == 0 {
		return nil, fmt.Errorf("ops: %s: no buffers", op)
	}
	if err := useAll(op, xs...); err != nil {
		return nil, err
	}
	defer doneAll(xs...)
	total := 0
	for _, x := range xs {
		if total += x.n; total > maxBufferLen {
			return nil, opErr(op, fmt.Errorf("%w: more than %d floats in all", ErrOutOfMemory, maxBufferLen))
		}
	}
	d := xs[0].dev
	out, err := newBuffer(d, total)
	if err != nil {
		return nil, opErr(op, err)
	}
	off := 0
	for _, x := range xs {
		if x.n > 0 {
			if err := d.be.copy(out.mem.at(off), x.mem, x.n); err != nil {
				out.Release()
				return nil, opErr(op, err)
			}
		}
		off += x.n
	}
	return out, nil
}

// Slice1d returns x[start : start+length]; x must have n elements and start+length <= n.
func Slice1d(x *Buffer, n, start, length int) (*Buffer, error) {
	if err := checkLen("slice1d", x, n, "x"); err != nil {
		return nil, err
	}
	if start < 0 || length < 0 || start > n || length > n-start { // start+length may overflow
		return nil, fmt.Errorf("ops: slice1d: [%d, %d+%d) is outside a buffer of %d", start, start, length, n)
	}
	return slice1dOp.call1(length, []*Buffer{x}, nil, []int{start, length})
}

// BroadcastVecToRows returns the (rows, cols) matrix whose every row is vec (length cols).
func BroadcastVecToRows(vec *Buffer, rows, cols int) (*Buffer, error) {
	if err := checkLen("broadcast_vec_to_rows", vec, cols, "vec"); err != nil {
		return nil, err
	}
	if rows < 0 {
		return nil, fmt.Errorf("ops: broadcast_vec_to_rows: negative rows %d", rows)
	}
	if _, ok := mulFits(rows, cols); !ok {
		return nil, fmt.Errorf("ops: broadcast_vec_to_rows: the (%d, %d) matrix overflows", rows, cols)
	}
	return vecToRowsOp.call1(rows*cols, []*Buffer{vec}, nil, []int{rows, cols})
}

// BroadcastVecToCols returns the (rows, cols) matrix whose every column is vec (length rows).
func BroadcastVecToCols(vec *Buffer, rows, cols int) (*Buffer, error) {
	if err := checkLen("broadcast_vec_to_cols", vec, rows, "vec"); err != nil {
		return nil, err
	}
	if cols < 0 {
		return nil, fmt.Errorf("ops: broadcast_vec_to_cols: negative cols %d", cols)
	}
	if _, ok := mulFits(rows, cols); !ok {
		return nil, fmt.Errorf("ops: broadcast_vec_to_cols: the (%d, %d) matrix overflows", rows, cols)
	}
	return vecToColsOp.call1(rows*cols, []*Buffer{vec}, nil, []int{rows, cols})
}

// matrix checks that x, the operand called name in errors, holds a (rows, cols) matrix.
func matrix(op, name string, x *Buffer, rows, cols int) error {
	if rows < 0 || cols < 0 {
		return fmt.Errorf("ops: %s: negative shape (%d, %d)", op, rows, cols)
	}
	n, ok := mulFits(rows, cols)
	if !ok {
		return fmt.Errorf("ops: %s: the (%d, %d) matrix overflows", op, rows, cols)
	}
	return checkLen(op, x, n, fmt.Sprintf("%s, a (%d, %d) matrix,", name, rows, cols))
}

// Transpose2d returns the (cols, rows) transpose of the (rows, cols) matrix x.
func Transpose2d(x *Buffer, rows, cols int) (*Buffer, error) {
	if err := matrix("transpose2d", "x", x, rows, cols); err != nil {
		return nil, err
	}
	return transposeOp.call1(rows*cols, []*Buffer{x}, nil, []int{1, rows, cols})
}

// MaxRank is the largest rank of the N-D layout and reduction ops.
const MaxRank = 8

// shape checks that x holds a contiguous buffer of the given dims (rank <= MaxRank) and returns
// the element count.
func shape(op string, x *Buffer, dims []int, what string) (int, error) {
	n, err := dimsLen(op, dims, what)
	if err != nil {
		return 0, err
	}
	return n, checkLen(op, x, n, fmt.Sprintf("the buffer of %s %v", what, dims))
}

// dimsLen checks dims (rank <= MaxRank, no negative dimension, no overflow) and returns their
// element count.
func dimsLen(op string, dims []int, what string) (int, error) {
	if len(dims) > MaxRank {
		return 0, fmt.Errorf("ops: %s: rank %d of %s is above %d", op, len(dims), what, MaxRank)
	}
	for _, d := range dims {
		if d < 0 {
			return 0, fmt.Errorf("ops: %s: negative dimension in %s %v", op, what, dims)
		}
	}
	n, ok := mulFits(dims...)
	if !ok {
		return 0, fmt.Errorf("ops: %s: %s %v overflows", op, what, dims)
	}
	return n, nil
}

// SwapAdjacentAtDepth returns x (a contiguous buffer of the given dims, 2 <= rank <= 8) with the
// axes depth and depth+1 swapped.
func SwapAdjacentAtDepth(x *Buffer, dims []int, depth int) (*Buffer, error) {
	const op = "swap_adjacent_at_depth"
	n, err := shape(op, x, dims, "dims")
	if err != nil {
		return nil, err
	}
	if depth < 0 || depth >= len(dims)-1 { // not depth+1 >= len(dims): it overflows
		return nil, fmt.Errorf("ops: %s: depth %d does not name two adjacent axes of a rank-%d buffer", op, depth, len(dims))
	}
	outer, inner := 1, 1
	for _, d := range dims[:depth] {
		outer *= d
	}
	for _, d := range dims[depth+2:] {
		inner *= d
	}
	b, c := dims[depth], dims[depth+1]
	if inner == 1 {
		return transposeOp.call1(n, []*Buffer{x}, nil, []int{outer, b, c})
	}
	return swapAdjacentOp.call1(n, []*Buffer{x}, nil, []int{outer, b, c, inner})
}

// broadcast is the canonical form of a broadcast (inDims -> outDims by axisMap): the output
// axes of size 1 dropped and runs of adjacent axes of the same kind merged. Bit j of kept is set
// when axis j reads the input (an input axis of the same size), clear when it is broadcast.
type broadcast struct {
	dims      []int
	kept      uint
	inN, outN int
}

// newBroadcast checks (inDims, outDims, axisMap) in the convention of the seeds (ranks <= 8;
// axisMap[j] = 0: output axis j is inserted; k+1: it reads input axis k, whose size must be 1 or
// outDims[j]) and returns its canonical form. The nonzero entries of axisMap must increase (a
// broadcast does not permute), and input axes that no output axis reads must have size 1.
func newBroadcast(op string, inDims, outDims, axisMap []int) (broadcast, error) {
	var b broadcast
	var err error
	if b.inN, err = dimsLen(op, inDims, "inDims"); err != nil {
		return b, err
	}
	if b.outN, err = dimsLen(op, outDims, "outDims"); err != nil {
		return b, err
	}
	if len(axisMap) != len(outDims) {
		return b, fmt.Errorf("ops: %s: axisMap %v has %d entries for %d output axes", op, axisMap, len(axisMap), len(outDims))
	}
	read := make([]bool, len(inDims))
	last := -1
	for j, m := range axisMap {
		if m == 0 {
			continue
		}
		k := m - 1
		if k < 0 || k >= len(inDims) || k <= last {
			return b, fmt.Errorf("ops: %s: axisMap %v: entry %d is not an increasing input axis + 1", op, axisMap, j)
		}
		last, read[k] = k, true
		if inDims[k] != 1 && inDims[k] != outDims[j] {
			return b, fmt.Errorf("ops: %s: input axis %d of size %d cannot broadcast to %d", op, k, inDims[k], outDims[j])
		}
	}
	for k, r := range read {
		if !r && inDims[k] != 1 {
			return b, fmt.Errorf("ops: %s: input axis %d (size %d) is not in axisMap %v", op, k, inDims[k], axisMap)
		}
	}
	prev := -1 // kind of the last kept axis: 0 free, 1 kept
	for j, d := range outDims {
		if d == 1 {
			continue
		}
		kind := 0
		if axisMap[j] != 0 && inDims[axisMap[j]-1] == d {
			kind = 1
		}
		if kind == prev {
			b.dims[len(b.dims)-1] *= d
			continue
		}
		b.kept |= uint(kind) << len(b.dims)
		b.dims = append(b.dims, d)
		prev = kind
	}
	return b, nil
}

// sizes returns the kernel sizes (n, rank, kept, d0..d7) of the broadcast for n work items.
func (b broadcast) sizes(n int) []int {
	s := make([]int, 3+MaxRank)
	s[0], s[1], s[2] = n, len(b.dims), int(b.kept)
	copy(s[3:], b.dims)
	return s
}

// BroadcastTo returns x (of shape inDims) broadcast to outDims by axisMap, in the convention of
// the seeds: axisMap[j] = 0 inserts output axis j; axisMap[j] = k+1 reads input axis k, which
// must have size 1 (broadcast) or outDims[j]. Ranks are at most 8.
func BroadcastTo(x *Buffer, inDims, outDims, axisMap []int) (*Buffer, error) {
	const op = "broadcast_to"
	b, err := newBroadcast(op, inDims, outDims, axisMap)
	if err != nil {
		return nil, err
	}
	if err := checkLen(op, x, b.inN, fmt.Sprintf("inDims %v", inDims)); err != nil {
		return nil, err
	}
	switch {
	case b.outN == 0:
		return newBuffer(x.dev, 0)
	case b.kept == 1<<len(b.dims)-1: // nothing broadcast: a copy
		return copyAs(op, x)
	case len(b.dims) == 2 && b.kept == 2:
		y, err := BroadcastVecToRows(x, b.dims[0], b.dims[1])
		return y, asOp(op, err)
	case len(b.dims) == 2 && b.kept == 1:
		y, err := BroadcastVecToCols(x, b.dims[0], b.dims[1])
		return y, asOp(op, err)
	}
	return broadcastToOp.call1(b.outN, []*Buffer{x}, nil, b.sizes(b.outN))
}
