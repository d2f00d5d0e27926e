package ptx

// The kernel families.
const (
	Elementwise Module = "elementwise"
	// ElementwiseMath holds the pointwise kernels built on exp, log and tanh (f32math.cuh).
	ElementwiseMath Module = "elementwise_math"
	RNG             Module = "rng"
	Reduce          Module = "reduce"
	Layout          Module = "layout"
	ReduceAxis      Module = "reduce_axis"
	Softmax         Module = "softmax"
	Index           Module = "index"
	// SoftmaxSM80 holds the long-row softmax kernels that stream rows with cp.async (sm_80+).
	SoftmaxSM80 Module = "softmax_sm80"
)

// Modules lists every family; each has <name>.cu and a generated <name>.ptx.
var Modules = []Module{Elementwise, ElementwiseMath, RNG, Reduce, Layout, ReduceAxis, Softmax, SoftmaxSM80, Index, Matmul, MatmulTiny, MatmulNarrow, Optim}

// Elementwise kernels (modules Elementwise and ElementwiseMath): forward.
var (
	AbsFwd      = newKernel(Elementwise, "abs_fwd")
	SqrtFwd     = newKernel(Elementwise, "sqrt_fwd")
	ExpFwd      = newKernel(ElementwiseMath, "exp_fwd")
	LogFwd      = newKernel(ElementwiseMath, "log_fwd")
	InvFwd      = newKernel(Elementwise, "inv_fwd")
	ReluFwd     = newKernel(Elementwise, "relu_fwd")
	SigmoidFwd  = newKernel(ElementwiseMath, "sigmoid_fwd")
	TanhFwd     = newKernel(ElementwiseMath, "tanh_fwd")
	SoftplusFwd = newKernel(ElementwiseMath, "softplus_fwd")
	GeluFwd     = newKernel(ElementwiseMath, "gelu_fwd")
	SafeLogFwd  = newKernel(ElementwiseMath, "safe_log_fwd")
	Scale       = newKernel(Elementwise, "scale")
	ClampFwd    = newKernel(Elementwise, "clamp_fwd")
	Add         = newKernel(Elementwise, "add")
	Sub         = newKernel(Elementwise, "sub")
	MulFwd      = newKernel(Elementwise, "mul_fwd")
	DivFwd      = newKernel(Elementwise, "div_fwd")
	MaxFwd      = newKernel(Elementwise, "max_fwd")
	MinFwd      = newKernel(Elementwise, "min_fwd")
	Axpy        = newKernel(Elementwise, "axpy")
)

// Elementwise kernels: backward.
var (
	AbsBwd      = newKernel(Elementwise, "abs_bwd")
	SqrtBwd     = newKernel(Elementwise, "sqrt_bwd")
	ReluBwd     = newKernel(Elementwise, "relu_bwd")
	ExpBwd      = newKernel(ElementwiseMath, "exp_bwd")
	LogBwd      = newKernel(Elementwise, "log_bwd")
	InvBwd      = newKernel(Elementwise, "inv_bwd")
	SigmoidBwd  = newKernel(ElementwiseMath, "sigmoid_bwd")
	TanhBwd     = newKernel(ElementwiseMath, "tanh_bwd")
	SoftplusBwd = newKernel(ElementwiseMath, "softplus_bwd")
	GeluBwd     = newKernel(ElementwiseMath, "gelu_bwd")
	SafeLogBwd  = newKernel(ElementwiseMath, "safe_log_bwd")
	ClampBwd    = newKernel(Elementwise, "clamp_bwd")
	MaxBwd      = newKernel(Elementwise, "max_bwd")
	MinBwd      = newKernel(Elementwise, "min_bwd")
	MulBwd      = newKernel(Elementwise, "mul_bwd")
	DivBwd      = newKernel(Elementwise, "div_bwd")
)

// Random and reduction kernels.
var (
	RandUniform   = newKernel(RNG, "rand_uniform")
	BernoulliMask = newKernel(RNG, "bernoulli_mask")
	RandNormal    = newKernel(RNG, "rand_normal")
	SumChunks     = newKernel(Reduce, "sum_chunks")
)

// Layout kernels and axis reductions.
var (
	Concat1d             = newKernel(Layout, "concat1d")
	Slice1d              = newKernel(Layout, "slice1d")
	BroadcastVecToRows   = newKernel(Layout, "broadcast_vec_to_rows")
	BroadcastVecToCols   = newKernel(Layout, "broadcast_vec_to_cols")
	Transpose2d          = newKernel(Layout, "transpose2d")
	SwapAdjacent         = newKernel(Layout, "swap_adjacent")
	BroadcastTo          = newKernel(Layout, "broadcast_to")
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

// Row softmax kernels.
var (
	SoftmaxFwd       = newKernel(Softmax, "softmax_fwd")
	LogSoftmaxFwd    = newKernel(Softmax, "log_softmax_fwd")
	MaskedSoftmaxFwd = newKernel(Softmax, "masked_softmax_fwd")
	SoftmaxBwd       = newKernel(Softmax, "softmax_bwd")
	LogSoftmaxBwd    = newKernel(Softmax, "log_softmax_bwd")
	// Rows of 4097 to 32768 elements held in registers across the block: blockDim.x = 256 *
	// ceil(ceil(cols/256) / 32), any grid (rows intended); same values as softmax_fwd and
	// log_softmax_fwd.
	SoftmaxFwdLong    = newKernel(Softmax, "softmax_fwd_long")
	LogSoftmaxFwdLong = newKernel(Softmax, "log_softmax_fwd_long")
	// The same on sm_80 and later, with the block's next row streaming into shared memory
	// (cp.async) meanwhile: the block shape of *_long, 4*cols bytes (rounded up to 16) of dynamic
	// shared memory, any grid (about one block per multiprocessor intended); same values.
	SoftmaxFwdLongAsync    = newKernel(SoftmaxSM80, "softmax_fwd_long_async")
	LogSoftmaxFwdLongAsync = newKernel(SoftmaxSM80, "log_softmax_fwd_long_async")
	// Layer norm, in blocks of 256 threads (any grid computes the same values; these give one
	// block per unit of work, see softmax.cu): layer_norm_fwd takes rows blocks (capped at will);
	// layer_norm_bwd takes ceil(rows/64) blocks when cols <= 4096 and rows >= 4096, else
	// rows + ceil(rows/64)*ceil(cols/256).
	LayerNormFwd = newKernel(Softmax, "layer_norm_fwd")
	// LayerNormFwdRow is LayerNormFwd for rows of 1024 < cols <= 4096 (fewer registers).
	LayerNormFwdRow = newKernel(Softmax, "layer_norm_fwd_row")
	LayerNormBwd    = newKernel(Softmax, "layer_norm_bwd")
)

// Indexing kernels (host indices uploaded as u32).
var (
	GatherRows           = newKernel(Index, "gather_rows")
	ScatterAddRowsAtomic = newKernel(Index, "scatter_add_rows_atomic")
	ScatterAddRowsSorted = newKernel(Index, "scatter_add_rows_sorted")
)

// All lists every kernel with a Go owner, in declaration order (Kernel.ID is the index); the
// tests check it against the PTX entries.
var All []*Kernel

func newKernel(m Module, name string) *Kernel {
	k := &Kernel{Module: m, Name: name, id: len(All)}
	All = append(All, k)
	return k
}
