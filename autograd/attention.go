package autograd

import (
	"math"
	"slices"

	"github.com/torchlean-go/torchlean/ops"
)

// MaskFill is the score the seeds' attention gives a blocked position (ops.AttentionFill). A
// blocked entry's weight e^(-1000 - max) is 0 in float32 unless its whole row is blocked; such a
// row averages its values.
const MaskFill = -1000.0

// MultiHeadAttention is the seeds' multi-head self-attention: x is (..., n, dModel), the leading
// axes a batch of sequences; wq, wk and wv are (dModel, h·d) and wo is (h·d, dModel) for heads = h
// heads of width d:
//
//	Q, K, V = x·wq, x·wk, x·wv, each split into h heads (..., h, n, d)
//	S = Q·Kᵀ/sqrt(d), with S = MaskFill where the mask blocks an entry
//	y = concat over heads of softmax(S)·V, then ·wo, of x's shape
//
// mask holds n·n booleans, row-major (query i may attend to key j when mask[i·n+j]), shared by
// every head and sequence; nil attends everywhere. A causal mask is the lower triangle (or use
// ScaledDotProductAttention with Causal, which excludes the entries instead of filling them).
// Gradients reach x and the four projections (and none flows through the mask).
//
// The attention itself runs on the tiled flash-attention kernels (ops.FlashAttention: no n x n
// scores are stored, the same bits on every device); its results match the composition of
// matrix products and a row softmax within float32 rounding. Head widths up to
// ops.AttentionMaxD.
func (t *Tape) MultiHeadAttention(x, wq, wk, wv, wo Var, heads int, mask []bool) Var {
	return t.multiHeadAttention(x, wq, wk, wv, wo, heads, mask, false)
}

