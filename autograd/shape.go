package autograd

import (
	"slices"

	"github.com/torchlean-go/torchlean/ops"
)

// Reshape returns x with another shape of the same number of elements; one dimension may be -1,
// inferred from the others as in PyTorch. The result is a view: it shares x's buffer (no copy).
func (t *Tape) Reshape(x Var, shape ...int) Var {
	const op = "reshape"
	vx, ok := t.arg(op, x)
	if !ok {
		return Var{}
	}
	shape = slices.Clone(shape)
	if k := slices.Index(shape, -1); k >= 0 && !slices.Contains(shape[k+1:], -1) {
		shape[k] = 1
		if rest, err := numel(shape); err == nil && rest > 0 && vx.len()%rest == 0 {
			shape[k] = vx.len() / rest
		} else {
			shape[k] = -1 // no size fits: reported below
		}
	}
	n, err := numel(shape)
	if err != nil || n != vx.len() {
		return t.failf(op, "cannot view shape %v as %v", vx.shape, shape)
	}
	return t.view(op, x, vx, shape)
}

// Flatten returns x as a vector (a view, like Reshape).
func (t *Tape) Flatten(x Var) Var {
	vx, ok := t.arg("flatten", x)
	if !ok {
		return Var{}
	}
	return t.view("flatten", x, vx, []int{vx.len()})
}

// Detach returns x as a value that backward passes do not go through (a view: it shares x's
// buffer, and no gradient flows from it to x).
func (t *Tape) Detach(x Var) Var {
	vx, ok := t.arg("detach", x)
	if !ok {
		return Var{}
	}
	return t.push(node{name: "detach", val: vx})
}

// Transpose2d returns the transpose of the matrix x.
func (t *Tape) Transpose2d(x Var) Var {
	const op = "transpose2d"
	vx, ok := t.arg(op, x)
	if !ok {
		return Var{}
	}
	if len(vx.shape) != 2 {
		return t.failf(op, "shape %v is not a matrix", vx.shape)
	}
	r, c := vx.shape[0], vx.shape[1]
	y, err := ops.Transpose2d(vx.buf, r, c)
	return t.record(op, []int{c, r}, y, err, nil, []Var{x}, func(g *ops.Buffer, need []bool) ([]*ops.Buffer, error) {
		return grads(need, func() (*ops.Buffer, error) { return ops.Transpose2d(g, c, r) })
	})
}

// SwapAdjacent returns x with the axes depth and depth+1 swapped (depth = rank-2 swaps the last
// two, PyTorch's x.transpose(-2, -1)). As in the seeds, a depth past the last pair of axes gives x
// itself. A negative depth is an error: the seeds' depth is a natural number, and counting it
// from the end would be ambiguous (Permute takes negative axes).
func (t *Tape) SwapAdjacent(x Var, depth int) Var {
	const op = "swap_adjacent"
	vx, ok := t.arg(op, x)
	if !ok {
		return Var{}
	}
	if depth < 0 {
		return t.failf(op, "negative depth %d (depth %d swaps the last two axes of shape %v)", depth, len(vx.shape)-2, vx.shape)
	}
	if depth >= len(vx.shape)-1 { // not depth+1 >= len: it overflows
		return x
	}
	shape := slices.Clone(vx.shape)
	shape[depth], shape[depth+1] = shape[depth+1], shape[depth]
	y, err := ops.SwapAdjacentAtDepth(vx.buf, vx.shape, depth)
	return t.record(op, shape, y, err, nil, []Var{x}, func(g *ops.Buffer, need []bool) ([]*ops.Buffer, error) {
		return grads(need, func() (*ops.Buffer, error) { return ops.SwapAdjacentAtDepth(g, shape, depth) })
	})
}

