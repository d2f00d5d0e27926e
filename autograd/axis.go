package autograd

import (
	"fmt"
	"slices"

	"github.com/torchlean-go/torchlean/ops"
)

// The ops of this file work along any axis by ops along dim 0 (ops.ConcatN, Slice) composed with
// views and 2-D transposes: for an axis with outer elements before it, the values are laid out
// (outer, rest), transposed so that the axis leads, handled along dim 0 and transposed back.

// axisIn is axisOf (a negative axis counted from the end of a shape of rank r) recording an error
// of op when axis is out of range (what names the shape in it).
func (t *Tape) axisIn(op string, axis, r int, what string) (int, bool) {
	k, ok := axisOf(axis, r)
	if !ok {
		t.failf(op, "axis %d is outside [%d, %d] for %s", axis, -r, r-1, what)
	}
	return k, ok
}

// leading returns x, of shape shape with outer = size(shape[:axis]) elements before axis, as a
// value of shape (size(shape[axis:]), outer): the axis and those after it lead. With outer 1 it is
// a view.
func (t *Tape) leading(x Var, shape []int, axis int) Var {
	outer, rest := size(shape[:axis]), size(shape[axis:])
	if outer == 1 {
		return t.Reshape(x, rest, 1)
	}
	return t.Transpose2d(t.Reshape(x, outer, rest))
}

// trailing undoes leading: y of shape (size(shape[axis:]), outer) back to shape.
func (t *Tape) trailing(y Var, shape []int, axis int) Var {
	outer, rest := size(shape[:axis]), size(shape[axis:])
	if outer == 1 {
		return t.Reshape(y, shape...)
	}
	return t.Reshape(t.Transpose2d(t.Reshape(y, rest, outer)), shape...)
}

// Cat joins xs along axis (negative: counted from the end), PyTorch's torch.cat(xs, dim=axis):
// the values have one rank (at least 1) and the same sizes on every other axis. One value is
// returned as it is. The values, with the axis leading, are joined by one ops.ConcatN; the
// gradient of each is its slice of the result's.
func (t *Tape) Cat(axis int, xs ...Var) Var {
	const op = "cat"
	vs, ok := t.args(op, xs...)
	if !ok || !t.liveArgs(op, vs) {
		return Var{}
	}
	if len(vs) == 0 {
		return t.failf(op, "no values to join")
	}
	first := vs[0].shape
	k, ok := t.axisIn(op, axis, len(first), fmt.Sprintf("shape %v", first))
	if !ok {
		return Var{}
	}
	shape := slices.Clone(first)
	for _, v := range vs[1:] {
		switch {
		case len(v.shape) != len(first):
			return t.failf(op, "shapes %v and %v have different ranks", first, v.shape)
		case !slices.Equal(v.shape[:k], first[:k]) || !slices.Equal(v.shape[k+1:], first[k+1:]):
			return t.failf(op, "shapes %v and %v differ off axis %d", first, v.shape, k)
		}
		shape[k] += v.shape[k]
	}
	if len(xs) == 1 {
		return xs[0]
	}
	parts := make([]Var, len(xs))
	for i, x := range xs {
		parts[i] = t.leading(x, vs[i].shape, k)
	}
	pv, ok := t.args(op, parts...)
	if !ok {
		return Var{}
	}
	bufs, offs := make([]*ops.Buffer, len(pv)), make([]int, len(pv)+1)
	for i, v := range pv {
		bufs[i], offs[i+1] = v.buf, offs[i]+v.len()
	}
	y, err := ops.ConcatN(bufs...)
	cat := t.record(op, []int{size(shape[k:]), size(shape[:k])}, y, err, nil, parts, func(g *ops.Buffer, need []bool) ([]*ops.Buffer, error) {
		fs := make([]func() (*ops.Buffer, error), len(pv))
		for i := range fs {
			fs[i] = func() (*ops.Buffer, error) { return ops.Slice1d(g, offs[len(pv)], offs[i], offs[i+1]-offs[i]) }
		}
		return grads(need, fs...)
	})
	return t.trailing(cat, shape, k)
}

