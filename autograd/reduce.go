package autograd

import (
	"slices"

	"github.com/torchlean-go/torchlean/ops"
)

// Sum returns the sum of all elements of x as a scalar (shape []).
func (t *Tape) Sum(x Var) Var { return t.reduceAll("sum", x, ops.Sum, 1) }

// Mean returns the mean of all elements of x as a scalar (NaN for an empty x).
func (t *Tape) Mean(x Var) Var {
	vx, ok := t.arg("mean", x)
	if !ok {
		return Var{}
	}
	return t.reduceAll("mean", x, ops.Mean, 1/float64(vx.len()))
}

// reduceAll records a reduction of x to a scalar whose gradient is c (times the cotangent) for
// every element.
func (t *Tape) reduceAll(op string, x Var, f func(*ops.Buffer) (*ops.Buffer, error), c float64) Var {
	vx, ok := t.arg(op, x)
	if !ok {
		return Var{}
	}
	y, err := f(vx.buf)
	return t.record(op, []int{}, y, err, nil, []Var{x}, func(g *ops.Buffer, need []bool) ([]*ops.Buffer, error) {
		return grads(need, func() (*ops.Buffer, error) { return spread(g, c, vx.len()) })
	})
}

// spread returns the length-n vector whose elements are all c*g (g holds one element).
func spread(g *ops.Buffer, c float64, n int) (*ops.Buffer, error) {
	fill := func(s *ops.Buffer) (*ops.Buffer, error) { return ops.BroadcastTo(s, nil, []int{n}, []int{0}) }
	if c == 1 {
		return fill(g)
	}
	return then(g, func(g *ops.Buffer) (*ops.Buffer, error) { return ops.Scale(g, c) }, fill)
}

// ReduceSum returns the sums of x along axis (the result has x's shape without that axis); a
// negative axis counts from the end, as in PyTorch (-1 is the last). As in PyTorch, a scalar
// (shape []) takes axis 0 or -1 and is its own sum.
func (t *Tape) ReduceSum(x Var, axis int) Var { return t.reduceAxis("reduce_sum", x, axis, false) }

// ReduceMean returns the means of x along axis (NaN for an empty axis); axis as for ReduceSum.
func (t *Tape) ReduceMean(x Var, axis int) Var { return t.reduceAxis("reduce_mean", x, axis, true) }

// axisArg checks the operand and the axis of an axis reduction, counting a negative axis from the
// end; a scalar (shape []) takes axis 0 or -1 and is its own result (scalar is then true).
func (t *Tape) axisArg(op string, x Var, axis int) (vx value, ax int, scalar, ok bool) {
	if vx, ok = t.arg(op, x); !ok {
		return vx, 0, false, false
	}
	if len(vx.shape) == 0 && (axis == 0 || axis == -1) {
		return vx, 0, true, true
	}
	if ax, ok = axisOf(axis, len(vx.shape)); !ok {
		t.failf(op, "axis %d of shape %v", axis, vx.shape)
	}
	return vx, ax, false, ok
}

func (t *Tape) reduceAxis(op string, x Var, axis int, mean bool) Var {
	vx, axis, scalar, ok := t.axisArg(op, x, axis)
	switch {
	case !ok:
		return Var{}
	case scalar:
		return x
	}
	f, c := ops.ReduceSumAxis, 1.0
	if mean {
		f, c = ops.ReduceMeanAxis, 1/float64(vx.shape[axis])
	}
	shape := slices.Delete(slices.Clone(vx.shape), axis, axis+1)
	axisMap := make([]int, len(vx.shape)) // the gradient is broadcast back along axis
	for j := range axisMap {
		switch {
		case j < axis:
			axisMap[j] = j + 1
		case j > axis:
			axisMap[j] = j
		}
	}
	y, err := f(vx.buf, vx.shape, axis)
	return t.record(op, shape, y, err, nil, []Var{x}, func(g *ops.Buffer, need []bool) ([]*ops.Buffer, error) {
		return grads(need, func() (*ops.Buffer, error) {
			fill := func(g *ops.Buffer) (*ops.Buffer, error) { return ops.BroadcastTo(g, shape, vx.shape, axisMap) }
			if !mean {
				return fill(g)
			}
			return then(g, func(g *ops.Buffer) (*ops.Buffer, error) { return ops.Scale(g, c) }, fill)
		})
	})
}

