package autograd

import (
	"slices"

	"github.com/torchlean-go/torchlean/ops"
)

// unaryOp is one elementwise op y = f(x) with its fused VJP dx = bwd(x, g).
type unaryOp struct {
	name string
	fwd  func(x *ops.Buffer) (*ops.Buffer, error)
	bwd  func(x, g *ops.Buffer) (*ops.Buffer, error)
}

// The elementwise unary ops without parameters: one row each.
var (
	absOp      = unaryOp{"abs", ops.Abs, ops.AbsBwd}
	sqrtOp     = unaryOp{"sqrt", ops.Sqrt, ops.SqrtBwd}
	reluOp     = unaryOp{"relu", ops.Relu, ops.ReluBwd}
	expOp      = unaryOp{"exp", ops.Exp, ops.ExpBwd}
	logOp      = unaryOp{"log", ops.Log, ops.LogBwd}
	invOp      = unaryOp{"inv", ops.Inv, ops.InvBwd}
	sigmoidOp  = unaryOp{"sigmoid", ops.Sigmoid, ops.SigmoidBwd}
	tanhOp     = unaryOp{"tanh", ops.Tanh, ops.TanhBwd}
	softplusOp = unaryOp{"softplus", ops.Softplus, ops.SoftplusBwd}
	geluOp     = unaryOp{"gelu", ops.Gelu, ops.GeluBwd}
)

// unary records op applied to x (same shape).
func (t *Tape) unary(op unaryOp, x Var) Var {
	vx, ok := t.arg(op.name, x)
	if !ok {
		return Var{}
	}
	y, err := op.fwd(vx.buf)
	return t.record(op.name, vx.shape, y, err, nil, []Var{x}, func(g *ops.Buffer, need []bool) ([]*ops.Buffer, error) {
		return grads(need, func() (*ops.Buffer, error) { return op.bwd(vx.buf, g) })
	})
}

// Abs returns |x|; its gradient is sign(x) (0 at 0).
func (t *Tape) Abs(x Var) Var { return t.unary(absOp, x) }

// Sqrt returns the square root (NaN below 0); its gradient is 1/(2 sqrt(x)) for x > 0, else 0.
func (t *Tape) Sqrt(x Var) Var { return t.unary(sqrtOp, x) }

// Relu returns max(x, 0); its gradient is 1 where x > 0, else 0.
func (t *Tape) Relu(x Var) Var { return t.unary(reluOp, x) }

// Exp returns e^x.
func (t *Tape) Exp(x Var) Var { return t.unary(expOp, x) }

// Log returns the natural logarithm.
func (t *Tape) Log(x Var) Var { return t.unary(logOp, x) }

// Inv returns 1/x.
func (t *Tape) Inv(x Var) Var { return t.unary(invOp, x) }

// Sigmoid returns 1/(1+e^-x).
func (t *Tape) Sigmoid(x Var) Var { return t.unary(sigmoidOp, x) }

// Tanh returns tanh(x).
func (t *Tape) Tanh(x Var) Var { return t.unary(tanhOp, x) }

// Softplus returns log(1+e^x), computed stably.
func (t *Tape) Softplus(x Var) Var { return t.unary(softplusOp, x) }

// Gelu returns the tanh approximation of GELU.
func (t *Tape) Gelu(x Var) Var { return t.unary(geluOp, x) }

// SafeLog returns log(softplus(x) + eps) (the seeds use eps = 1e-6).
func (t *Tape) SafeLog(x Var, eps float64) Var {
	return t.unary(unaryOp{"safe_log",
		func(x *ops.Buffer) (*ops.Buffer, error) { return ops.SafeLog(x, eps) },
		func(x, g *ops.Buffer) (*ops.Buffer, error) { return ops.SafeLogBwd(x, g, eps) }}, x)
}

// Clamp returns min(max(x, lo), hi); its gradient is 1 strictly inside (lo, hi), else 0 (the
// seeds' rule: PyTorch's clamp passes the gradient at x == lo and x == hi as well).
func (t *Tape) Clamp(x Var, lo, hi float64) Var {
	return t.unary(unaryOp{"clamp",
		func(x *ops.Buffer) (*ops.Buffer, error) { return ops.Clamp(x, lo, hi) },
		func(x, g *ops.Buffer) (*ops.Buffer, error) { return ops.ClampBwd(x, g, lo, hi) }}, x)
}

