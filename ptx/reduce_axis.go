package ptx

// ReduceAxis is the family of axis reductions (reduce_axis.cu; cpu/reduce_axis.go).
const ReduceAxis Module = "reduce_axis"

// Axis reductions.
var (
	ReduceSumByRow       = newKernel(ReduceAxis, "reduce_sum_by_row")
	ReduceMaxByRow       = newKernel(ReduceAxis, "reduce_max_by_row")
	ReduceSumByRowWarp   = newKernel(ReduceAxis, "reduce_sum_by_row_warp")
	ReduceMaxByRowWarp   = newKernel(ReduceAxis, "reduce_max_by_row_warp")
	ReduceSumByRowWarp16 = newKernel(ReduceAxis, "reduce_sum_by_row_warp16")
	ReduceMaxByRowWarp16 = newKernel(ReduceAxis, "reduce_max_by_row_warp16")
	ReduceSumByColumn    = newKernel(ReduceAxis, "reduce_sum_by_column")
	ReduceMaxByColumn    = newKernel(ReduceAxis, "reduce_max_by_column")
	ReduceSumColChunks   = newKernel(ReduceAxis, "reduce_sum_column_chunks")
	ReduceMaxColChunks   = newKernel(ReduceAxis, "reduce_max_column_chunks")
	ReduceFromBroadcast  = newKernel(ReduceAxis, "reduce_from_broadcast")
)

// One-pass chunked column reductions: the two stages of reduce_*_column_chunks and
// reduce_*_by_column in one kernel.
var (
	ReduceSumByColumnChunked = newKernel(ReduceAxis, "reduce_sum_by_column_chunked")
	ReduceMaxByColumnChunked = newKernel(ReduceAxis, "reduce_max_by_column_chunked")
)
