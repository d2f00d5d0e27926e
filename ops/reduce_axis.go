package ops

import (
	"fmt"

	"github.com/torchlean-go/torchlean/cpu"
	"github.com/torchlean-go/torchlean/ptx"
)

// The axis-reduction family (ptx/reduce_axis.cu). Every order of operations is a function of
// the shape only, so both devices give the same bits in either mode (no atomics).
var (
	sumByRowOp = row(&kernelOp{name: "reduce_sum_by_row", outs: 1, ins: 1,
		grid: rowReduce(ptx.ReduceSumByRow, ptx.ReduceSumByRowWarp, ptx.ReduceSumByRowWarp16), units: size(0),
		cpu: func(h *hostArgs, lo, hi int) { cpu.ReduceSumByRow(h.b[0], h.b[1], h.s[1], h.f[0], lo, hi) }})
	maxByRowOp = row(&kernelOp{name: "reduce_max_by_row", outs: 1, ins: 1,
		grid: rowReduce(ptx.ReduceMaxByRow, ptx.ReduceMaxByRowWarp, ptx.ReduceMaxByRowWarp16), units: size(0),
		cpu: func(h *hostArgs, lo, hi int) { cpu.ReduceMaxByRow(h.b[0], h.b[1], h.s[1], lo, hi) }})
	sumByColOp = row(&kernelOp{name: "reduce_sum_by_column", kernel: ptx.ReduceSumByColumn, outs: 1, ins: 1,
		grid: stridedGrid{threads: columnThreads, block: columnBlock}, units: product(0, 2),
		cpu: func(h *hostArgs, lo, hi int) {
			cpu.ReduceSumByColumn(h.b[0], h.b[1], h.s[0], h.s[1], h.s[2], h.f[0], lo, hi)
		}})
	maxByColOp = row(&kernelOp{name: "reduce_max_by_column", kernel: ptx.ReduceMaxByColumn, outs: 1, ins: 1,
		grid: stridedGrid{threads: columnThreads, block: columnBlock}, units: product(0, 2),
		cpu: func(h *hostArgs, lo, hi int) { cpu.ReduceMaxByColumn(h.b[0], h.b[1], h.s[0], h.s[1], h.s[2], lo, hi) }})
	sumColChunksOp = row(&kernelOp{name: "reduce_sum_column_chunks", kernel: ptx.ReduceSumColChunks, outs: 1, ins: 1,
		grid: strided(chunkThreads), units: chunkUnits,
		cpu: func(h *hostArgs, lo, hi int) {
			cpu.ReduceSumColumnChunks(h.b[0], h.b[1], h.s[0], h.s[1], h.s[2], lo, hi)
		}})
	maxColChunksOp = row(&kernelOp{name: "reduce_max_column_chunks", kernel: ptx.ReduceMaxColChunks, outs: 1, ins: 1,
		grid: strided(chunkThreads), units: chunkUnits,
		cpu: func(h *hostArgs, lo, hi int) {
			cpu.ReduceMaxColumnChunks(h.b[0], h.b[1], h.s[0], h.s[1], h.s[2], lo, hi)
		}})
	sumByColChunkedOp = row(&kernelOp{name: "reduce_sum_by_column_chunked", kernel: ptx.ReduceSumByColumnChunked,
		outs: 1, ins: 1, grid: strided(chunkedThreads), units: product(0, 2),
		cpu: func(h *hostArgs, lo, hi int) {
			cpu.ReduceSumByColumnChunked(h.b[0], h.b[1], h.s[0], h.s[1], h.s[2], h.f[0], lo, hi)
		}})
	maxByColChunkedOp = row(&kernelOp{name: "reduce_max_by_column_chunked", kernel: ptx.ReduceMaxByColumnChunked,
		outs: 1, ins: 1, grid: strided(chunkedThreads), units: product(0, 2),
		cpu: func(h *hostArgs, lo, hi int) {
			cpu.ReduceMaxByColumnChunked(h.b[0], h.b[1], h.s[0], h.s[1], h.s[2], lo, hi)
		}})
	fromBroadcastOp = row(&kernelOp{name: "reduce_from_broadcast", kernel: ptx.ReduceFromBroadcast, outs: 1, ins: 1,
		grid: strided(size(0)), units: size(0),
		cpu: func(h *hostArgs, lo, hi int) {
			cpu.ReduceFromBroadcast(h.b[0], h.b[1], h.s[3:3+h.s[1]], uint(h.s[2]), lo, hi)
		}})
)

