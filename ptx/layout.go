package ptx

// Layout is the family of copies that move elements without arithmetic (layout.cu; cpu/layout.go).
const Layout Module = "layout"

// Layout kernels.
var (
	Concat1d           = newKernel(Layout, "concat1d")
	Slice1d            = newKernel(Layout, "slice1d")
	BroadcastVecToRows = newKernel(Layout, "broadcast_vec_to_rows")
	BroadcastVecToCols = newKernel(Layout, "broadcast_vec_to_cols")
	Transpose2d        = newKernel(Layout, "transpose2d")
	SwapAdjacent       = newKernel(Layout, "swap_adjacent")
	BroadcastTo        = newKernel(Layout, "broadcast_to")
)
