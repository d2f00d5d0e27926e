package cpu

import "math"

// Reductions along one axis of a row-major (rows, cols) buffer: the twins of
// ptx/reduce_axis.cu. The order of operations depends on the shape only.

const rowThreads = 256

// rowReduce folds each row r in [lo, hi) as the GPU does with one 256-thread block per row
// (rowStat from identity id with f); an empty row gives 0.
func rowReduce(dst, x []float32, cols, lo, hi int, id float32, f func(a, b float32) float32) {
	var p [rowThreads]float32
	for r := lo; r < hi; r++ {
		if cols == 0 {
			dst[r] = 0
			continue
		}
		row := x[r*cols : (r+1)*cols]
		dst[r] = rowStat(&p, cols, id, nil, func(c int) float32 { return row[c] }, f)
	}
}

func add(a, b float32) float32 { return a + b }

// ReduceSumByRow: dst[r] = sum of row r (rowReduce with identity -0.0 and +), r in [lo, hi).
func ReduceSumByRow(dst, x []float32, cols, lo, hi int) {
	rowReduce(dst, x, cols, lo, hi, negZero, add)
}

// ReduceMaxByRow: dst[r] = max of row r (rowReduce with identity -Inf and Maxf), r in [lo, hi).
func ReduceMaxByRow(dst, x []float32, cols, lo, hi int) {
	rowReduce(dst, x, cols, lo, hi, float32(math.Inf(-1)), Maxf)
}

// ReduceSumByColumn: dst[c] = ((-0.0 + x[0,c]) + x[1,c]) + ... for columns c in [lo, hi); 0 when
// rows == 0. (The loop runs row by row over the columns: the same order per column.)
func ReduceSumByColumn(dst, x []float32, rows, cols, lo, hi int) {
	out := dst[lo:hi]
	for c := range out {
		out[c] = negZero
	}
	for r := 0; r < rows; r++ {
		row := x[r*cols+lo : r*cols+hi]
		for c, v := range row {
			out[c] += v
		}
	}
	if rows == 0 {
		clear(out)
	}
}

// ReduceMaxByColumn: dst[c] = Maxf(...Maxf(Maxf(-Inf, x[0,c]), x[1,c])...) for columns c in
// [lo, hi); 0 when rows == 0.
func ReduceMaxByColumn(dst, x []float32, rows, cols, lo, hi int) {
	out := dst[lo:hi]
	for c := range out {
		out[c] = float32(math.Inf(-1))
	}
	for r := 0; r < rows; r++ {
		row := x[r*cols+lo : r*cols+hi]
		for c, v := range row {
			out[c] = Maxf(out[c], v)
		}
	}
	if rows == 0 {
		clear(out)
	}
}

// ColChunk is the number of rows each first-stage chunk of a column reduction covers.
const ColChunk = 64

// ReduceSumColumnChunks: for chunks ch in [lo, hi), dst[ch*cols + c] = ReduceSumByColumn of rows
// [ch*ColChunk, min(rows, (ch+1)*ColChunk)) of column c (stage 1 of a two-stage column sum).
func ReduceSumColumnChunks(dst, x []float32, rows, cols, lo, hi int) {
	for ch := lo; ch < hi; ch++ {
		r0, r1 := ch*ColChunk, min(rows, (ch+1)*ColChunk)
		ReduceSumByColumn(dst[ch*cols:(ch+1)*cols], x[r0*cols:r1*cols], r1-r0, cols, 0, cols)
	}
}

// ReduceMaxColumnChunks is ReduceSumColumnChunks with ReduceMaxByColumn.
func ReduceMaxColumnChunks(dst, x []float32, rows, cols, lo, hi int) {
	for ch := lo; ch < hi; ch++ {
		r0, r1 := ch*ColChunk, min(rows, (ch+1)*ColChunk)
		ReduceMaxByColumn(dst[ch*cols:(ch+1)*cols], x[r0*cols:r1*cols], r1-r0, cols, 0, cols)
	}
}
