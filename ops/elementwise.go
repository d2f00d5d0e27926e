package ops

import (
	"fmt"
	"math"

	"github.com/torchlean-go/torchlean/cpu"
	"github.com/torchlean-go/torchlean/ptx"
)

// The elementwise family: one row per kernel, pairing the PTX kernel with its CPU twin.
// Forward kernels take (x) or (a, b); backward kernels take (x, g) and return dx, or
// (a, b, g) and return (da, db). Scalars are host float64 values rounded to float32.
var (
	absOp      = &mapOp{"abs", ptx.AbsFwd, 1, 1, 0, func(o, i [3][]float32, s [2]float32) { cpu.AbsFwd(o[0], i[0]) }}
	sqrtOp     = &mapOp{"sqrt", ptx.SqrtFwd, 1, 1, 0, func(o, i [3][]float32, s [2]float32) { cpu.SqrtFwd(o[0], i[0]) }}
	expOp      = &mapOp{"exp", ptx.ExpFwd, 1, 1, 0, func(o, i [3][]float32, s [2]float32) { cpu.ExpFwd(o[0], i[0]) }}
	logOp      = &mapOp{"log", ptx.LogFwd, 1, 1, 0, func(o, i [3][]float32, s [2]float32) { cpu.LogFwd(o[0], i[0]) }}
	invOp      = &mapOp{"inv", ptx.InvFwd, 1, 1, 0, func(o, i [3][]float32, s [2]float32) { cpu.InvFwd(o[0], i[0]) }}
	reluOp     = &mapOp{"relu", ptx.ReluFwd, 1, 1, 0, func(o, i [3][]float32, s [2]float32) { cpu.ReluFwd(o[0], i[0]) }}
	sigmoidOp  = &mapOp{"sigmoid", ptx.SigmoidFwd, 1, 1, 0, func(o, i [3][]float32, s [2]float32) { cpu.SigmoidFwd(o[0], i[0]) }}
	tanhOp     = &mapOp{"tanh", ptx.TanhFwd, 1, 1, 0, func(o, i [3][]float32, s [2]float32) { cpu.TanhFwd(o[0], i[0]) }}
	softplusOp = &mapOp{"softplus", ptx.SoftplusFwd, 1, 1, 0, func(o, i [3][]float32, s [2]float32) { cpu.SoftplusFwd(o[0], i[0]) }}
	geluOp     = &mapOp{"gelu", ptx.GeluFwd, 1, 1, 0, func(o, i [3][]float32, s [2]float32) { cpu.GeluFwd(o[0], i[0]) }}
	safeLogOp  = &mapOp{"safe_log", ptx.SafeLogFwd, 1, 1, 1, func(o, i [3][]float32, s [2]float32) { cpu.SafeLogFwd(o[0], i[0], s[0]) }}
	scaleOp    = &mapOp{"scale", ptx.Scale, 1, 1, 1, func(o, i [3][]float32, s [2]float32) { cpu.Scale(o[0], i[0], s[0]) }}
	clampOp    = &mapOp{"clamp", ptx.ClampFwd, 1, 1, 2, func(o, i [3][]float32, s [2]float32) { cpu.ClampFwd(o[0], i[0], s[0], s[1]) }}
	addOp      = &mapOp{"add", ptx.Add, 1, 2, 0, func(o, i [3][]float32, s [2]float32) { cpu.Add(o[0], i[0], i[1]) }}
	subOp      = &mapOp{"sub", ptx.Sub, 1, 2, 0, func(o, i [3][]float32, s [2]float32) { cpu.Sub(o[0], i[0], i[1]) }}
	mulOp      = &mapOp{"mul", ptx.MulFwd, 1, 2, 0, func(o, i [3][]float32, s [2]float32) { cpu.MulFwd(o[0], i[0], i[1]) }}
	divOp      = &mapOp{"div", ptx.DivFwd, 1, 2, 0, func(o, i [3][]float32, s [2]float32) { cpu.DivFwd(o[0], i[0], i[1]) }}
	maxOp      = &mapOp{"max", ptx.MaxFwd, 1, 2, 0, func(o, i [3][]float32, s [2]float32) { cpu.MaxFwd(o[0], i[0], i[1]) }}
	minOp      = &mapOp{"min", ptx.MinFwd, 1, 2, 0, func(o, i [3][]float32, s [2]float32) { cpu.MinFwd(o[0], i[0], i[1]) }}
	axpyOp     = &mapOp{"axpy", ptx.Axpy, 1, 2, 1, func(o, i [3][]float32, s [2]float32) { cpu.Axpy(o[0], i[0], i[1], s[0]) }}

	absBwdOp      = &mapOp{"abs_bwd", ptx.AbsBwd, 1, 2, 0, func(o, i [3][]float32, s [2]float32) { cpu.AbsBwd(o[0], i[0], i[1]) }}
	sqrtBwdOp     = &mapOp{"sqrt_bwd", ptx.SqrtBwd, 1, 2, 0, func(o, i [3][]float32, s [2]float32) { cpu.SqrtBwd(o[0], i[0], i[1]) }}
	reluBwdOp     = &mapOp{"relu_bwd", ptx.ReluBwd, 1, 2, 0, func(o, i [3][]float32, s [2]float32) { cpu.ReluBwd(o[0], i[0], i[1]) }}
	expBwdOp      = &mapOp{"exp_bwd", ptx.ExpBwd, 1, 2, 0, func(o, i [3][]float32, s [2]float32) { cpu.ExpBwd(o[0], i[0], i[1]) }}
	logBwdOp      = &mapOp{"log_bwd", ptx.LogBwd, 1, 2, 0, func(o, i [3][]float32, s [2]float32) { cpu.LogBwd(o[0], i[0], i[1]) }}
	invBwdOp      = &mapOp{"inv_bwd", ptx.InvBwd, 1, 2, 0, func(o, i [3][]float32, s [2]float32) { cpu.InvBwd(o[0], i[0], i[1]) }}
	sigmoidBwdOp  = &mapOp{"sigmoid_bwd", ptx.SigmoidBwd, 1, 2, 0, func(o, i [3][]float32, s [2]float32) { cpu.SigmoidBwd(o[0], i[0], i[1]) }}
	tanhBwdOp     = &mapOp{"tanh_bwd", ptx.TanhBwd, 1, 2, 0, func(o, i [3][]float32, s [2]float32) { cpu.TanhBwd(o[0], i[0], i[1]) }}
	softplusBwdOp = &mapOp{"softplus_bwd", ptx.SoftplusBwd, 1, 2, 0, func(o, i [3][]float32, s [2]float32) { cpu.SoftplusBwd(o[0], i[0], i[1]) }}
	geluBwdOp     = &mapOp{"gelu_bwd", ptx.GeluBwd, 1, 2, 0, func(o, i [3][]float32, s [2]float32) { cpu.GeluBwd(o[0], i[0], i[1]) }}
	safeLogBwdOp  = &mapOp{"safe_log_bwd", ptx.SafeLogBwd, 1, 2, 1, func(o, i [3][]float32, s [2]float32) { cpu.SafeLogBwd(o[0], i[0], i[1], s[0]) }}
	clampBwdOp    = &mapOp{"clamp_bwd", ptx.ClampBwd, 1, 2, 2, func(o, i [3][]float32, s [2]float32) { cpu.ClampBwd(o[0], i[0], i[1], s[0], s[1]) }}
	maxBwdOp      = &mapOp{"max_bwd", ptx.MaxBwd, 2, 3, 0, func(o, i [3][]float32, s [2]float32) { cpu.MaxBwd(o[0], o[1], i[0], i[1], i[2]) }}
	minBwdOp      = &mapOp{"min_bwd", ptx.MinBwd, 2, 3, 0, func(o, i [3][]float32, s [2]float32) { cpu.MinBwd(o[0], o[1], i[0], i[1], i[2]) }}
	mulBwdOp      = &mapOp{"mul_bwd", ptx.MulBwd, 2, 3, 0, func(o, i [3][]float32, s [2]float32) { cpu.MulBwd(o[0], o[1], i[0], i[1], i[2]) }}
	divBwdOp      = &mapOp{"div_bwd", ptx.DivBwd, 2, 3, 0, func(o, i [3][]float32, s [2]float32) { cpu.DivBwd(o[0], o[1], i[0], i[1], i[2]) }}
)

