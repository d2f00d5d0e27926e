package ptx

// The elementwise family: elementwise.cu, and elementwise_math.cu for the kernels built on exp,
// log and tanh (f32math.cuh). Every kernel takes (outs, ins, n, scalars) and any grid-stride
// launch; the arithmetic is stated in the CPU twins' doc comments (cpu/elementwise.go).
const (
	Elementwise     Module = "elementwise"
	ElementwiseMath Module = "elementwise_math"
)

// Elementwise kernels: forward.
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
	PowFwd      = newKernel(ElementwiseMath, "pow_fwd")
	WhereFwd    = newKernel(Elementwise, "where_fwd")
	MaskedFill  = newKernel(Elementwise, "masked_fill")
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
	PowBwd      = newKernel(ElementwiseMath, "pow_bwd")
	WhereBwd    = newKernel(Elementwise, "where_bwd")
)