// lastAxis returns the rows (all leading axes folded) and columns (the last axis) of a shape; a
// scalar is one row of one column.
func lastAxis(shape []int) (rows, cols int) {
	if len(shape) == 0 {
		return 1, 1
	}
	cols = shape[len(shape)-1]
	return size(shape[:len(shape)-1]), cols
}

// ReduceMax returns the maxima of x along axis (PyTorch's x.amax(axis): the result has x's shape
// without that axis; a negative axis counts from the end). NaN propagates, as in PyTorch, and an
// empty axis gives zeros (the seeds' rule). The gradient goes to the entries equal to their
// maximum, split evenly among ties (PyTorch's amax); a row whose maximum is NaN, where every
// entry counts as tied, spreads it evenly. An axis other than the last is moved there first
// (Permute).
func (t *Tape) ReduceMax(x Var, axis int) Var {
	const op = "reduce_max"
	vx, axis, scalar, ok := t.axisArg(op, x, axis)
	switch {
	case !ok:
		return Var{}
	case scalar:
		return x
	}
	if last := len(vx.shape) - 1; axis != last {
		perm := make([]int, 0, len(vx.shape))
		for j := range vx.shape {
			if j != axis {
				perm = append(perm, j)
			}
		}
		x = t.Permute(x, append(perm, axis)...)
		if vx, ok = t.arg(op, x); !ok {
			return Var{}
		}
	}
	r, c := lastAxis(vx.shape)
	shape := slices.Clone(vx.shape[:len(vx.shape)-1])
	y, err := ops.ReduceMaxByRow(vx.buf, r, c)
	return t.record(op, shape, y, err, nil, []Var{x}, func(g *ops.Buffer, need []bool) ([]*ops.Buffer, error) {
		return grads(need, func() (*ops.Buffer, error) { return maxGrad(vx.buf, y, g, r, c) })
	})
}

// maxGrad is the gradient of the row maxima y of the (r, c) matrix x for the cotangent g (r):
// mask ⊙ (g / count) per row, where mask is 1 at the entries that tie with their row's maximum
// (MaxBwd's 0.5 share of a tie, doubled: exact, infinities included) and count the row's ties.
func maxGrad(x, y, g *ops.Buffer, r, c int) (*ops.Buffer, error) {
	var mask *ops.Buffer
	err := func() error {
		ones, err := ops.Full(x.Device(), r*c, 1)
		if err != nil {
			return err
		}
		defer ones.Release()
		yb, err := ops.BroadcastVecToCols(y, r, c)
		if err != nil {
			return err
		}
		defer yb.Release()
		half, other, err := ops.MaxBwd(x, yb, ones)
		other.Release()
		if err != nil {
			return err
		}
		mask, err = then(half, func(h *ops.Buffer) (*ops.Buffer, error) { return ops.Scale(h, 2) })
		half.Release()
		return err
	}()
	if err != nil {
		return nil, err
	}
	defer mask.Release()
	share, err := then(mask,
		func(m *ops.Buffer) (*ops.Buffer, error) { return ops.ReduceSumByRow(m, r, c) },
		func(count *ops.Buffer) (*ops.Buffer, error) { return ops.Div(g, count) },
		func(s *ops.Buffer) (*ops.Buffer, error) { return ops.BroadcastVecToCols(s, r, c) })
	if err != nil {
		return nil, err
	}
	defer share.Release()
	return ops.Mul(mask, share)
}

// Softmax returns the softmax of x along its last axis.
func (t *Tape) Softmax(x Var) Var { return t.rowwise("softmax", x, ops.Softmax, ops.SoftmaxBwd) }