// mapOps lists the family (the mirror test and the benchmarks walk it).
var mapOps = []*mapOp{
	absOp, sqrtOp, expOp, logOp, invOp, reluOp, sigmoidOp, tanhOp, softplusOp, geluOp, safeLogOp,
	scaleOp, clampOp, addOp, subOp, mulOp, divOp, maxOp, minOp, axpyOp,
	absBwdOp, sqrtBwdOp, reluBwdOp, expBwdOp, logBwdOp, invBwdOp, sigmoidBwdOp, tanhBwdOp,
	softplusBwdOp, geluBwdOp, safeLogBwdOp, clampBwdOp, maxBwdOp, minBwdOp, mulBwdOp, divBwdOp,
}

// run checks the operands, allocates op.outs fresh results and runs the kernel.
func (op *mapOp) run(ins []*Buffer, scalars ...float64) (outs [2]*Buffer, err error) {
	if len(ins) != op.ins || len(scalars) != op.sc {
		return outs, fmt.Errorf("ops: %s takes %d buffers and %d scalars", op.name, op.ins, op.sc)
	}
	if err := useAll(op.name, ins...); err != nil {
		return outs, err
	}
	defer doneAll(ins...) // after the launch: the kernel is queued (CUDA) or done (CPU)
	n, err := sameLength(op.name, ins...)
	if err != nil {
		return outs, err
	}
	d := ins[0].dev
	for k := range op.outs {
		if outs[k], err = newBuffer(d, n); err != nil {
			ReleaseThen(nil, outs[:k]...)
			return [2]*Buffer{}, opErr(op.name, err)
		}
	}
	if n == 0 {
		return outs, nil
	}
	var om, im [3]storage
	var sc [2]float32
	for k := range op.outs {
		om[k] = outs[k].mem
	}
	for k, b := range ins {
		im[k] = b.mem
	}
	for k, v := range scalars {
		sc[k] = float32(v)
	}
	if err := d.be.mapKernel(op, om, im, n, sc); err != nil {
		ReleaseThen(nil, outs[:op.outs]...)
		return [2]*Buffer{}, opErr(op.name, err)
	}
	return outs, nil
}

