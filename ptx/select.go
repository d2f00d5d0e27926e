package ptx

// Select is the family of row sorts, top-k and multinomial sampling (select.cu; cpu/select.go).
const Select Module = "select"

// Sorting kernels. Rows of at most SORT_TILE (2048) elements take sort_rows (256-thread blocks,
// any grid); longer rows sort_rows_tile (256-thread blocks, any grid), then sort_rows_merge per
// doubling run width from SORT_TILE, then sort_rows_emit. Column indices are uint32 bits.
var (
	SortRows      = newKernel(Select, "sort_rows")
	SortRowsTile  = newKernel(Select, "sort_rows_tile")
	SortRowsMerge = newKernel(Select, "sort_rows_merge")
	SortRowsEmit  = newKernel(Select, "sort_rows_emit")
	SortRowsBwd   = newKernel(Select, "sort_rows_bwd")
)

// Multinomial sampling kernels: the weights' running sums and checks (multinomial_scan), draws
// with replacement (multinomial_draw), and the keys of draws without replacement
// (multinomial_keys, sorted by the kernels above). The key is passed as two float32s holding
// its low and high 32 bits.
var (
	MultinomialScan = newKernel(Select, "multinomial_scan")
	MultinomialDraw = newKernel(Select, "multinomial_draw")
	MultinomialKeys = newKernel(Select, "multinomial_keys")
)