// rowWarpCols and rowHalfWarpCols are the longest rows the row reductions give one warp and 16
// lanes (8 partials per lane: 128 columns, the bound reduce_*_by_row_warp16 checks), instead of
// one block.
const rowWarpCols, rowHalfWarpCols = 1024, 128

// rowReduce is the geometry of a row reduction (sizes: rows, cols): one 256-thread block per row
// (kernel perBlock), for rows of at most rowWarpCols columns one warp per row (perWarp), and for
// rows of at most 128 columns 16 lanes per row (perHalfWarp); 256-thread blocks, grid-stride, at
// most 32 blocks per multiprocessor. Same order of operations.
func rowReduce(perBlock, perWarp, perHalfWarp *ptx.Kernel) grid {
	return pickedGrid(func(s []int, d gpuFacts) launchShape {
		rows, cols, k := s[0], s[1], perBlock
		switch {
		case cols <= rowHalfWarpCols:
			rows, k = (rows+15)/16, perHalfWarp
		case cols <= rowWarpCols:
			rows, k = (rows+7)/8, perWarp
		}
		blocks := max(1, min(rows, 32*max(d.sms, 1)))
		return launchShape{kernel: k, grid: [3]uint32{uint32(blocks), 1, 1}, block: [3]uint32{256, 1, 1}}
	})
}

func colChunks(rows int) int { return (rows + cpu.ColChunk - 1) / cpu.ColChunk }

// chunkUnits and chunkThreads are the CPU units (batch*chunks) and GPU threads of a
// column-chunk kernel with sizes (batch, rows, cols): one per chunk and column, or per chunk and
// 4 adjacent columns when cols % 4 == 0 (the kernel's 16-byte path).
func chunkUnits(s []int) int   { return s[0] * colChunks(s[1]) }
func chunkThreads(s []int) int { return chunkUnits(s) * (s[2] / vecColumns(s[2])) }

// vecColumns returns the columns per thread of the 16-byte column paths: 4 when cols % 4 == 0.
func vecColumns(cols int) int {
	if cols%4 == 0 {
		return 4
	}
	return 1
}

// chunkedThreads is the thread count of the one-pass chunked column kernels, sizes (batch, rows,
// cols): one per matrix and vector of vecColumns columns.
func chunkedThreads(s []int) int { return s[0] * (s[2] / vecColumns(s[2])) }

// columnThreads and columnBlock are the launch of the column kernels, sizes (batch, rows, cols).
// Columns of at most cpu.ColChunk rows: one thread per column, in blocks of 256 threads or fewer
// (down to 32) while that leaves fewer than 128 blocks, to spread few columns over more
// multiprocessors. Longer columns (stage 2 of a long column reduction) take the kernel's tiled
// path: a 256-thread block per strip of 8 columns.
func columnThreads(s []int) int {
	if s[1] > cpu.ColChunk {
		return s[0] * ((s[2] + 7) / 8) * 256
	}
	return s[0] * s[2]
}

func columnBlock(s []int) [2]uint32 {
	t := 256
	for s[1] <= cpu.ColChunk && t > 32 && s[0]*s[2] < 128*t {
		t /= 2
	}
	return [2]uint32{uint32(t), 1}
}

// chunkedMinColumns is the number of columns (batch*cols) from which byColumn reduces long
// columns in one pass: enough threads to keep the memory busy without a second stage (with fewer
// columns the two stages are faster: BENCHMARKS.md, "Figures behind the code").
const chunkedMinColumns = 1 << 18