// Permute returns x with its axes reordered: axis j of the result is axis perm[j] of x (so
// Permute(x, 1, 2, 0) maps (a, b, c) to (b, c, a); a negative axis counts from the end). It moves
// runs of axes as blocks, one copy per move (at most rank-1 copies, one for the usual layout
// changes such as (b, t, h, d) to (b, h, d, t)); moves that only shift axes of size 1 copy
// nothing. The identity returns x.
func (t *Tape) Permute(x Var, perm ...int) Var {
	const op = "permute"
	vx, ok := t.arg(op, x)
	if !ok {
		return Var{}
	}
	given := perm
	perm = slices.Clone(perm)
	seen := make([]bool, len(perm))
	for j, p := range perm {
		p, ok := axisOf(p, len(perm))
		if !ok || seen[p] {
			return t.failf(op, "%v is not a permutation of the axes of shape %v", given, vx.shape)
		}
		seen[p], perm[j] = true, p
	}
	if len(perm) != len(vx.shape) {
		return t.failf(op, "%v is not a permutation of the axes of shape %v", given, vx.shape)
	}
	if len(perm) > ops.MaxRank {
		return t.failf(op, "rank %d of shape %v is above %d", len(perm), vx.shape, ops.MaxRank)
	}
	cur := make([]int, len(perm)) // cur[j]: the axis of x at position j
	for j := range cur {
		cur[j] = j
	}
	y, last := x, vx.shape // the latest copy and its shape
	for j, p := range perm {
		k := slices.Index(cur, p)
		if k == j {
			continue
		}
		// Move the run cur[k:k+n] (the axes wanted at j, j+1, ...) before cur[j:k].
		n := 1
		for j+n < len(perm) && k+n < len(cur) && cur[k+n] == perm[j+n] {
			n++
		}
		a, b := size(permuted(vx.shape, cur[:j])), size(permuted(vx.shape, cur[j:k]))
		c, d := size(permuted(vx.shape, cur[k:k+n])), size(permuted(vx.shape, cur[k+n:]))
		cur = slices.Concat(cur[:j], cur[k:k+n], cur[j:k], cur[k+n:])
		if b > 1 && c > 1 { // otherwise the elements keep their order
			last = permuted(vx.shape, cur)
			y = t.swapBlocks(y, a, b, c, d, last)
		}
	}
	if shape := permuted(vx.shape, cur); !slices.Equal(shape, last) {
		return t.Reshape(y, shape...) // size-1 axes moved after the last copy
	}
	return y
}

// permuted returns shape with its axes in the order axes.
func permuted(shape, axes []int) []int {
	out := make([]int, len(axes))
	for j, a := range axes {
		out[j] = shape[a]
	}
	return out
}

// swapBlocks records x, viewed as (a, b, c, d), with its two middle blocks swapped: (a, c, b,
// d), given the shape of the result. Its VJP swaps them back.
func (t *Tape) swapBlocks(x Var, a, b, c, d int, shape []int) Var {
	const op = "permute"
	vx, ok := t.arg(op, x)
	if !ok {
		return Var{}
	}
	y, err := ops.SwapAdjacentAtDepth(vx.buf, []int{a, b, c, d}, 1)
	return t.record(op, shape, y, err, nil, []Var{x}, func(g *ops.Buffer, need []bool) ([]*ops.Buffer, error) {
		return grads(need, func() (*ops.Buffer, error) { return ops.SwapAdjacentAtDepth(g, []int{a, c, b, d}, 1) })
	})
}

// BroadcastTo returns x broadcast to shape by NumPy's rule: shapes are aligned on their last
// axes, missing leading axes are inserted, and axes of size 1 are repeated. The gradient sums
// over the broadcast axes.
func (t *Tape) BroadcastTo(x Var, shape ...int) Var {
	vx, ok := t.arg("broadcast_to", x)
	if !ok {
		return Var{}
	}
	lead := len(shape) - len(vx.shape)
	if lead < 0 {
		return t.failf("broadcast_to", "cannot broadcast shape %v to %v", vx.shape, shape)
	}
	axisMap := make([]int, len(shape))
	for j := lead; j < len(shape); j++ {
		axisMap[j] = j - lead + 1
	}
	return t.BroadcastAxes(x, shape, axisMap)
}

// BroadcastAxes returns x broadcast to shape in the convention of the seeds (ops.BroadcastTo):
// axisMap[j] = 0 inserts output axis j, axisMap[j] = k+1 reads axis k of x, which must have size
// 1 or shape[j]. The gradient is ops.ReduceFromBroadcastTo.
func (t *Tape) BroadcastAxes(x Var, shape, axisMap []int) Var {
	const op = "broadcast_to"
	vx, ok := t.arg(op, x)
	if !ok {
		return Var{}
	}
	shape, axisMap = slices.Clone(shape), slices.Clone(axisMap)
	y, err := ops.BroadcastTo(vx.buf, vx.shape, shape, axisMap)
	return t.record(op, shape, y, err, nil, []Var{x}, func(g *ops.Buffer, need []bool) ([]*ops.Buffer, error) {
		return grads(need, func() (*ops.Buffer, error) { return ops.ReduceFromBroadcastTo(g, vx.shape, shape, axisMap) })
	})
}