func (op *mapOp) one(ins []*Buffer, scalars ...float64) (*Buffer, error) {
	outs, err := op.run(ins, scalars...)
	return outs[0], err
}

func (op *mapOp) two(ins []*Buffer) (*Buffer, *Buffer, error) {
	outs, err := op.run(ins)
	return outs[0], outs[1], err
}

// Abs returns |x|.
func Abs(x *Buffer) (*Buffer, error) { return absOp.one([]*Buffer{x}) }

// Sqrt returns the IEEE square root (NaN for negative elements).
func Sqrt(x *Buffer) (*Buffer, error) { return sqrtOp.one([]*Buffer{x}) }

// Exp returns e^x (cpu.Expf).
func Exp(x *Buffer) (*Buffer, error) { return expOp.one([]*Buffer{x}) }

// Log returns the natural logarithm (cpu.Logf: NaN below 0, -Inf at 0).
func Log(x *Buffer) (*Buffer, error) { return logOp.one([]*Buffer{x}) }

// Inv returns 1/x.
func Inv(x *Buffer) (*Buffer, error) { return invOp.one([]*Buffer{x}) }

// Relu returns x > 0 ? x : 0 (NaN gives 0).
func Relu(x *Buffer) (*Buffer, error) { return reluOp.one([]*Buffer{x}) }