// ReduceSumByRow returns the row sums (length rows) of a (rows, cols) matrix; 0 for empty rows.
// The order of additions depends on cols only (cpu.ReduceSumByRow).
func ReduceSumByRow(x *Buffer, rows, cols int) (*Buffer, error) {
	return byRow("reduce_sum_by_row", x, rows, cols, 1)
}

// ReduceMeanByRow returns the row means: ReduceSumByRow divided by cols (NaN for empty rows).
func ReduceMeanByRow(x *Buffer, rows, cols int) (*Buffer, error) {
	return byRow("reduce_mean_by_row", x, rows, cols, float32(cols))
}

func byRow(op string, x *Buffer, rows, cols int, div float32) (*Buffer, error) {
	if err := matrix(op, "x", x, rows, cols); err != nil {
		return nil, err
	}
	return sumByRowOp.call1(rows, []*Buffer{x}, nil, []int{rows, cols}, div)
}

// ReduceMaxByRow returns the row maxima (length rows); NaN propagates; 0 for empty rows.
func ReduceMaxByRow(x *Buffer, rows, cols int) (*Buffer, error) {
	if err := matrix("reduce_max_by_row", "x", x, rows, cols); err != nil {
		return nil, err
	}
	return maxByRowOp.call1(rows, []*Buffer{x}, nil, []int{rows, cols})
}

// ReduceSumByColumn returns the column sums (length cols); 0 when rows = 0. Rows are added in
// order within chunks of cpu.ColChunk rows, and the chunk sums in order.
func ReduceSumByColumn(x *Buffer, rows, cols int) (*Buffer, error) {
	if err := matrix("reduce_sum_by_column", "x", x, rows, cols); err != nil {
		return nil, err
	}
	return byColumn(x, 1, rows, cols, 1, false)
}

// ReduceMeanByColumn returns the column means: ReduceSumByColumn divided by rows (NaN when
// rows = 0).
func ReduceMeanByColumn(x *Buffer, rows, cols int) (*Buffer, error) {
	if err := matrix("reduce_mean_by_column", "x", x, rows, cols); err != nil {
		return nil, err
	}
	return byColumn(x, 1, rows, cols, float32(rows), false)
}

// ReduceMaxByColumn returns the column maxima (length cols); NaN propagates; 0 when rows = 0.
func ReduceMaxByColumn(x *Buffer, rows, cols int) (*Buffer, error) {
	if err := matrix("reduce_max_by_column", "x", x, rows, cols); err != nil {
		return nil, err
	}
	return byColumn(x, 1, rows, cols, 1, true)
}

// byColumn reduces the columns of a batch of (rows, cols) matrices into (batch, cols): directly
// for at most cpu.ColChunk rows, else in two stages (chunks of cpu.ColChunk rows, then the chunk
// results in order), run as one pass when the columns are many. Sums are divided by div at the
// end.
func byColumn(x *Buffer, batch, rows, cols int, div float32, isMax bool) (*Buffer, error) {
	chunks, final, chunked := sumColChunksOp, sumByColOp, sumByColChunkedOp
	var scalars []float32
	if isMax {
		chunks, final, chunked = maxColChunksOp, maxByColOp, maxByColChunkedOp
	} else {
		scalars = []float32{div}
	}
	if rows <= cpu.ColChunk {
		return final.call1(batch*cols, []*Buffer{x}, nil, []int{batch, rows, cols}, scalars...)
	}
	if batch*cols >= chunkedMinColumns {
		return chunked.call1(batch*cols, []*Buffer{x}, nil, []int{batch, rows, cols}, scalars...)
	}
	n := colChunks(rows)
	part, err := chunks.call1(batch*n*cols, []*Buffer{x}, nil, []int{batch, rows, cols})
	if err != nil {
		return nil, err
	}
	defer part.Release()
	return final.call1(batch*cols, []*Buffer{part}, nil, []int{batch, n, cols}, scalars...)
}

