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

// Transpose2d: dst[b, c, r] = x[b, r, c] for a batch of (rows, cols) inputs, over units
// b*cols + c in [lo, hi) (output rows), in 32x32 tiles.
func Transpose2d(dst, x []float32, batch, rows, cols, lo, hi int) {
	const tile = 32
	batchColumns(cols, lo, hi, func(b, lo, hi int) {
		xb, ob := x[b*rows*cols:(b+1)*rows*cols], dst[b*rows*cols:(b+1)*rows*cols]
		for c0 := lo; c0 < hi; c0 += tile {
			c1 := min(hi, c0+tile)
			for r0 := 0; r0 < rows; r0 += tile {
				r1 := min(rows, r0+tile)
				// Whole 8x8 blocks in registers where the CPU has AVX, the edges element by element.
				rEnd, cEnd := transposeBlocks8(ob, xb, rows, cols, r0, r1, c0, c1)
				for c := c0; c < c1; c++ {
					out := ob[c*rows : (c+1)*rows]
					rs := r0
					if c < cEnd {
						rs = rEnd
					}
					for r := rs; r < r1; r++ {
						out[r] = xb[r*cols+c]
					}
				}
			}
		}
	})
}

// SwapAdjacent: dst[a, c, b, :] = x[a, b, c, :] for an (na, nb, nc, nd) input, over output rows
// u = (a*nc + c)*nb + b in [lo, hi) of nd elements each.
func SwapAdjacent(dst, x []float32, na, nb, nc, nd, lo, hi int) {
	for u := lo; u < hi; u++ {
		b, t := u%nb, u/nb
		c, a := t%nc, t/nc
		src := ((a*nb+b)*nc + c) * nd
		copy(dst[u*nd:(u+1)*nd], x[src:src+nd])
	}
}

// BroadcastTo is the twin of broadcast_to: an output with dims (outermost first) whose axis j
// reads the input along an axis of the same size when bit j of kept is set and is broadcast
// otherwise; the input is the kept axes in order, contiguous. It fills output elements [lo, hi).
func BroadcastTo(dst, x []float32, dims []int, kept uint, lo, hi int) {
	r := len(dims)
	if r == 0 {
		if lo < hi {
			dst[0] = x[0]
		}
		return
	}
	last, lastKept := dims[r-1], kept>>(r-1)&1 != 0
	for i := lo; i < hi; {
		// The offset of element i, then the rest of its run along the last axis at once.
		rem, off, stride := i, 0, 1
		for j := r - 1; j >= 0; j-- {
			c := rem % dims[j]
			rem /= dims[j]
			if kept>>j&1 != 0 {
				off += c * stride
				stride *= dims[j]
			}
		}
		run := min(hi-i, last-i%last)
		out := dst[i : i+run]
		if lastKept {
			copy(out, x[off:off+run])
		} else {
			for k := range out {
				out[k] = x[off]
			}
		}
		i += run
	}
}