// rows returns the number of rows (dim 0) and the elements per row of a value of rank >= 1.
func rows(v value) (int, int) {
	if len(v.shape) == 0 {
		return 0, 0
	}
	return v.shape[0], size(v.shape[1:])
}

// Concat returns a followed by b along dim 0 (vectors, or tensors whose other axes agree).
func (t *Tape) Concat(a, b Var) Var {
	const op = "concat"
	vs, ok := t.args(op, a, b)
	if !ok {
		return Var{}
	}
	va, vb := vs[0], vs[1]
	if len(va.shape) == 0 || len(vb.shape) == 0 || !slices.Equal(va.shape[1:], vb.shape[1:]) {
		return t.failf(op, "shapes %v and %v do not concatenate along dim 0", va.shape, vb.shape)
	}
	na, nb := va.len(), vb.len()
	shape := slices.Clone(va.shape)
	shape[0] += vb.shape[0]
	y, err := ops.Concat1d(va.buf, vb.buf, na, nb)
	return t.record(op, shape, y, err, nil, []Var{a, b}, func(g *ops.Buffer, need []bool) ([]*ops.Buffer, error) {
		return grads(need,
			func() (*ops.Buffer, error) { return ops.Slice1d(g, na+nb, 0, na) },
			func() (*ops.Buffer, error) { return ops.Slice1d(g, na+nb, na, nb) })
	})
}

// Slice returns x[start : start+length] along dim 0.
func (t *Tape) Slice(x Var, start, length int) Var {
	const op = "slice"
	vx, ok := t.arg(op, x)
	if !ok {
		return Var{}
	}
	r, c := rows(vx)
	if len(vx.shape) == 0 || start < 0 || length < 0 || start > r || length > r-start { // start+length may overflow
		return t.failf(op, "[%d, %d+%d) is outside dim 0 of shape %v", start, start, length, vx.shape)
	}
	shape := slices.Clone(vx.shape)
	shape[0] = length
	n := r * c
	y, err := ops.Slice1d(vx.buf, n, start*c, length*c)
	return t.record(op, shape, y, err, nil, []Var{x}, func(g *ops.Buffer, need []bool) ([]*ops.Buffer, error) {
		return grads(need, func() (*ops.Buffer, error) { return pad(g, start*c, n) })
	})
}

// pad returns the length-n vector holding g at offset off and zeros elsewhere.
func pad(g *ops.Buffer, off, n int) (*ops.Buffer, error) {
	d, m := g.Device(), g.Len()
	head, err := ops.Zeros(d, off)
	if err != nil {
		return nil, err
	}
	defer head.Release()
	tail, err := ops.Zeros(d, n-off-m)
	if err != nil {
		return nil, err
	}
	defer tail.Release()
	return then(head,
		func(h *ops.Buffer) (*ops.Buffer, error) { return ops.Concat1d(h, g, off, m) },
		func(hg *ops.Buffer) (*ops.Buffer, error) { return ops.Concat1d(hg, tail, off+m, n-off-m) })
}

// Gather returns the rows idx[j] of x along dim 0 (elements of a vector), in a value of shape
// (len(idx), x's other axes...). On a session's tape an index outside [0, dim 0) is an error
// naming it, as in PyTorch's index_select and nn.Embedding. On a plain Tape (NewTape) an index
// beyond dim 0 reads zeros and passes no gradient (the seeds' totalization, which the ops
// kernels keep) and only a negative one is an error. The indices are uploaded once and retained
// for the backward pass, which scatter-adds the cotangent rows.
func (t *Tape) Gather(x Var, idx []int) Var {
	if !t.rowsInRange("gather", x, idx) {
		return Var{}
	}
	ix, ok := t.indices("gather", idx)
	if !ok {
		return Var{}
	}
	return t.gather(x, ix, []releaser{ix})
}

// GatherIdx is Gather with prepared indices (borrowed: the tape does not release them, and they
// must stay live until the tape is Reset). A session checks the indices of its Ints handles
// (Ints.Indices) as Gather does; indices prepared elsewhere (ops.NewIndices) are not checked:
// their values are on the device.
func (t *Tape) GatherIdx(x Var, ix *ops.Indices) Var {
	if !t.rowsInRange("gather", x, t.hostIndices(ix)) {
		return Var{}
	}
	return t.gather(x, ix, nil)
}