// LogSoftmax returns the log-softmax of x along its last axis, computed stably.
func (t *Tape) LogSoftmax(x Var) Var {
	return t.rowwise("log_softmax", x, ops.LogSoftmax, ops.LogSoftmaxBwd)
}

// MaskedSoftmax is the hard-masked softmax of x along its last axis (ops.MaskedSoftmax): the
// entries whose mask (x's shape; 1 keeps, 0 blocks; no gradient) is 0 are left out of their row's
// max and sum and give 0, and a fully blocked row gives zeros. A causal attention mask is the
// lower triangle of ones. Blocked entries get no gradient, nor does the mask (a zero gradient
// where it requires one).
func (t *Tape) MaskedSoftmax(x, mask Var) Var {
	const op = "masked_softmax"
	vs, ok := t.args(op, x, mask)
	if !ok {
		return Var{}
	}
	vx, vm := vs[0], vs[1]
	if !slices.Equal(vx.shape, vm.shape) {
		return t.failf(op, "mask %v for input %v (want the same shape)", vm.shape, vx.shape)
	}
	r, c := lastAxis(vx.shape)
	y, err := ops.MaskedSoftmax(vx.buf, vm.buf, r, c)
	return t.record(op, vx.shape, y, err, nil, []Var{x, mask}, func(g *ops.Buffer, need []bool) ([]*ops.Buffer, error) {
		return grads(need, func() (*ops.Buffer, error) { return ops.SoftmaxBwd(y, g, r, c) },
			func() (*ops.Buffer, error) { return ops.Zeros(t.dev, r*c) })
	})
}

// rowwise records a row op along the last axis whose VJP takes the op's output y.
func (t *Tape) rowwise(op string, x Var, fwd func(x *ops.Buffer, r, c int) (*ops.Buffer, error),
	bwd func(y, g *ops.Buffer, r, c int) (*ops.Buffer, error)) Var {
	vx, ok := t.arg(op, x)
	if !ok {
		return Var{}
	}
	r, c := lastAxis(vx.shape)
	y, err := fwd(vx.buf, r, c)
	return t.record(op, vx.shape, y, err, nil, []Var{x}, func(g *ops.Buffer, need []bool) ([]*ops.Buffer, error) {
		return grads(need, func() (*ops.Buffer, error) { return bwd(y, g, r, c) })
	})
}

// axisOf returns axis as an index into a shape of rank dimensions, counting a negative axis from
// the end (-1 is the last); ok is false when it is out of range.
func axisOf(axis, rank int) (int, bool) {
	if axis < 0 {
		axis += rank
	}
	return axis, axis >= 0 && axis < rank
}

// Argmax returns, for each row of v along its last axis (the leading axes folded into rows), the
// index of the row's largest value: the first of equal ones, and the first NaN where there is
// one, as PyTorch's argmax(-1). It downloads v (on a GPU, it waits for the device) and is not
// differentiable: it is for accuracy counts and greedy decoding. A scalar gives [0]. An empty last
// axis, or an invalid v, records an error and gives nil.
func (t *Tape) Argmax(v Var) []int {
	const op = "argmax"
	vv, ok := t.arg(op, v)
	if !ok {
		return nil
	}
	cols := 1
	if len(vv.shape) > 0 {
		cols = vv.shape[len(vv.shape)-1]
	}
	if cols == 0 {
		t.failf(op, "the last axis of shape %v is empty", vv.shape)
		return nil
	}
	x, err := vv.buf.Float32s()
	if err != nil {
		t.fail(opFailed(op, err))
		return nil
	}
	idx := make([]int, len(x)/cols)
	for r := range idx {
		row := x[r*cols : (r+1)*cols]
		best := 0
		for j, y := range row {
			if y != y { // NaN
				best = j
				break
			}
			if y > row[best] {
				best = j
			}
		}
		idx[r] = best
	}
	return idx
}
