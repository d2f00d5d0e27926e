package cpu

// Cumulative sums along the rows of a row-major (rows, cols) matrix: the twins of
// ptx/cumsum.cu. Each row is one sequential chain of float32 additions in a fixed order (one
// GPU thread per row), so the result depends on the row's values only.

// CumsumRows writes the inclusive prefix sums of rows [lo, hi) of x into dst, in ascending
// order, one addition at a time:
//
//	dst[r, 0] = x[r, 0]                  // copied: a -0 stays -0
//	dst[r, j] = dst[r, j-1] + x[r, j]    // j = 1 .. cols-1
func CumsumRows(dst, x []float32, cols, lo, hi int) {
	if cols == 0 {
		return
	}
	for r := lo; r < hi; r++ {
		xr, yr := x[r*cols:(r+1)*cols], dst[r*cols:(r+1)*cols]
		acc := xr[0]
		yr[0] = acc
		for j := 1; j < cols; j++ {
			acc += xr[j]
			yr[j] = acc
		}
	}
}

// CumsumRowsBwd writes the gradient of CumsumRows for the cotangent g, the reverse inclusive
// sums of rows [lo, hi) of g, in descending order, one addition at a time:
//
//	dx[r, cols-1] = g[r, cols-1]
//	dx[r, j] = dx[r, j+1] + g[r, j]      // j = cols-2 .. 0
func CumsumRowsBwd(dx, g []float32, cols, lo, hi int) {
	if cols == 0 {
		return
	}
	for r := lo; r < hi; r++ {
		gr, dr := g[r*cols:(r+1)*cols], dx[r*cols:(r+1)*cols]
		acc := gr[cols-1]
		dr[cols-1] = acc
		for j := cols - 2; j >= 0; j-- {
			acc += gr[j]
			dr[j] = acc
		}
	}
}