// Sigmoid returns 1/(1+e^-x) (cpu.Sigmoidf).
func Sigmoid(x *Buffer) (*Buffer, error) { return sigmoidOp.one([]*Buffer{x}) }

// Tanh returns tanh(x) (cpu.Tanhf).
func Tanh(x *Buffer) (*Buffer, error) { return tanhOp.one([]*Buffer{x}) }

// Softplus returns max(x,0) + log1p(e^-|x|) (cpu.Softplusf).
func Softplus(x *Buffer) (*Buffer, error) { return softplusOp.one([]*Buffer{x}) }

// Gelu returns the tanh approximation of GELU (cpu.Geluf).
func Gelu(x *Buffer) (*Buffer, error) { return geluOp.one([]*Buffer{x}) }

// SafeLog returns log(softplus(x) + eps); the seeds' default eps is 1e-6. eps must be finite as
// a float32 and >= 0.
func SafeLog(x *Buffer, eps float64) (*Buffer, error) {
	if err := checkEps(safeLogOp.name, eps); err != nil {
		return nil, err
	}
	return safeLogOp.one([]*Buffer{x}, eps)
}

// checkEps checks an epsilon (SafeLog, SafeLogBwd, LayerNormFwd): finite as a float32 and >= 0.
func checkEps(op string, eps float64) error {
	if !nonNegative(float64(float32(eps))) {
		return fmt.Errorf("ops: %s: eps %v (want finite as a float32 and >= 0)", op, eps)
	}
	return nil
}

// Scale returns x * float32(c).
func Scale(x *Buffer, c float64) (*Buffer, error) { return scaleOp.one([]*Buffer{x}, c) }

// Clamp returns min(max(x, lo), hi) with NaN propagating (bounds rounded to float32); every
// non-NaN element is hi when lo > hi, as in PyTorch. A NaN bound is an error.
func Clamp(x *Buffer, lo, hi float64) (*Buffer, error) {
	if err := clampBounds(clampOp.name, lo, hi); err != nil {
		return nil, err
	}
	return clampOp.one([]*Buffer{x}, lo, hi)
}

// clampBounds rejects NaN bounds.
func clampBounds(op string, lo, hi float64) error {
	if math.IsNaN(lo) || math.IsNaN(hi) {
		return fmt.Errorf("ops: %s: NaN bound (lo %v, hi %v)", op, lo, hi)
	}
	return nil
}

// Add returns a + b (equal lengths).
//
// Add, Sub, Scale and Axpy have no backward kernels of their own: their gradients are the
// incoming gradient g, copied or scaled. For Add, da = db = g (Copy gives a distinct buffer);
// for Sub, da = g and db = Scale(g, -1); for Scale, Scale(g, c); for Axpy (a + c*b), da = g and
// db = Scale(g, c). The autograd tape builds them so, as TorchLean's reference does.
func Add(a, b *Buffer) (*Buffer, error) { return addOp.one([]*Buffer{a, b}) }

// Sub returns a - b.
func Sub(a, b *Buffer) (*Buffer, error) { return subOp.one([]*Buffer{a, b}) }

// Mul returns a * b.
func Mul(a, b *Buffer) (*Buffer, error) { return mulOp.one([]*Buffer{a, b}) }

// Div returns a / b.
func Div(a, b *Buffer) (*Buffer, error) { return divOp.one([]*Buffer{a, b}) }

// Max returns the elementwise maximum; NaN propagates.
func Max(a, b *Buffer) (*Buffer, error) { return maxOp.one([]*Buffer{a, b}) }

// Min returns the elementwise minimum; NaN propagates.
func Min(a, b *Buffer) (*Buffer, error) { return minOp.one([]*Buffer{a, b}) }

// Axpy returns a + c*b as one fused multiply-add per element (single rounding).
func Axpy(a, b *Buffer, c float64) (*Buffer, error) { return axpyOp.one([]*Buffer{a, b}, c) }

