package ops

import (
	"fmt"
	"runtime"

	"github.com/torchlean-go/torchlean/cpu"
	"github.com/torchlean-go/torchlean/ptx"
)

// The layout and axis-reduction family: kernels with parameters (out, inputs..., a, b) where a
// and b are sizes. Each row pairs the PTX kernel with its CPU twin and says how the GPU grid is
// laid out (grid, over space(a, b) work items for grid-stride kernels). The CPU twin fills
// out[lo:hi] of its index space of cpuSpace(a, b) units (e.g. rows or columns; nil: space).
type shapeOp struct {
	name     string
	kernel   *ptx.Kernel
	ins      int
	grid     gridKind
	space    func(a, b int) int
	cpuSpace func(a, b int) int
	cpu      func(out []float32, in [2][]float32, a, b, lo, hi int)
}

type gridKind int

const (
	gridStride gridKind = iota // 256-thread blocks over space(a, b) items
	gridRows                   // one 256-thread block per row (a rows)
	gridTiles                  // 32x8-thread blocks over 32x32 tiles of an (a, b) matrix
)

var (
	concat1dOp = &shapeOp{"concat1d", ptx.Concat1d, 2, gridStride, func(a, b int) int { return a + b }, nil,
		func(o []float32, in [2][]float32, a, b, lo, hi int) { cpu.Concat1d(o, in[0][:a], in[1][:b], lo, hi) }}
	slice1dOp = &shapeOp{"slice1d", ptx.Slice1d, 1, gridStride, func(a, b int) int { return b }, nil,
		func(o []float32, in [2][]float32, a, b, lo, hi int) { cpu.Slice1d(o, in[0], a, lo, hi) }}
	vecToRowsOp = &shapeOp{"broadcast_vec_to_rows", ptx.BroadcastVecToRows, 1, gridStride, func(a, b int) int { return a * b }, rowsSpace,
		func(o []float32, in [2][]float32, a, b, lo, hi int) { cpu.BroadcastVecToRows(o, in[0], b, lo, hi) }}
	vecToColsOp = &shapeOp{"broadcast_vec_to_cols", ptx.BroadcastVecToCols, 1, gridStride, func(a, b int) int { return a * b }, rowsSpace,
		func(o []float32, in [2][]float32, a, b, lo, hi int) { cpu.BroadcastVecToCols(o, in[0], b, lo, hi) }}
	transposeOp = &shapeOp{"transpose2d", ptx.Transpose2d, 1, gridTiles, func(a, b int) int { return a * b }, func(a, b int) int { return b },
		func(o []float32, in [2][]float32, a, b, lo, hi int) { cpu.Transpose2d(o, in[0], a, b, lo, hi) }}
	sumByRowOp = &shapeOp{"reduce_sum_by_row", ptx.ReduceSumByRow, 1, gridRows, func(a, b int) int { return a }, nil,
		func(o []float32, in [2][]float32, a, b, lo, hi int) { cpu.ReduceSumByRow(o, in[0], b, lo, hi) }}
	maxByRowOp = &shapeOp{"reduce_max_by_row", ptx.ReduceMaxByRow, 1, gridRows, func(a, b int) int { return a }, nil,
		func(o []float32, in [2][]float32, a, b, lo, hi int) { cpu.ReduceMaxByRow(o, in[0], b, lo, hi) }}
	sumByColOp = &shapeOp{"reduce_sum_by_column", ptx.ReduceSumByColumn, 1, gridStride, func(a, b int) int { return b }, nil,
		func(o []float32, in [2][]float32, a, b, lo, hi int) { cpu.ReduceSumByColumn(o, in[0], a, b, lo, hi) }}
	sumColChunksOp = &shapeOp{"reduce_sum_column_chunks", ptx.ReduceSumColChunks, 1, gridStride, func(a, b int) int { return colChunks(a) * b }, func(a, b int) int { return colChunks(a) },
		func(o []float32, in [2][]float32, a, b, lo, hi int) {
			cpu.ReduceSumColumnChunks(o, in[0], a, b, lo, hi)
		}}
	maxColChunksOp = &shapeOp{"reduce_max_column_chunks", ptx.ReduceMaxColChunks, 1, gridStride, func(a, b int) int { return colChunks(a) * b }, func(a, b int) int { return colChunks(a) },
		func(o []float32, in [2][]float32, a, b, lo, hi int) {
			cpu.ReduceMaxColumnChunks(o, in[0], a, b, lo, hi)
		}}
	maxByColOp = &shapeOp{"reduce_max_by_column", ptx.ReduceMaxByColumn, 1, gridStride, func(a, b int) int { return b }, nil,
		func(o []float32, in [2][]float32, a, b, lo, hi int) { cpu.ReduceMaxByColumn(o, in[0], a, b, lo, hi) }}
)

// cpuUnits returns the length of the CPU twin's index space.
func (op *shapeOp) cpuUnits(a, b int) int {
	if op.cpuSpace != nil {
		return op.cpuSpace(a, b)
	}
	return op.space(a, b)
}

// run checks nothing about sizes (the exported functions do) and runs the kernel into a fresh
// buffer of outLen elements.
func (op *shapeOp) run(ins []*Buffer, a, b, outLen int) (*Buffer, error) {
	d := ins[0].dev
	for _, x := range ins {
		if err := x.live(); err != nil {
			return nil, fmt.Errorf("%w (%s)", err, op.name)
		}
		if x.dev != d {
			return nil, fmt.Errorf("ops: %s: operands on different devices (%s, %s)", op.name, d, x.dev)
		}
	}
	out, err := newBuffer(d, outLen)
	if err != nil || outLen == 0 {
		return out, err
	}
	var im [2]storage
	for k, x := range ins {
		im[k] = x.mem
	}
	err = d.be.shapeKernel(op, out.mem, im, a, b)
	for _, x := range ins {
		runtime.KeepAlive(x)
	}
	if err != nil {
		out.Release()
		return nil, fmt.Errorf("ops: %s: %w", op.name, err)
	}
	return out, nil
}

