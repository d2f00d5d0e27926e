package ops

import (
	"fmt"
	"math"

	"github.com/torchlean-go/torchlean/cpu"
	"github.com/torchlean-go/torchlean/ptx"
)

// The elementwise family (ptx/elementwise.cu, ptx/elementwise_math.cu; cpu/elementwise.go): one
// row per kernel, pairing the PTX kernel with its CPU twin. The constructor of a row is chosen by
// the twin's signature (unary, unary1, binary, ...), so the compiler checks that the twin takes
// what the row says the kernel takes. Forward kernels take (x) or (a, b); backward kernels take
// (x, g) and return dx, or (a, b, g) and return (da, db). Scalars are host float64 values rounded
// to float32. Each function's arithmetic is stated once, in its twin's doc comment.
var (
	absOp      = unary("abs", ptx.AbsFwd, cpu.AbsFwd)
	sqrtOp     = unary("sqrt", ptx.SqrtFwd, cpu.SqrtFwd)
	expOp      = unary("exp", ptx.ExpFwd, cpu.ExpFwd)
	logOp      = unary("log", ptx.LogFwd, cpu.LogFwd)
	invOp      = unary("inv", ptx.InvFwd, cpu.InvFwd)
	reluOp     = unary("relu", ptx.ReluFwd, cpu.ReluFwd)
	sigmoidOp  = unary("sigmoid", ptx.SigmoidFwd, cpu.SigmoidFwd)
	tanhOp     = unary("tanh", ptx.TanhFwd, cpu.TanhFwd)
	softplusOp = unary("softplus", ptx.SoftplusFwd, cpu.SoftplusFwd)
	geluOp     = unary("gelu", ptx.GeluFwd, cpu.GeluFwd)
	safeLogOp  = unary1("safe_log", ptx.SafeLogFwd, cpu.SafeLogFwd)
	scaleOp    = unary1("scale", ptx.Scale, cpu.Scale)
	clampOp    = unary2("clamp", ptx.ClampFwd, cpu.ClampFwd)
	addOp      = binary("add", ptx.Add, cpu.Add)
	subOp      = binary("sub", ptx.Sub, cpu.Sub)
	mulOp      = binary("mul", ptx.MulFwd, cpu.MulFwd)
	divOp      = binary("div", ptx.DivFwd, cpu.DivFwd)
	maxOp      = binary("max", ptx.MaxFwd, cpu.MaxFwd)
	minOp      = binary("min", ptx.MinFwd, cpu.MinFwd)
	axpyOp     = binary1("axpy", ptx.Axpy, cpu.Axpy)
	powOp      = unary1("pow", ptx.PowFwd, cpu.PowFwd)
	whereOp    = ternary("where", ptx.WhereFwd, cpu.WhereFwd)
	maskFillOp = binary1("masked_fill", ptx.MaskedFill, cpu.MaskedFill)

	absBwdOp      = binary("abs_bwd", ptx.AbsBwd, cpu.AbsBwd)
	sqrtBwdOp     = binary("sqrt_bwd", ptx.SqrtBwd, cpu.SqrtBwd)
	reluBwdOp     = binary("relu_bwd", ptx.ReluBwd, cpu.ReluBwd)
	expBwdOp      = binary("exp_bwd", ptx.ExpBwd, cpu.ExpBwd)
	logBwdOp      = binary("log_bwd", ptx.LogBwd, cpu.LogBwd)
	invBwdOp      = binary("inv_bwd", ptx.InvBwd, cpu.InvBwd)
	sigmoidBwdOp  = binary("sigmoid_bwd", ptx.SigmoidBwd, cpu.SigmoidBwd)
	tanhBwdOp     = binary("tanh_bwd", ptx.TanhBwd, cpu.TanhBwd)
	softplusBwdOp = binary("softplus_bwd", ptx.SoftplusBwd, cpu.SoftplusBwd)
	geluBwdOp     = binary("gelu_bwd", ptx.GeluBwd, cpu.GeluBwd)
	safeLogBwdOp  = binary1("safe_log_bwd", ptx.SafeLogBwd, cpu.SafeLogBwd)
	clampBwdOp    = binary2("clamp_bwd", ptx.ClampBwd, cpu.ClampBwd)
	maxBwdOp      = gradPair("max_bwd", ptx.MaxBwd, cpu.MaxBwd)
	minBwdOp      = gradPair("min_bwd", ptx.MinBwd, cpu.MinBwd)
	mulBwdOp      = gradPair("mul_bwd", ptx.MulBwd, cpu.MulBwd)
	divBwdOp      = gradPair("div_bwd", ptx.DivBwd, cpu.DivBwd)
	powBwdOp      = binary2("pow_bwd", ptx.PowBwd, cpu.PowBwd)
	whereBwdOp    = splitPair("where_bwd", ptx.WhereBwd, cpu.WhereBwd)
)

// mapOp is one row of the elementwise family: the PTX kernel and its CPU twin, with the number
// of outputs, inputs and float32 scalars (the kernel's parameters are outs, ins, n, scalars).
// Rows come from the constructors below, which also list them in mapOps.
type mapOp struct {
	name          string
	kernel        *ptx.Kernel
	outs, ins, sc int
	cpu           func(o, i [3][]float32, s [2]float32)
}

