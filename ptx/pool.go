package ptx

// Pool is the pooling family (pool.cu; cpu/pool.go): max, average and smooth-max pooling of
// spatial rank 1 to 8, channel-first, forwards one thread per output element, backwards
// gather-style one thread per input element; parameters (destinations, inputs, nc, then (in,
// out, k, s, p) for each of the 8 axes[, countIncludePad | beta]).
const Pool Module = "pool"

// Pooling kernels: max pooling's value and argmax (the window offset of the first maximum, as a
// float), apart or both in one pass, and its gather backward from the argmax; average pooling; smooth max pooling's value,
// its window statistics (pivot, sum of exponentials) and its gather backward from them.
var (
	MaxPoolFwd         = newKernel(Pool, "max_pool_fwd")
	MaxPoolArgmax      = newKernel(Pool, "max_pool_argmax")
	MaxPoolFwdArgmax   = newKernel(Pool, "max_pool_fwd_argmax")
	MaxPoolBwd         = newKernel(Pool, "max_pool_bwd")
	AvgPoolFwd         = newKernel(Pool, "avg_pool_fwd")
	AvgPoolBwd         = newKernel(Pool, "avg_pool_bwd")
	SmoothMaxPoolFwd   = newKernel(Pool, "smooth_max_pool_fwd")
	SmoothMaxPoolStats = newKernel(Pool, "smooth_max_pool_stats")
	SmoothMaxPoolBwd   = newKernel(Pool, "smooth_max_pool_bwd")
)
