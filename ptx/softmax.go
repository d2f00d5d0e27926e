package ptx

// The row softmax family: softmax.cu, and softmax_sm80.cu for the long-row kernels that stream
// rows with cp.async (sm_80 and later).
const (
	Softmax     Module = "softmax"
	SoftmaxSM80 Module = "softmax_sm80"
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
)