// mapOps lists the family in declaration order (the mirror test and the benchmarks walk it).
var mapOps []*mapOp

func newMapOp(name string, k *ptx.Kernel, outs, ins, sc int, f func(o, i [3][]float32, s [2]float32)) *mapOp {
	op := &mapOp{name: name, kernel: k, outs: outs, ins: ins, sc: sc, cpu: f}
	mapOps = append(mapOps, op)
	return op
}

// unary: dst = f(x).
func unary(name string, k *ptx.Kernel, f func(dst, x []float32)) *mapOp {
	return newMapOp(name, k, 1, 1, 0, func(o, i [3][]float32, _ [2]float32) { f(o[0], i[0]) })
}

// unary1: dst = f(x; c).
func unary1(name string, k *ptx.Kernel, f func(dst, x []float32, c float32)) *mapOp {
	return newMapOp(name, k, 1, 1, 1, func(o, i [3][]float32, s [2]float32) { f(o[0], i[0], s[0]) })
}

// unary2: dst = f(x; c, d).
func unary2(name string, k *ptx.Kernel, f func(dst, x []float32, c, d float32)) *mapOp {
	return newMapOp(name, k, 1, 1, 2, func(o, i [3][]float32, s [2]float32) { f(o[0], i[0], s[0], s[1]) })
}

// binary: dst = f(a, b) (a backward kernel's (x, g) included).
func binary(name string, k *ptx.Kernel, f func(dst, a, b []float32)) *mapOp {
	return newMapOp(name, k, 1, 2, 0, func(o, i [3][]float32, _ [2]float32) { f(o[0], i[0], i[1]) })
}

// binary1: dst = f(a, b; c).
func binary1(name string, k *ptx.Kernel, f func(dst, a, b []float32, c float32)) *mapOp {
	return newMapOp(name, k, 1, 2, 1, func(o, i [3][]float32, s [2]float32) { f(o[0], i[0], i[1], s[0]) })
}

// binary2: dst = f(a, b; c, d).
func binary2(name string, k *ptx.Kernel, f func(dst, a, b []float32, c, d float32)) *mapOp {
	return newMapOp(name, k, 1, 2, 2, func(o, i [3][]float32, s [2]float32) { f(o[0], i[0], i[1], s[0], s[1]) })
}

// ternary: dst = f(a, b, c).
func ternary(name string, k *ptx.Kernel, f func(dst, a, b, c []float32)) *mapOp {
	return newMapOp(name, k, 1, 3, 0, func(o, i [3][]float32, _ [2]float32) { f(o[0], i[0], i[1], i[2]) })
}

// splitPair: (da, db) = f(a, b), two outputs from two inputs (a selection's backward kernel).
func splitPair(name string, k *ptx.Kernel, f func(da, db, a, b []float32)) *mapOp {
	return newMapOp(name, k, 2, 2, 0, func(o, i [3][]float32, _ [2]float32) { f(o[0], o[1], i[0], i[1]) })
}