// Scale returns c*x (c rounded to float32).
func (t *Tape) Scale(x Var, c float64) Var {
	return t.unary(unaryOp{"scale",
		func(x *ops.Buffer) (*ops.Buffer, error) { return ops.Scale(x, c) },
		func(_, g *ops.Buffer) (*ops.Buffer, error) { return ops.Scale(g, c) }}, x)
}

// AddScalar returns x + c (c rounded to float32; PyTorch's x + c). Its gradient is the cotangent.
func (t *Tape) AddScalar(x Var, c float64) Var {
	return t.unary(unaryOp{"add_scalar",
		func(x *ops.Buffer) (*ops.Buffer, error) { return addScalar(x, c) },
		func(_, g *ops.Buffer) (*ops.Buffer, error) { return ops.Copy(g) }}, x)
}

// addScalar returns x + float32(c) elementwise (ops.Add with a buffer full of c).
func addScalar(x *ops.Buffer, c float64) (*ops.Buffer, error) {
	cs, err := ops.Full(x.Device(), x.Len(), c)
	if err != nil {
		return nil, err
	}
	defer cs.Release()
	return ops.Add(x, cs)
}

// binaryOp is one elementwise op y = f(a, b) of operands of the same shape, with its VJP.
type binaryOp struct {
	name string
	fwd  func(a, b *ops.Buffer) (*ops.Buffer, error)
	bwd  func(a, b, g *ops.Buffer, need []bool) ([]*ops.Buffer, error)
}

// fused adapts a fused two-gradient kernel to binaryOp.bwd.
func fused(f func(a, b, g *ops.Buffer) (*ops.Buffer, *ops.Buffer, error)) func(a, b, g *ops.Buffer, need []bool) ([]*ops.Buffer, error) {
	return func(a, b, g *ops.Buffer, _ []bool) ([]*ops.Buffer, error) {
		da, db, err := f(a, b, g)
		return []*ops.Buffer{da, db}, err
	}
}

var (
	addOp = binaryOp{"add", ops.Add, func(_, _, g *ops.Buffer, need []bool) ([]*ops.Buffer, error) {
		return grads(need, func() (*ops.Buffer, error) { return ops.Copy(g) }, func() (*ops.Buffer, error) { return ops.Copy(g) })
	}}
	subOp = binaryOp{"sub", ops.Sub, func(_, _, g *ops.Buffer, need []bool) ([]*ops.Buffer, error) {
		return grads(need, func() (*ops.Buffer, error) { return ops.Copy(g) }, func() (*ops.Buffer, error) { return ops.Scale(g, -1) })
	}}
	mulOp = binaryOp{"mul", ops.Mul, fused(ops.MulBwd)}
	divOp = binaryOp{"div", ops.Div, fused(ops.DivBwd)}
	maxOp = binaryOp{"max", ops.Max, fused(ops.MaxBwd)}
	minOp = binaryOp{"min", ops.Min, fused(ops.MinBwd)}
)

// binary records op applied to a and b. Operands of different shapes are first broadcast to
// their common shape (broadcastShapes), each by a recorded BroadcastTo.
func (t *Tape) binary(op binaryOp, a, b Var) Var {
	vs, ok := t.args(op.name, a, b)
	if !ok {
		return Var{}
	}
	va, vb := vs[0], vs[1]
	if !slices.Equal(va.shape, vb.shape) {
		if !t.liveArgs(op.name, vs) { // before the broadcast, so that op names a released operand
			return Var{}
		}
		shape, ok := broadcastShapes(va.shape, vb.shape)
		if !ok {
			return t.failf(op.name, "shapes %v and %v do not broadcast", va.shape, vb.shape)
		}
		if !slices.Equal(va.shape, shape) {
			a = t.broadcastFor(op.name, a, va.shape, shape)
		}
		if !slices.Equal(vb.shape, shape) {
			b = t.broadcastFor(op.name, b, vb.shape, shape)
		}
		return t.binary(op, a, b)
	}
	y, err := op.fwd(va.buf, vb.buf)
	return t.record(op.name, va.shape, y, err, nil, []Var{a, b}, func(g *ops.Buffer, need []bool) ([]*ops.Buffer, error) {
		return op.bwd(va.buf, vb.buf, g, need)
	})
}

