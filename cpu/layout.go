package cpu

// Layout kernels: the twins of ptx/layout.cu. Each fills dst[lo:hi] of its output index space
// (stated per kernel), so that callers may split the work.

// Concat1d: dst[i] = i < len(a) ? a[i] : b[i-len(a)], for i in [lo, hi).
func Concat1d(dst, a, b []float32, lo, hi int) {
	for i := lo; i < hi; i++ {
		if i < len(a) {
			dst[i] = a[i]
		} else {
			dst[i] = b[i-len(a)]
		}
	}
}

// Slice1d: dst[i] = x[start+i], for i in [lo, hi).
func Slice1d(dst, x []float32, start, lo, hi int) { copy(dst[lo:hi], x[start+lo:start+hi]) }

// BroadcastVecToRows: dst[r*cols+c] = vec[c] for output rows r in [lo, hi).
func BroadcastVecToRows(dst, vec []float32, cols, lo, hi int) {
	for r := lo; r < hi; r++ {
		copy(dst[r*cols:(r+1)*cols], vec[:cols])
	}
}

// BroadcastVecToCols: dst[r*cols+c] = vec[r] for output rows r in [lo, hi).
func BroadcastVecToCols(dst, vec []float32, cols, lo, hi int) {
	for r := lo; r < hi; r++ {
		row := dst[r*cols : (r+1)*cols]
		for c := range row {
			row[c] = vec[r]
		}
	}
}

// Transpose2d: dst[c*rows+r] = x[r*cols+c] for output rows c in [lo, hi) (input columns),
// in 32x32 tiles.
func Transpose2d(dst, x []float32, rows, cols, lo, hi int) {
	const tile = 32
	for c0 := lo; c0 < hi; c0 += tile {
		c1 := min(hi, c0+tile)
		for r0 := 0; r0 < rows; r0 += tile {
			r1 := min(rows, r0+tile)
			for c := c0; c < c1; c++ {
				out := dst[c*rows : (c+1)*rows]
				for r := r0; r < r1; r++ {
					out[r] = x[r*cols+c]
				}
			}
		}
	}
}
