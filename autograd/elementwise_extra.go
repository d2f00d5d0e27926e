package autograd

import (
	"slices"

	"github.com/torchlean-go/torchlean/ops"
)

// Pow returns x^p elementwise for a scalar exponent (torch.pow(x, p), ops.PowScalar: p rounded to
// float32, PyTorch's special exponents exact, a negative base NaN unless p is an integer). Its
// gradient is PyTorch's, g * (p * x^(p-1)), and 0 for p = 0 (ops.PowBwd); at x = 0 the formula
// gives Inf for 0 < p < 1.
func (t *Tape) Pow(x Var, p float64) Var {
	return t.unary(unaryOp{"pow",
		func(x *ops.Buffer) (*ops.Buffer, error) { return ops.PowScalar(x, p) },
		func(x, g *ops.Buffer) (*ops.Buffer, error) { return ops.PowBwd(x, g, p) }}, x)
}

// Where returns cond ? a : b elementwise (torch.where): an element of cond is true when it is not
// zero (NaN too; -0 is false). The three operands broadcast to their common shape by NumPy's
// rule, as the binary ops do. The gradient goes to a where cond is true and to b elsewhere, by
// selection (an infinite cotangent stays infinite, the other side gets 0); cond gets none (a zero
// gradient where it requires one).
func (t *Tape) Where(cond, a, b Var) Var {
	const op = "where"
	vs, ok := t.args(op, cond, a, b)
	if !ok {
		return Var{}
	}
	if !slices.Equal(vs[0].shape, vs[1].shape) || !slices.Equal(vs[1].shape, vs[2].shape) {
		if !t.liveArgs(op, vs) {
			return Var{}
		}
		shape, ok := broadcastShapes(vs[0].shape, vs[1].shape)
		if ok {
			shape, ok = broadcastShapes(shape, vs[2].shape)
		}
		if !ok {
			return t.failf(op, "shapes %v, %v and %v do not broadcast", vs[0].shape, vs[1].shape, vs[2].shape)
		}
		xs := []Var{cond, a, b}
		for k, v := range vs {
			if !slices.Equal(v.shape, shape) {
				xs[k] = t.broadcastFor(op, xs[k], v.shape, shape)
			}
		}
		return t.Where(xs[0], xs[1], xs[2])
	}
	vc := vs[0]
	y, err := ops.Where(vc.buf, vs[1].buf, vs[2].buf)
	return t.record(op, vc.shape, y, err, nil, []Var{cond, a, b}, func(g *ops.Buffer, need []bool) ([]*ops.Buffer, error) {
		out := []*ops.Buffer{nil, nil, nil}
		if need[0] {
			z, err := ops.Zeros(t.dev, vc.len())
			if err != nil {
				return nil, err
			}
			out[0] = z
		}
		if need[1] || need[2] {
			ga, gb, err := ops.WhereBwd(vc.buf, g)
			if err != nil {
				releaseAll(out)
				return nil, err
			}
			out[1], out[2] = ga, gb
			if !need[1] {
				ga.Release()
				out[1] = nil
			}
			if !need[2] {
				gb.Release()
				out[2] = nil
			}
		}
		return out, nil
	})
}

// MaskedFill returns x with value (rounded to float32) where mask is true (not zero, NaN too):
// PyTorch's x.masked_fill(mask, value). The mask has x's shape or broadcasts to it (NumPy's
// rule; the result has x's shape). The gradient of x is the cotangent with zeros where the
// value was filled; the mask gets none (a zero gradient where it requires one).
func (t *Tape) MaskedFill(x, mask Var, value float64) Var {
	const op = "masked_fill"
	vs, ok := t.args(op, x, mask)
	if !ok {
		return Var{}
	}
	vx, vm := vs[0], vs[1]
	if !slices.Equal(vx.shape, vm.shape) {
		if !t.liveArgs(op, vs) {
			return Var{}
		}
		if shape, ok := broadcastShapes(vx.shape, vm.shape); !ok || !slices.Equal(shape, vx.shape) {
			return t.failf(op, "mask of shape %v does not broadcast to the input's shape %v", vm.shape, vx.shape)
		}
		return t.MaskedFill(x, t.broadcastFor(op, mask, vm.shape, vx.shape), value)
	}
	y, err := ops.MaskedFill(vx.buf, vm.buf, value)
	return t.record(op, vx.shape, y, err, nil, []Var{x, mask}, func(g *ops.Buffer, need []bool) ([]*ops.Buffer, error) {
		return grads(need, func() (*ops.Buffer, error) { return ops.MaskedFill(g, vm.buf, 0) },
			func() (*ops.Buffer, error) { return ops.Zeros(t.dev, vm.len()) })
	})
}