// ReduceSumAxis returns the sums along axis of x, a contiguous buffer of the given dims
// (outermost first, rank <= 8), laid out with dims minus that axis. Rank 0 with axis 0 returns a
// copy of the scalar (another axis is an error); an empty axis gives zeros. The order is the row reduction's when axis is the last one
// (of the dims other than 1), else the column reduction's (batched over the outer axes).
func ReduceSumAxis(x *Buffer, dims []int, axis int) (*Buffer, error) {
	return reduceAxis("reduce_sum_axis", x, dims, axis, false)
}

// ReduceMeanAxis is ReduceSumAxis divided by dims[axis] (NaN for an empty axis).
func ReduceMeanAxis(x *Buffer, dims []int, axis int) (*Buffer, error) {
	return reduceAxis("reduce_mean_axis", x, dims, axis, true)
}

func reduceAxis(op string, x *Buffer, dims []int, axis int, mean bool) (*Buffer, error) {
	if _, err := shape(op, x, dims, "dims"); err != nil {
		return nil, err
	}
	if len(dims) == 0 && axis == 0 { // a scalar, as PyTorch's sum(dim=0) of a 0-d tensor
		return copyAs(op, x)
	}
	if axis < 0 || axis >= len(dims) {
		return nil, fmt.Errorf("ops: %s: axis %d of a rank-%d buffer", op, axis, len(dims))
	}
	outer, ok1 := mulFits(dims[:axis]...)
	inner, ok2 := mulFits(dims[axis+1:]...)
	if _, ok3 := mulFits(outer, inner); !ok1 || !ok2 || !ok3 { // possible when dims[axis] == 0
		return nil, fmt.Errorf("ops: %s: the result of dims %v without axis %d overflows", op, dims, axis)
	}
	n := dims[axis]
	div := float32(1)
	if mean {
		div = float32(n)
	}
	if inner == 1 {
		return sumByRowOp.call1(outer, []*Buffer{x}, nil, []int{outer, n}, div)
	}
	return byColumn(x, outer, n, inner, div, false)
}

// ReduceFromBroadcastTo is the adjoint of BroadcastTo for the same (inDims, outDims, axisMap):
// it sums dOut (of shape outDims) over the broadcast axes into the shape inDims. Every pattern
// has a fixed order: a copy when nothing is broadcast, the whole-buffer sum for a scalar input,
// the column or row reduction when the broadcast axes lead or trail, and otherwise one sum per
// input element over the broadcast axes in row-major order (from -0.0). An empty dOut gives
// zeros.
func ReduceFromBroadcastTo(dOut *Buffer, inDims, outDims, axisMap []int) (*Buffer, error) {
	const op = "reduce_from_broadcast"
	b, err := newBroadcast(op, inDims, outDims, axisMap)
	if err != nil {
		return nil, err
	}
	if err := checkLen(op, dOut, b.outN, fmt.Sprintf("outDims %v", outDims)); err != nil {
		return nil, err
	}
	r := len(b.dims)
	switch {
	case b.outN == 0:
		return full(op, dOut.dev, b.inN, 0)
	case b.kept == 1<<r-1:
		return copyAs(op, dOut)
	case b.kept == 0:
		return Sum(dOut)
	case r == 2 && b.kept == 2: // (free, kept)
		return byColumn(dOut, 1, b.dims[0], b.dims[1], 1, false)
	case r == 2 && b.kept == 1: // (kept, free)
		return sumByRowOp.call1(b.dims[0], []*Buffer{dOut}, nil, []int{b.dims[0], b.dims[1]}, 1)
	case r == 3 && b.kept == 5: // (kept, free, kept)
		return byColumn(dOut, b.dims[0], b.dims[1], b.dims[2], 1, false)
	}
	return fromBroadcastOp.call1(b.inN, []*Buffer{dOut}, nil, b.sizes(b.inN))
}