func checkLen(op string, x *Buffer, want int, what string) error {
	if err := x.live(); err != nil {
		return fmt.Errorf("%w (%s)", err, op)
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
	return concat1dOp.run([]*Buffer{a, b}, n, m, n+m)
}

// Slice1d returns x[start : start+length]; x must have n elements and start+length <= n.
func Slice1d(x *Buffer, n, start, length int) (*Buffer, error) {
	if err := checkLen("slice1d", x, n, "x"); err != nil {
		return nil, err
	}
	if start < 0 || length < 0 || start+length > n {
		return nil, fmt.Errorf("ops: slice1d: [%d, %d+%d) is outside a buffer of %d", start, start, length, n)
	}
	return slice1dOp.run([]*Buffer{x}, start, length, length)
}

// BroadcastVecToRows returns the (rows, cols) matrix whose every row is vec (length cols).
func BroadcastVecToRows(vec *Buffer, rows, cols int) (*Buffer, error) {
	if err := checkLen("broadcast_vec_to_rows", vec, cols, "vec"); err != nil {
		return nil, err
	}
	if rows < 0 {
		return nil, fmt.Errorf("ops: broadcast_vec_to_rows: negative rows %d", rows)
	}
	return vecToRowsOp.run([]*Buffer{vec}, rows, cols, rows*cols)
}

// BroadcastVecToCols returns the (rows, cols) matrix whose every column is vec (length rows).
func BroadcastVecToCols(vec *Buffer, rows, cols int) (*Buffer, error) {
	if err := checkLen("broadcast_vec_to_cols", vec, rows, "vec"); err != nil {
		return nil, err
	}
	if cols < 0 {
		return nil, fmt.Errorf("ops: broadcast_vec_to_cols: negative cols %d", cols)
	}
	return vecToColsOp.run([]*Buffer{vec}, rows, cols, rows*cols)
}

// matrix checks that x holds a (rows, cols) matrix.
func matrix(op string, x *Buffer, rows, cols int) error {
	if rows < 0 || cols < 0 {
		return fmt.Errorf("ops: %s: negative shape (%d, %d)", op, rows, cols)
	}
	return checkLen(op, x, rows*cols, fmt.Sprintf("the (%d, %d) matrix", rows, cols))
}

// Transpose2d returns the (cols, rows) transpose of the (rows, cols) matrix x.
func Transpose2d(x *Buffer, rows, cols int) (*Buffer, error) {
	if err := matrix("transpose2d", x, rows, cols); err != nil {
		return nil, err
	}
	return transposeOp.run([]*Buffer{x}, rows, cols, rows*cols)
}

// ReduceSumByRow returns the rows sums (length rows) of a (rows, cols) matrix; 0 for empty rows.
// The order of additions depends on cols only (cpu.ReduceSumByRow).
func ReduceSumByRow(x *Buffer, rows, cols int) (*Buffer, error) {
	if err := matrix("reduce_sum_by_row", x, rows, cols); err != nil {
		return nil, err
	}
	return sumByRowOp.run([]*Buffer{x}, rows, cols, rows)
}

// ReduceMaxByRow returns the row maxima (length rows); NaN propagates; 0 for empty rows.
func ReduceMaxByRow(x *Buffer, rows, cols int) (*Buffer, error) {
	if err := matrix("reduce_max_by_row", x, rows, cols); err != nil {
		return nil, err
	}
	return maxByRowOp.run([]*Buffer{x}, rows, cols, rows)
}

func colChunks(rows int) int { return (rows + cpu.ColChunk - 1) / cpu.ColChunk }

// byColumn runs a column reduction: directly for at most cpu.ColChunk rows, else in two stages
// (chunks of cpu.ColChunk rows, then the chunk results in order).
func byColumn(x *Buffer, rows, cols int, chunks, final *shapeOp) (*Buffer, error) {
	if rows <= cpu.ColChunk {
		return final.run([]*Buffer{x}, rows, cols, cols)
	}
	n := colChunks(rows)
	part, err := chunks.run([]*Buffer{x}, rows, cols, n*cols)
	if err != nil {
		return nil, err
	}
	defer part.Release()
	return final.run([]*Buffer{part}, n, cols, cols)
}

// ReduceSumByColumn returns the column sums (length cols); 0 when rows = 0. Rows are added in
// order within chunks of cpu.ColChunk rows, and the chunk sums in order.
func ReduceSumByColumn(x *Buffer, rows, cols int) (*Buffer, error) {
	if err := matrix("reduce_sum_by_column", x, rows, cols); err != nil {
		return nil, err
	}
	return byColumn(x, rows, cols, sumColChunksOp, sumByColOp)
}

// ReduceMaxByColumn returns the column maxima (length cols); NaN propagates; 0 when rows = 0.
func ReduceMaxByColumn(x *Buffer, rows, cols int) (*Buffer, error) {
	if err := matrix("reduce_max_by_column", x, rows, cols); err != nil {
		return nil, err
	}
	return byColumn(x, rows, cols, maxColChunksOp, maxByColOp)
}