// gradPair: (da, db) = f(a, b, g), the backward kernel of a binary function.
func gradPair(name string, k *ptx.Kernel, f func(da, db, a, b, g []float32)) *mapOp {
	return newMapOp(name, k, 2, 3, 0, func(o, i [3][]float32, _ [2]float32) { f(o[0], o[1], i[0], i[1], i[2]) })
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

func (op *mapOp) two(ins []*Buffer, scalars ...float64) (*Buffer, *Buffer, error) {
	outs, err := op.run(ins, scalars...)
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

// AbsBwd returns the gradient of Abs for the cotangent g (cpu.AbsBwd: sign(0) = sign(NaN) = 0).
func AbsBwd(x, g *Buffer) (*Buffer, error) { return absBwdOp.one([]*Buffer{x, g}) }

// SqrtBwd returns the gradient of Sqrt (cpu.SqrtBwd: 0 where x <= 0, as the seeds say).
func SqrtBwd(x, g *Buffer) (*Buffer, error) { return sqrtBwdOp.one([]*Buffer{x, g}) }

// ReluBwd returns the gradient of Relu (cpu.ReluBwd).
func ReluBwd(x, g *Buffer) (*Buffer, error) { return reluBwdOp.one([]*Buffer{x, g}) }

// ExpBwd returns the gradient of Exp (cpu.ExpBwd).
func ExpBwd(x, g *Buffer) (*Buffer, error) { return expBwdOp.one([]*Buffer{x, g}) }

// LogBwd returns the gradient of Log (cpu.LogBwd: one rounding, where TorchLean's reference
// rounds twice).
func LogBwd(x, g *Buffer) (*Buffer, error) { return logBwdOp.one([]*Buffer{x, g}) }

// InvBwd returns the gradient of Inv (cpu.InvBwd: an order that stays finite where the
// reference's r*r overflows).
func InvBwd(x, g *Buffer) (*Buffer, error) { return invBwdOp.one([]*Buffer{x, g}) }

// SigmoidBwd returns the gradient of Sigmoid, recomputing sigmoid(x) (cpu.SigmoidBwd).
func SigmoidBwd(x, g *Buffer) (*Buffer, error) { return sigmoidBwdOp.one([]*Buffer{x, g}) }

// TanhBwd returns the gradient of Tanh, recomputing tanh(x) (cpu.TanhBwd).
func TanhBwd(x, g *Buffer) (*Buffer, error) { return tanhBwdOp.one([]*Buffer{x, g}) }

// SoftplusBwd returns the gradient of Softplus (cpu.SoftplusBwd).
func SoftplusBwd(x, g *Buffer) (*Buffer, error) { return softplusBwdOp.one([]*Buffer{x, g}) }

// GeluBwd returns the gradient of Gelu (cpu.GeluBwd).
func GeluBwd(x, g *Buffer) (*Buffer, error) { return geluBwdOp.one([]*Buffer{x, g}) }

// SafeLogBwd returns the gradient of SafeLog (cpu.SafeLogBwd), eps as for SafeLog.
func SafeLogBwd(x, g *Buffer, eps float64) (*Buffer, error) {
	if err := checkEps(safeLogBwdOp.name, eps); err != nil {
		return nil, err
	}
	return safeLogBwdOp.one([]*Buffer{x, g}, eps)
}

// ClampBwd returns the gradient of Clamp (cpu.ClampBwd: g strictly inside (lo, hi)). A NaN bound
// is an error.
func ClampBwd(x, g *Buffer, lo, hi float64) (*Buffer, error) {
	if err := clampBounds(clampBwdOp.name, lo, hi); err != nil {
		return nil, err
	}
	return clampBwdOp.one([]*Buffer{x, g}, lo, hi)
}

// MaxBwd returns the gradients (da, db) of Max (cpu.MaxBwd: ties and NaN split 0.5/0.5).
func MaxBwd(a, b, g *Buffer) (*Buffer, *Buffer, error) { return maxBwdOp.two([]*Buffer{a, b, g}) }

// MinBwd returns the gradients (da, db) of Min (cpu.MinBwd: ties and NaN split 0.5/0.5).
func MinBwd(a, b, g *Buffer) (*Buffer, *Buffer, error) { return minBwdOp.two([]*Buffer{a, b, g}) }

// MulBwd returns the gradients (da, db) of Mul (cpu.MulBwd).
func MulBwd(a, b, g *Buffer) (*Buffer, *Buffer, error) { return mulBwdOp.two([]*Buffer{a, b, g}) }

// DivBwd returns the gradients (da, db) of Div (cpu.DivBwd, in PyTorch's order, which stays
// finite where the quotients do).
func DivBwd(a, b, g *Buffer) (*Buffer, *Buffer, error) { return divBwdOp.two([]*Buffer{a, b, g}) }

// PowScalar returns x^p elementwise, PyTorch's torch.pow(x, p) for a float32 tensor: p is
// rounded to float32; p = 0 gives 1 (also for NaN), 1 gives x, 0.5 the IEEE square root, 2 x*x,
// 3 (x*x)*x, -0.5 1/sqrt(x), -1 1/x, -2 1/(x*x); any other exponent cpu.Powf, C's powf within
// 1 ulp (a negative base gives NaN unless p is an integer, whose parity gives the sign; 0^p is
// +Inf for p < 0). The rule is cpu.PowScalarf.
func PowScalar(x *Buffer, p float64) (*Buffer, error) { return powOp.one([]*Buffer{x}, p) }

// PowBwd returns the gradient of PowScalar(x, p) for the cotangent g, PyTorch's: zeros for
// p = 0, else g * (p * x^(p-1)) with p - 1 computed in float64 and then rounded (cpu.PowBwdf).
func PowBwd(x, g *Buffer, p float64) (*Buffer, error) {
	return powBwdOp.one([]*Buffer{x, g}, p, p-1)
}

// Where returns cond ? a : b elementwise (torch.where): an element of cond is true when it is
// not zero, NaN included (PyTorch's float-to-bool conversion); -0 is false. The selected bits
// are copied unchanged. All three have one length.
func Where(cond, a, b *Buffer) (*Buffer, error) { return whereOp.one([]*Buffer{cond, a, b}) }

// WhereBwd returns the gradients (da, db) of Where for the cotangent g, by selection:
// da = cond ? g : 0, db = cond ? 0 : g (an infinite or NaN g is never multiplied by a mask).
func WhereBwd(cond, g *Buffer) (*Buffer, *Buffer, error) {
	return whereBwdOp.two([]*Buffer{cond, g})
}

// MaskedFill returns x with the elements where mask is true (not zero, NaN included) replaced by
// value rounded to float32 (PyTorch's x.masked_fill(mask, value)). Its gradient for the
// cotangent g is MaskedFill(g, mask, 0).
func MaskedFill(x, mask *Buffer, value float64) (*Buffer, error) {
	return maskFillOp.one([]*Buffer{x, mask}, value)
}