// broadcastFor returns x, of shape from, broadcast to shape for op: a view (Reshape) when no
// element repeats (the axes added or grown all have size 1 before and after), else a recorded
// BroadcastTo, which takes ranks up to ops.MaxRank.
func (t *Tape) broadcastFor(op string, x Var, from, shape []int) Var {
	switch {
	case size(from) == size(shape):
		return t.Reshape(x, shape...)
	case len(shape) > ops.MaxRank:
		return t.failf(op, "broadcasting shape %v to %v takes rank %d, above ops.MaxRank (%d)", from, shape, len(shape), ops.MaxRank)
	}
	return t.BroadcastTo(x, shape...)
}

// broadcastShapes returns the shape that a and b broadcast to by NumPy's (and PyTorch's) rule:
// the shapes are aligned on their last axes, a missing leading axis counts as size 1, and two
// sizes agree when they are equal or one of them is 1 (the result takes the other). It reports
// false when some pair of sizes does not agree.
func broadcastShapes(a, b []int) ([]int, bool) {
	if len(a) < len(b) {
		a, b = b, a
	}
	shape := slices.Clone(a)
	lead := len(a) - len(b)
	for j, m := range b {
		switch n := a[lead+j]; {
		case n == m || m == 1:
		case n == 1:
			shape[lead+j] = m
		default:
			return nil, false
		}
	}
	return shape, true
}

// Add returns a + b. Like every binary op here, it broadcasts operands of different shapes by
// NumPy's rule (a bias of shape [n] adds to each row of an [m, n] value); the gradient of a
// broadcast operand sums over the axes it was repeated along.
func (t *Tape) Add(a, b Var) Var { return t.binary(addOp, a, b) }

// Sub returns a - b.
func (t *Tape) Sub(a, b Var) Var { return t.binary(subOp, a, b) }

// Mul returns a * b elementwise.
func (t *Tape) Mul(a, b Var) Var { return t.binary(mulOp, a, b) }

// Div returns a / b elementwise.
func (t *Tape) Div(a, b Var) Var { return t.binary(divOp, a, b) }

// Max returns the elementwise maximum; the gradient goes to the larger operand, split 0.5/0.5
// on ties.
func (t *Tape) Max(a, b Var) Var { return t.binary(maxOp, a, b) }

// Min returns the elementwise minimum; the gradient goes to the smaller operand, split 0.5/0.5
// on ties.
func (t *Tape) Min(a, b Var) Var { return t.binary(minOp, a, b) }

// Dropout zeroes each element of x with probability p (0 <= p <= 1) and scales the others by
// 1/(1-p). The mask is ops.BernoulliMask(keep = 1-p, key): the same key gives the same mask on
// every device. It is retained for the backward pass. As in PyTorch, p = 0 returns x itself and
// p = 1 gives x * 0 (zeros, NaN where x is NaN; zero gradient), neither drawing a mask.
func (t *Tape) Dropout(x Var, p float64, key uint64) Var {
	return t.dropout(x, p, func(n int, keep float64) (*ops.Buffer, error) {
		return ops.BernoulliMask(t.dev, n, keep, key)
	})
}

// dropout is Dropout with the mask of n elements drawn by mask (1 with probability keep).
func (t *Tape) dropout(x Var, p float64, mask func(n int, keep float64) (*ops.Buffer, error)) Var {
	const op = "dropout"
	vx, ok := t.arg(op, x)
	if !ok {
		return Var{}
	}
	switch {
	case !(p >= 0 && p <= 1):
		return t.failf(op, "probability %v is outside [0, 1]", p)
	case p == 0:
		return x
	case p == 1:
		return t.Scale(x, 0)
	}
	keep := 1 - p
	m, err := mask(vx.len(), keep)
	if err != nil {
		return t.fail(opFailed(op, err))
	}
	apply := func(x *ops.Buffer) (*ops.Buffer, error) {
		return then(x,
			func(x *ops.Buffer) (*ops.Buffer, error) { return ops.Mul(x, m) },
			func(xm *ops.Buffer) (*ops.Buffer, error) { return ops.Scale(xm, 1/keep) })
	}
	y, err := apply(vx.buf)
	return t.record(op, vx.shape, y, err, []releaser{m}, []Var{x}, func(g *ops.Buffer, need []bool) ([]*ops.Buffer, error) {
		return grads(need, func() (*ops.Buffer, error) { return apply(g) })
	})
}