// rowsInRange reports whether op may use the row indices idx of x: always on a plain Tape; on a
// session's tape, when every index is in [0, dim 0 of x) (otherwise the error, naming the first
// index outside, is recorded). Invalid operands are left to op.
func (t *Tape) rowsInRange(op string, x Var, idx []int) bool {
	if t.sess == nil || len(idx) == 0 || t.err != nil || !t.owns(x) {
		return true
	}
	shape := t.nodes[x.id].val.shape
	if len(shape) == 0 {
		return true // op's own error
	}
	for j, i := range idx {
		if i < 0 || i >= shape[0] {
			t.failf(op, "index %d at position %d is outside [0, %d), dim 0 of shape %v", i, j, shape[0], shape)
			return false
		}
	}
	return true
}

// hostIndices returns the values of ix when it is the device copy of an Ints handle of the
// tape's session (nil otherwise).
func (t *Tape) hostIndices(ix *ops.Indices) []int {
	if t.sess == nil || ix == nil {
		return nil
	}
	for _, e := range t.sess.ints {
		if e.ix == ix {
			return e.vals
		}
	}
	return nil
}

// indices uploads idx for op.
func (t *Tape) indices(op string, idx []int) (*ops.Indices, bool) {
	if t.err != nil {
		return nil, false
	}
	ix, err := ops.NewIndices(t.dev, idx)
	if err != nil {
		t.fail(opFailed(op, err))
		return nil, false
	}
	return ix, true
}

// gather records Gather; work holds ix when the tape owns it.
func (t *Tape) gather(x Var, ix *ops.Indices, work []releaser) Var {
	const op = "gather"
	vx, ok := t.arg(op, x)
	switch {
	case !ok:
	case ix == nil:
		t.failf(op, "nil indices")
	case len(vx.shape) == 0:
		t.failf(op, "a scalar has no dim 0")
	default:
		r, c := rows(vx)
		shape := append([]int{ix.Len()}, vx.shape[1:]...)
		y, err := ops.GatherRowsIdx(vx.buf, r, c, ix)
		return t.record(op, shape, y, err, work, []Var{x}, func(g *ops.Buffer, need []bool) ([]*ops.Buffer, error) {
			return grads(need, func() (*ops.Buffer, error) { return scatterZeros(g, r, c, ix) })
		})
	}
	release(work)
	return Var{}
}

// ScatterAdd returns x with row j of values added to row idx[j] of x along dim 0 (elements of
// a vector); values has shape (len(idx), x's other axes...). Repeated indices accumulate. On a
// session's tape an index outside [0, dim 0) is an error, as in PyTorch's index_add; on a plain
// Tape an index beyond dim 0 is ignored (the seeds' totalization) and a negative one is an
// error.
func (t *Tape) ScatterAdd(x, values Var, idx []int) Var {
	if !t.rowsInRange("scatter_add", x, idx) {
		return Var{}
	}
	ix, ok := t.indices("scatter_add", idx)
	if !ok {
		return Var{}
	}
	return t.scatterAdd(x, values, ix, []releaser{ix})
}

// ScatterAddIdx is ScatterAdd with prepared indices (borrowed, and checked by a session when
// they come from an Ints handle, like GatherIdx).
func (t *Tape) ScatterAddIdx(x, values Var, ix *ops.Indices) Var {
	if !t.rowsInRange("scatter_add", x, t.hostIndices(ix)) {
		return Var{}
	}
	return t.scatterAdd(x, values, ix, nil)
}

// scatterAdd records ScatterAdd; work holds ix when the tape owns it.
func (t *Tape) scatterAdd(x, values Var, ix *ops.Indices, work []releaser) Var {
	const op = "scatter_add"
	vs, ok := t.args(op, x, values)
	switch {
	case !ok:
	case ix == nil:
		t.failf(op, "nil indices")
	case len(vs[0].shape) == 0 || len(vs[1].shape) == 0 || vs[1].shape[0] != ix.Len() || !slices.Equal(vs[0].shape[1:], vs[1].shape[1:]):
		t.failf(op, "values of shape %v do not scatter %d indices into shape %v", vs[1].shape, ix.Len(), vs[0].shape)
	default:
		vx, vv := vs[0], vs[1]
		r, c := rows(vx)
		y, err := ops.ScatterAddRowsIdx(vx.buf, vv.buf, r, c, ix)
		return t.record(op, vx.shape, y, err, work, []Var{x, values}, func(g *ops.Buffer, need []bool) ([]*ops.Buffer, error) {
			return grads(need,
				func() (*ops.Buffer, error) { return ops.Copy(g) },
				func() (*ops.Buffer, error) { return ops.GatherRowsIdx(g, r, c, ix) })
		})
	}
	release(work)
	return Var{}
}

// release releases everything in rs.
func release(rs []releaser) {
	for _, r := range rs {
		r.Release()
	}
}
