package ptx

// Index is the indexing family (index.cu; cpu/index.go).
const Index Module = "index"

// Indexing kernels (host indices uploaded as u32).
var (
	GatherRows           = newKernel(Index, "gather_rows")
	ScatterAddRowsAtomic = newKernel(Index, "scatter_add_rows_atomic")
	ScatterAddRowsSorted = newKernel(Index, "scatter_add_rows_sorted")
)