// AbsBwd returns sign(x) * g with sign(0) = sign(NaN) = 0.
func AbsBwd(x, g *Buffer) (*Buffer, error) { return absBwdOp.one([]*Buffer{x, g}) }

// SqrtBwd returns g * (1/(2*sqrt(x))) where x > 0, else 0.
func SqrtBwd(x, g *Buffer) (*Buffer, error) { return sqrtBwdOp.one([]*Buffer{x, g}) }

// ReluBwd returns g where x > 0, else 0.
func ReluBwd(x, g *Buffer) (*Buffer, error) { return reluBwdOp.one([]*Buffer{x, g}) }

// ExpBwd returns g * exp(x).
func ExpBwd(x, g *Buffer) (*Buffer, error) { return expBwdOp.one([]*Buffer{x, g}) }

// LogBwd returns g / x, one rounding (TorchLean's reference rounds twice: g * (1/x)).
func LogBwd(x, g *Buffer) (*Buffer, error) { return logBwdOp.one([]*Buffer{x, g}) }

// InvBwd returns -(g * (1/x)) * (1/x). TorchLean's reference computes -(g * (r*r)) with
// r = 1/x, whose r*r overflows to Inf for |x| below about 5.4e-20 even where the gradient is
// finite; this order does not.
func InvBwd(x, g *Buffer) (*Buffer, error) { return invBwdOp.one([]*Buffer{x, g}) }

// SigmoidBwd returns g * s * (1 - s) with s = sigmoid(x) recomputed.
func SigmoidBwd(x, g *Buffer) (*Buffer, error) { return sigmoidBwdOp.one([]*Buffer{x, g}) }

// TanhBwd returns g * (1 - t*t) with t = tanh(x) recomputed.
func TanhBwd(x, g *Buffer) (*Buffer, error) { return tanhBwdOp.one([]*Buffer{x, g}) }

// SoftplusBwd returns g * sigmoid(x).
func SoftplusBwd(x, g *Buffer) (*Buffer, error) { return softplusBwdOp.one([]*Buffer{x, g}) }

// GeluBwd returns g * GELU'(x) (cpu.GeluBwdf).
func GeluBwd(x, g *Buffer) (*Buffer, error) { return geluBwdOp.one([]*Buffer{x, g}) }

// SafeLogBwd returns g * sigmoid(x) / (softplus(x) + eps) (cpu.SafeLogBwdf), eps as for SafeLog.
func SafeLogBwd(x, g *Buffer, eps float64) (*Buffer, error) {
	if err := checkEps(safeLogBwdOp.name, eps); err != nil {
		return nil, err
	}
	return safeLogBwdOp.one([]*Buffer{x, g}, eps)
}

// ClampBwd returns g strictly inside (lo, hi), else 0. A NaN bound is an error.
func ClampBwd(x, g *Buffer, lo, hi float64) (*Buffer, error) {
	if err := clampBounds(clampBwdOp.name, lo, hi); err != nil {
		return nil, err
	}
	return clampBwdOp.one([]*Buffer{x, g}, lo, hi)
}

// MaxBwd returns (da, db): g goes to the strictly larger input; ties (and NaN) split 0.5/0.5.
func MaxBwd(a, b, g *Buffer) (*Buffer, *Buffer, error) { return maxBwdOp.two([]*Buffer{a, b, g}) }

// MinBwd returns (da, db): g goes to the strictly smaller input; ties (and NaN) split 0.5/0.5.
func MinBwd(a, b, g *Buffer) (*Buffer, *Buffer, error) { return minBwdOp.two([]*Buffer{a, b, g}) }

// MulBwd returns (g*b, g*a).
func MulBwd(a, b, g *Buffer) (*Buffer, *Buffer, error) { return mulBwdOp.two([]*Buffer{a, b, g}) }

// DivBwd returns (g/b, -(g*(a/(b*b)))).
func DivBwd(a, b, g *Buffer) (*Buffer, *Buffer, error) { return divBwdOp.two([]*Buffer{a, b, g}) }
