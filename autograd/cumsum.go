package autograd

import (
	"slices"

	"github.com/torchlean-go/torchlean/ops"
)

// Cumsum returns the inclusive cumulative sums of x along axis (torch.cumsum(x, axis); a negative
// axis counts from the end, and a scalar, shape [], takes axis 0 or -1 and is its own sum). Each
// line along the axis is summed one float32 addition at a time in ascending order
// (ops.CumsumRows), the same bits on every device. The gradient is the reverse cumulative sum of
// the cotangent along the axis (ops.CumsumRowsBwd). An axis other than the last is moved there
// and back with recorded Permutes.
func (t *Tape) Cumsum(x Var, axis int) Var {
	const op = "cumsum"
	vx, axis, scalar, ok := t.axisArg(op, x, axis)
	switch {
	case !ok:
		return Var{}
	case scalar:
		return x
	}
	if last := len(vx.shape) - 1; axis != last {
		perm := make([]int, 0, len(vx.shape)) // the other axes in order, then axis
		for j := range vx.shape {
			if j != axis {
				perm = append(perm, j)
			}
		}
		perm = append(perm, axis)
		back := make([]int, len(perm)) // the inverse permutation
		for j, p := range perm {
			back[p] = j
		}
		return t.Permute(t.Cumsum(t.Permute(x, perm...), -1), back...)
	}
	r, c := lastAxis(vx.shape)
	y, err := ops.CumsumRows(vx.buf, r, c)
	return t.record(op, slices.Clone(vx.shape), y, err, nil, []Var{x}, func(g *ops.Buffer, need []bool) ([]*ops.Buffer, error) {
		return grads(need, func() (*ops.Buffer, error) { return ops.CumsumRowsBwd(g, r, c) })
	})
}
