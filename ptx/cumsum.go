package ptx

// Cumsum is the family of cumulative sums along rows (cumsum.cu; cpu/cumsum.go): one thread per
// row, grid-stride over the rows; parameters (dst, src, rows, cols).
const Cumsum Module = "cumsum"

// Cumulative sums.
var (
	CumsumRows    = newKernel(Cumsum, "cumsum_rows")
	CumsumRowsBwd = newKernel(Cumsum, "cumsum_rows_bwd")
)
