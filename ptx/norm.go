package ptx

// Norm is the layer norm family (norm.cu; cpu/norm.go).
const Norm Module = "norm"

// Layer norm kernels.
var (
	// In blocks of 256 threads (any grid computes the same values; these give one block per unit
	// of work, see norm.cu): layer_norm_fwd takes rows blocks (capped at will);
	// layer_norm_bwd takes ceil(rows/64) blocks when cols <= 4096 and rows >= 4096, else
	// rows + ceil(rows/64)*ceil(cols/256).
	LayerNormFwd = newKernel(Norm, "layer_norm_fwd")
	// LayerNormFwdRow is LayerNormFwd for rows of 1024 < cols <= 4096 (fewer registers).
	LayerNormFwdRow = newKernel(Norm, "layer_norm_fwd_row")
	LayerNormBwd    = newKernel(Norm, "layer_norm_bwd")
)
