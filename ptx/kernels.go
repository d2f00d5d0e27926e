package ptx

// The kernel families.
const (
	Elementwise Module = "elementwise"
	RNG         Module = "rng"
	Reduce      Module = "reduce"
)

// Modules lists every family; each has <name>.cu and a generated <name>.ptx.
var Modules = []Module{Elementwise, RNG, Reduce}

// Elementwise kernels: forward.
var (
	AbsFwd      = Kernel{Elementwise, "abs_fwd"}
	SqrtFwd     = Kernel{Elementwise, "sqrt_fwd"}
	ExpFwd      = Kernel{Elementwise, "exp_fwd"}
	LogFwd      = Kernel{Elementwise, "log_fwd"}
	InvFwd      = Kernel{Elementwise, "inv_fwd"}
	ReluFwd     = Kernel{Elementwise, "relu_fwd"}
	SigmoidFwd  = Kernel{Elementwise, "sigmoid_fwd"}
	TanhFwd     = Kernel{Elementwise, "tanh_fwd"}
	SoftplusFwd = Kernel{Elementwise, "softplus_fwd"}
	GeluFwd     = Kernel{Elementwise, "gelu_fwd"}
	SafeLogFwd  = Kernel{Elementwise, "safe_log_fwd"}
	Scale       = Kernel{Elementwise, "scale"}
	ClampFwd    = Kernel{Elementwise, "clamp_fwd"}
	Add         = Kernel{Elementwise, "add"}
	Sub         = Kernel{Elementwise, "sub"}
	MulFwd      = Kernel{Elementwise, "mul_fwd"}
	DivFwd      = Kernel{Elementwise, "div_fwd"}
	MaxFwd      = Kernel{Elementwise, "max_fwd"}
	MinFwd      = Kernel{Elementwise, "min_fwd"}
	Axpy        = Kernel{Elementwise, "axpy"}
)

// Elementwise kernels: backward.
var (
	AbsBwd      = Kernel{Elementwise, "abs_bwd"}
	SqrtBwd     = Kernel{Elementwise, "sqrt_bwd"}
	ReluBwd     = Kernel{Elementwise, "relu_bwd"}
	ExpBwd      = Kernel{Elementwise, "exp_bwd"}
	LogBwd      = Kernel{Elementwise, "log_bwd"}
	InvBwd      = Kernel{Elementwise, "inv_bwd"}
	SigmoidBwd  = Kernel{Elementwise, "sigmoid_bwd"}
	TanhBwd     = Kernel{Elementwise, "tanh_bwd"}
	SoftplusBwd = Kernel{Elementwise, "softplus_bwd"}
	GeluBwd     = Kernel{Elementwise, "gelu_bwd"}
	SafeLogBwd  = Kernel{Elementwise, "safe_log_bwd"}
	ClampBwd    = Kernel{Elementwise, "clamp_bwd"}
	MaxBwd      = Kernel{Elementwise, "max_bwd"}
	MinBwd      = Kernel{Elementwise, "min_bwd"}
	MulBwd      = Kernel{Elementwise, "mul_bwd"}
	DivBwd      = Kernel{Elementwise, "div_bwd"}
)

// Random and reduction kernels.
var (
	RandUniform   = Kernel{RNG, "rand_uniform"}
	BernoulliMask = Kernel{RNG, "bernoulli_mask"}
	RandNormal    = Kernel{RNG, "rand_normal"}
	SumChunks     = Kernel{Reduce, "sum_chunks"}
)

// All lists every kernel with a Go owner; the tests check it against the PTX entries.
var All = []Kernel{
	AbsFwd, SqrtFwd, ExpFwd, LogFwd, InvFwd, ReluFwd, SigmoidFwd, TanhFwd, SoftplusFwd, GeluFwd,
	SafeLogFwd, Scale, ClampFwd, Add, Sub, MulFwd, DivFwd, MaxFwd, MinFwd, Axpy,
	AbsBwd, SqrtBwd, ReluBwd, ExpBwd, LogBwd, InvBwd, SigmoidBwd, TanhBwd, SoftplusBwd, GeluBwd,
	SafeLogBwd, ClampBwd, MaxBwd, MinBwd, MulBwd, DivBwd,
	RandUniform, BernoulliMask, RandNormal, SumChunks,
}
