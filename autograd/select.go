package autograd

import (
	"slices"

	"github.com/torchlean-go/torchlean/ops"
)

// Sort returns the values of x sorted along its last axis (the leading axes folded into rows),
// ascending or descending, and for each the index along that axis it came from (row-major, as
// many as x has elements): PyTorch's torch.sort(x, dim=-1, descending, stable=True). NaN counts
// as larger than +Inf, -0 equals +0, and equal values keep their order (ops.SortRows). The values
// are differentiable: each gradient goes back to the position its value came from. The indices
// are downloaded (on a GPU, Sort waits for the device). A scalar sorts as a row of one.
func (t *Tape) Sort(x Var, descending bool) (Var, []int) {
	return t.selectRows("sort", x, -1, descending)
}

// TopK returns the k largest (or, with largest false, smallest) values of x along its last axis,
// sorted (largest first, or smallest first), and their indices along that axis (row-major, k per
// row): PyTorch's torch.topk(x, k, dim=-1, largest, sorted=True), ties in index order and NaN the
// largest value. The result has x's shape with the last axis k; the gradient goes back to the
// chosen positions, zeros elsewhere. k must be in [0, the last axis] (a scalar is a row of one).
func (t *Tape) TopK(x Var, k int, largest bool) (Var, []int) {
	if k < 0 {
		if vx, ok := t.arg("topk", x); ok {
			t.failf("topk", "k = %d is negative (x of shape %v)", k, vx.shape)
		}
		return Var{}, nil
	}
	return t.selectRows("topk", x, k, largest)
}

// Argsort returns the indices of Sort alone (not differentiable: no node is recorded).
func (t *Tape) Argsort(x Var, descending bool) []int {
	const op = "argsort"
	vx, ok := t.arg(op, x)
	if !ok {
		return nil
	}
	r, c := lastAxis(vx.shape)
	ix, err := ops.ArgsortRows(vx.buf, r, c, descending)
	if err != nil {
		t.fail(opFailed(op, err))
		return nil
	}
	defer ix.Release()
	idx, err := ix.Ints()
	if err != nil {
		t.fail(opFailed(op, err))
		return nil
	}
	return idx
}

// selectRows records Sort (k < 0: the whole last axis) or TopK.
func (t *Tape) selectRows(op string, x Var, k int, desc bool) (Var, []int) {
	vx, ok := t.arg(op, x)
	if !ok {
		return Var{}, nil
	}
	r, c := lastAxis(vx.shape)
	shape := slices.Clone(vx.shape)
	switch {
	case k < 0:
		k = c
	case k > c:
		t.failf(op, "k = %d is larger than the last axis of x (shape %v)", k, vx.shape)
		return Var{}, nil
	case len(shape) == 0 && k == 0:
		shape = []int{0}
	case len(shape) > 0:
		shape[len(shape)-1] = k
	}
	y, ix, err := ops.TopK(vx.buf, r, c, k, desc)
	var idx []int
	if err == nil {
		if idx, err = ix.Ints(); err != nil {
			y.Release()
			ix.Release()
		}
	}
	v := t.record(op, shape, y, err, []releaser{ix}, []Var{x}, func(g *ops.Buffer, need []bool) ([]*ops.Buffer, error) {
		return grads(need, func() (*ops.Buffer, error) { return ops.SortRowsBwd(g, ix, r, c, k) })
	})
	if !v.Valid() {
		return Var{}, nil
	}
	return v, idx
}

// Multinomial draws samples indices along the last axis of probs, a vector or a matrix of
// non-negative weights (the leading axes folded into rows; not necessarily normalized), with the
// session's next key: PyTorch's torch.multinomial(probs, samples, replacement). The result holds
// samples indices per row, row-major, as an Ints of the current step (its Indices are already on
// the device, for Gather and the like). The draws depend only on the seed and the number of
// earlier draws, not on the device (ops.Multinomial). A negative, infinite or NaN weight, a row
// without a positive weight, or, without replacement, fewer positive weights than samples in a
// row is an error naming the row; a failed call takes no key. Not differentiable; probs is
// downloaded only for its checks' results (the call waits for the device).
func (s *Session) Multinomial(probs Var, samples int, replacement bool) Ints {
	const op = "multinomial"
	if s.Err() != nil {
		return Ints{}
	}
	vp, ok := s.arg(op, probs)
	if !ok {
		return Ints{}
	}
	if len(vp.shape) == 0 {
		s.failf(op, "probs is a scalar (want a vector or a matrix of weights)")
		return Ints{}
	}
	r, c := lastAxis(vp.shape)
	var out Ints
	s.draw(func(key uint64) bool {
		ix, err := ops.Multinomial(vp.buf, r, c, samples, replacement, key)
		var vals []int
		if err == nil {
			if vals, err = ix.Ints(); err != nil {
				ix.Release()
			}
		}
		if err != nil {
			s.fail(opFailed(op, err))
			return false
		}
		s.ints = append(s.ints, intsEntry{vals: vals, ix: ix})
		out = Ints{s: s, id: len(s.ints) - 1, gen: s.gen}
		return true
	})
	return out
}