// Stack joins xs, all of one shape, along a new axis (negative: counted from the end of the
// result's shape), PyTorch's torch.stack(xs, dim=axis): Cat of the values with an axis of size 1
// inserted.
func (t *Tape) Stack(axis int, xs ...Var) Var {
	const op = "stack"
	vs, ok := t.args(op, xs...)
	if !ok || !t.liveArgs(op, vs) {
		return Var{}
	}
	if len(vs) == 0 {
		return t.failf(op, "no values to stack")
	}
	first := vs[0].shape
	k, ok := t.axisIn(op, axis, len(first)+1, fmt.Sprintf("stacking values of shape %v", first))
	if !ok {
		return Var{}
	}
	grown := slices.Insert(slices.Clone(first), k, 1)
	parts := make([]Var, len(xs))
	for i, v := range vs {
		if !slices.Equal(v.shape, first) {
			return t.failf(op, "shapes %v and %v differ", first, v.shape)
		}
		parts[i] = t.Reshape(xs[i], grown...)
	}
	return t.Cat(k, parts...)
}

// Narrow returns the entries start .. start+length-1 of x along axis (negative: counted from the
// end), PyTorch's x.narrow(axis, start, length) (x[:, start:start+length] for axis 1); a copy,
// unless it is the whole axis (x itself).
func (t *Tape) Narrow(x Var, axis, start, length int) Var {
	const op = "narrow"
	vx, ok := t.arg(op, x)
	if !ok || !t.liveArgs(op, []value{vx}) {
		return Var{}
	}
	k, ok := t.axisIn(op, axis, len(vx.shape), fmt.Sprintf("shape %v", vx.shape))
	if !ok {
		return Var{}
	}
	d := vx.shape[k]
	if start < 0 || length < 0 || start > d || length > d-start { // start+length may overflow
		return t.failf(op, "[%d, %d+%d) is outside axis %d of shape %v", start, start, length, k, vx.shape)
	}
	if length == d {
		return x
	}
	shape := slices.Clone(vx.shape)
	shape[k] = length
	inner, outer := size(vx.shape[k+1:]), size(vx.shape[:k])
	lead := t.leading(x, vx.shape, k) // (d*inner, outer)
	part := t.Slice(t.Reshape(lead, d, inner*outer), start, length)
	return t.trailing(t.Reshape(part, length*inner, outer), shape, k)
}

// Unsqueeze returns x with an axis of size 1 inserted at axis (negative: counted from the end of
// the result's shape), PyTorch's x.unsqueeze(axis): a view, as Reshape. With it a reduction
// keeps its axis for broadcasting (PyTorch's keepdim=True): x - Unsqueeze(ReduceMean(x, -1), -1).
func (t *Tape) Unsqueeze(x Var, axis int) Var {
	const op = "unsqueeze"
	vx, ok := t.arg(op, x)
	if !ok {
		return Var{}
	}
	k, ok := t.axisIn(op, axis, len(vx.shape)+1, fmt.Sprintf("inserting into shape %v", vx.shape))
	if !ok {
		return Var{}
	}
	return t.Reshape(x, slices.Insert(slices.Clone(vx.shape), k, 1)...)
}

// Squeeze returns x without its axis axis (negative: counted from the end) when that axis has
// size 1, and x itself otherwise (a scalar with axis 0 or -1 too), as PyTorch's x.squeeze(axis)
// does: a view, as Reshape.
func (t *Tape) Squeeze(x Var, axis int) Var {
	const op = "squeeze"
	vx, ok := t.arg(op, x)
	if !ok {
		return Var{}
	}
	if len(vx.shape) == 0 && (axis == 0 || axis == -1) {
		return x // a scalar, as PyTorch's squeeze of a 0-d tensor
	}
	k, ok := t.axisIn(op, axis, len(vx.shape), fmt.Sprintf("shape %v", vx.shape))
	if !ok {
		return Var{}
	}
	if vx.shape[k] != 1 {
		return x
	}
	return t.Reshape(x, slices.Delete(slices.Clone(vx.shape), k, k+1)...)
}
