package autograd

import (
	"math"

	"github.com/torchlean-go/torchlean/ops"
)

// MaskFill is the score the seeds' attention gives a blocked position: softmax then sees
// S ⊙ mask + MaskFill·(1 - mask). A blocked entry's weight e^(-1000 - max) is 0 in float32 unless
// its whole row is blocked; such a row averages its values.
const MaskFill = -1000.0

// MultiHeadAttention is the seeds' multi-head self-attention, composed from the tape's ops (the
// fused flash-attention kernel comes with its own stage). x is (..., n, dModel), the leading axes
// a batch of sequences; wq, wk and wv are (dModel, h·d) and wo is (h·d, dModel) for heads = h
// heads of width d:
//
//	Q, K, V = x·wq, x·wk, x·wv, each split into h heads (..., h, n, d)
//	S = Q·Kᵀ/sqrt(d), then S ⊙ mask + MaskFill·(1 - mask) where a mask is given
//	y = concat over heads of softmax(S)·V, then ·wo, of x's shape
//
// mask holds n·n booleans, row-major (query i may attend to key j when mask[i·n+j]), shared by
// every head and sequence; nil attends everywhere. A causal mask is the lower triangle.
// Gradients reach x and the four projections (and none flows through the mask).
func (t *Tape) MultiHeadAttention(x, wq, wk, wv, wo Var, heads int, mask []bool) Var {
	const op = "multi_head_attention"
	vs, ok := t.args(op, x, wq, wk, wv, wo)
	if !ok {
		return Var{}
	}
	xs := vs[0].shape
	if len(xs) < 2 || xs[len(xs)-1] == 0 || xs[len(xs)-2] == 0 {
		return t.failf(op, "input of shape %v is not (..., n, dModel) with n, dModel > 0", xs)
	}
	n, dm := xs[len(xs)-2], xs[len(xs)-1]
	batch := size(xs[:len(xs)-2])
	hd := 0
	if ws := vs[1].shape; len(ws) == 2 {
		hd = ws[1]
	}
	if heads < 1 || hd == 0 || hd%heads != 0 {
		return t.failf(op, "wq of shape %v does not split into %d heads (want (%d, heads·d))", vs[1].shape, heads, dm)
	}
	for k, want := range [][]int{{dm, hd}, {dm, hd}, {dm, hd}, {hd, dm}} {
		if s := vs[k+1].shape; len(s) != 2 || s[0] != want[0] || s[1] != want[1] {
			return t.failf(op, "%s has shape %v, want %v", [...]string{"wq", "wk", "wv", "wo"}[k], s, want)
		}
	}
	if mask != nil && len(mask) != n*n {
		return t.failf(op, "mask of %d entries for %d positions (want %d)", len(mask), n, n*n)
	}
	d := hd / heads
	rows := t.Reshape(x, batch*n, dm)
	split := func(w Var) Var { // (batch·n, h·d) -> (batch·h, n, d)
		p := t.Reshape(t.MatMul(rows, w), batch, n, heads, d)
		return t.Reshape(t.Permute(p, 0, 2, 1, 3), batch*heads, n, d)
	}
	q, k, v := split(wq), split(wk), split(wv)
	s := t.Scale(t.BmmWithTranspose(q, k, false, true), 1/math.Sqrt(float64(d)))
	if mask != nil {
		keep, fill := make([]float32, n*n), make([]float32, n*n)
		for i, m := range mask {
			if m {
				keep[i] = 1
			} else {
				fill[i] = MaskFill
			}
		}
		all := []int{batch * heads, n, n}
		s = t.Add(t.Mul(s, t.BroadcastTo(t.constant(op, keep, n, n), all...)), t.BroadcastTo(t.constant(op, fill, n, n), all...))
	}
	a := t.Reshape(t.Bmm(t.Softmax(s), v), batch, heads, n, d)
	a = t.Reshape(t.Permute(a, 0, 2, 1, 3), batch*n, hd)
	return t.Reshape(t.MatMul(a, wo), xs...)
}

// constant records values (of the given shape) as a value the tape owns and no gradient reaches.
func (t *Tape) constant(op string, values []float32, shape ...int) Var {
	if t.err != nil {
		return Var{}
	}
	b, err := ops.FromFloat32(t.dev, values)
	return t.record(op, shape, b, err, nil, nil, nil)
}