// multiHeadAttention is MultiHeadAttention on the flash kernels, or, when composed, built from
// bmm and softmax with the n x n scores on the tape (the reference the tests compare with).
func (t *Tape) multiHeadAttention(x, wq, wk, wv, wo Var, heads int, mask []bool, composed bool) Var {
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
	if heads < 1 {
		return t.failf(op, "heads %d must be positive", heads)
	}
	if hd == 0 || hd%heads != 0 {
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
	if !composed && d > ops.AttentionMaxD {
		return t.failf(op, "heads of width %d: at most %d", d, ops.AttentionMaxD)
	}
	rows := t.Reshape(x, batch*n, dm)
	split := func(w Var) Var { // (batch·n, h·d) -> (batch·h, n, d)
		p := t.Reshape(t.MatMul(rows, w), batch, n, heads, d)
		return t.Reshape(t.Permute(p, 0, 2, 1, 3), batch*heads, n, d)
	}
	q, k, v := split(wq), split(wk), split(wv)
	var a Var
	if composed {
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
		a = t.Bmm(t.Softmax(s), v)
	} else {
		a = t.ScaledDotProductAttention(q, k, v, SDPAOptions{Mask: mask, FillMask: true})
	}
	a = t.Reshape(t.Permute(t.Reshape(a, batch, heads, n, d), 0, 2, 1, 3), batch*n, hd)
	return t.Reshape(t.MatMul(a, wo), xs...)
}

// SDPAOptions are the options of ScaledDotProductAttention, after
// torch.nn.functional.scaled_dot_product_attention's (no dropout).
type SDPAOptions struct {
	// Mask is PyTorch's boolean attn_mask (true: the query may attend to the key): nq·nk values,
	// row-major, shared by every leading index, or one (nq, nk) mask per leading index (B·nq·nk
	// values, B the product of the leading axes); nil attends everywhere.
	Mask []bool
	// FillMask gives a blocked entry the seeds' score MaskFill (-1000.0, unscaled) instead of
	// excluding it (the convention of MultiHeadAttention and of the seeds' flash attention: a
	// fully blocked row then averages V).
	FillMask bool
	// Causal excludes the keys j > i (PyTorch's is_causal: the top-left lower triangle).
	Causal bool
	// Scale multiplies q·kᵀ; 0 means 1/sqrt(d), PyTorch's default.
	Scale float64
}

// ScaledDotProductAttention returns softmax(q·kᵀ·scale, masked)·v, as
// torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask, is_causal=Causal,
// scale=Scale) without dropout: q is (..., nq, d), k and v (..., nk, d) with the same leading
// axes (folded into one batch of sequences; no broadcasting) and 1 <= d <= ops.AttentionMaxD;
// the result is (..., nq, d). Blocked entries (the mask's false entries, and j > i when Causal)
// are excluded from the softmax and get no gradient; a query row with every entry blocked gives
// zeros and zero gradients (where PyTorch gives NaN). Gradients reach q, k and v.
//
// It runs on the tiled flash-attention kernels (ops.FlashAttention and FlashAttentionBackward):
// memory linear in the sequence length (the node keeps the output's row log-sum-exp, one float
// per query row), the same bits on the CPU and a GPU.
func (t *Tape) ScaledDotProductAttention(q, k, v Var, o SDPAOptions) Var {
	const op = "scaled_dot_product_attention"
	vs, ok := t.args(op, q, k, v)
	if !ok || !t.liveArgs(op, vs) {
		return Var{}
	}
	sq, sk, sv := vs[0].shape, vs[1].shape, vs[2].shape
	if len(sq) < 2 || len(sk) != len(sq) || len(sv) != len(sq) ||
		!slices.Equal(sq[:len(sq)-2], sk[:len(sk)-2]) || !slices.Equal(sk, sv) || sq[len(sq)-1] != sk[len(sk)-1] {
		return t.failf(op, "q %v, k %v, v %v: want (..., nq, d), (..., nk, d), (..., nk, d) with the same leading axes", sq, sk, sv)
	}
	nq, nk, d := sq[len(sq)-2], sk[len(sk)-2], sq[len(sq)-1]
	if d < 1 || d > ops.AttentionMaxD {
		return t.failf(op, "head dimension %d outside [1, %d]", d, ops.AttentionMaxD)
	}
	batch := size(sq[:len(sq)-2])
	dims := ops.AttentionDims{Batch: batch, NQ: nq, NK: nk, D: d}
	scale := o.Scale
	if scale == 0 {
		scale = ops.AttentionScale(d)
	}
	opts := ops.AttentionOptions{Causal: o.Causal, HardMask: !o.FillMask}
	var work []releaser
	if o.Mask != nil {
		if len(o.Mask) != nq*nk && len(o.Mask) != batch*nq*nk {
			return t.failf(op, "mask of %d entries: want %d (nq·nk) or %d (one per sequence)", len(o.Mask), nq*nk, batch*nq*nk)
		}
		m := make([]float32, len(o.Mask))
		for i, keep := range o.Mask {
			if keep {
				m[i] = 1
			}
		}
		mb, err := ops.FromFloat32(t.dev, m)
		if err != nil {
			return t.fail(opFailed(op, err))
		}
		opts.Mask = mb
		work = append(work, mb)
	} else {
		opts.HardMask = false
	}
	out, lse, err := ops.FlashAttention(vs[0].buf, vs[1].buf, vs[2].buf, dims, scale, opts)
	if err == nil {
		work = append(work, lse)
	}
	bq, bk, bv := vs[0].buf, vs[1].buf, vs[2].buf
	return t.record(op, slices.Clone(sq), out, err, work, []Var{q, k, v}, func(g *ops.Buffer, need []bool) ([]*ops.Buffer, error) {
		dq, dk, dv, err := ops.FlashAttentionBackward(bq, bk, bv, out, lse, g, dims, scale, opts)
		if err != nil {
			return nil, err
		}
		grads := []*ops.Buffer{dq, dk, dv}
		for i, b := range grads {
			if !need[i] {
				b.Release()
				grads[i] = nil
			}
		}
		return grads, nil
	})
}

// constant records values (of the given shape) as a value the tape owns and no gradient reaches.
func (t *Tape) constant(op string, values []float32, shape ...int) Var {
	if t.err != nil {
		return Var{}
	}
	b, err := ops.FromFloat32(t.dev, values)
	return t.record(op, shape, b, err, nil, nil, nil)
}
