package autograd

import (
	"fmt"
	"slices"

	"github.com/torchlean-go/torchlean/ops"
)

// MatMul returns the matrix product of a and b by torch.matmul's rules. Two matrices (m, n) and
// (n, p) give (m, p). A vector operand (n) is taken as a row (1, n) on the left or a column
// (n, 1) on the right, and that axis is dropped from the result (two vectors give their dot
// product, shape []). A stack of matrices (..., m, n) times a matrix (n, p) is one product with
// the leading axes folded into rows: (..., m, p). Otherwise both operands are stacks of matrices
// whose batch axes (all but the last two) broadcast by NumPy's rule, and each pair is multiplied
// (Bmm): (batch..., m, p). Matrix products are read in place for the gradients
// (ops.BmmWithTranspose), never transposed in memory; an operand whose batch axes repeat is
// materialized by a recorded BroadcastTo (rank up to ops.MaxRank), whose gradient sums over
// the repeated axes.
func (t *Tape) MatMul(a, b Var) Var {
	const op = "matmul"
	vs, ok := t.args(op, a, b)
	if !ok || !t.liveArgs(op, vs) {
		return Var{}
	}
	sa, sb := vs[0].shape, vs[1].shape
	if len(sa) == 0 || len(sb) == 0 || sa[len(sa)-1] != sb[max(len(sb)-2, 0)] {
		return t.failf(op, "shapes %v and %v do not multiply", sa, sb)
	}
	ra, rb := len(sa), len(sb)
	n := sa[ra-1]
	switch {
	case ra == 2 && rb == 2:
		return t.bmm(op, a, b, vs[0].buf, vs[1].buf, 1, sa[0], n, sb[1], false, false, []int{sa[0], sb[1]})
	case ra == 1 && rb == 1:
		return t.Reshape(t.MatMul(t.Reshape(a, 1, n), t.Reshape(b, n, 1)))
	case ra == 1:
		return t.Reshape(t.MatMul(t.Reshape(a, 1, n), b), append(slices.Clone(sb[:rb-2]), sb[rb-1])...)
	case rb == 1:
		return t.Reshape(t.MatMul(a, t.Reshape(b, n, 1)), sa[:ra-1]...)
	case rb == 2:
		rows := size(sa[:ra-1])
		return t.Reshape(t.MatMul(t.Reshape(a, rows, n), b), append(slices.Clone(sa[:ra-1]), sb[1])...)
	}
	batch, ok := broadcastShapes(sa[:max(ra-2, 0)], sb[:rb-2])
	if !ok {
		return t.failf(op, "shapes %v and %v do not multiply (batch axes do not broadcast)", sa, sb)
	}
	// stack returns x (..., rows, cols) broadcast to (batch..., rows, cols) and viewed as
	// (size(batch), rows, cols).
	stack := func(x Var, shape []int) Var {
		rows, cols := shape[len(shape)-2], shape[len(shape)-1]
		if want := append(slices.Clone(batch), rows, cols); !slices.Equal(shape, want) {
			x = t.broadcastFor(op, x, shape, want)
		}
		return t.Reshape(x, size(batch), rows, cols)
	}
	m, p := sa[ra-2], sb[rb-1]
	return t.Reshape(t.Bmm(stack(a, sa), stack(b, sb)), append(slices.Clone(batch), m, p)...)
}

// Bmm returns the batched product of a (batch, m, n) and b (batch, n, p): (batch, m, p).
func (t *Tape) Bmm(a, b Var) Var {
	const op = "bmm"
	vs, ok := t.args(op, a, b)
	if !ok {
		return Var{}
	}
	sa, sb := vs[0].shape, vs[1].shape
	if len(sa) != 3 || len(sb) != 3 || sa[0] != sb[0] || sa[2] != sb[1] {
		return t.failf(op, "shapes %v and %v do not multiply in batches", sa, sb)
	}
	return t.bmm(op, a, b, vs[0].buf, vs[1].buf, sa[0], sa[1], sa[2], sb[2], false, false, []int{sa[0], sa[1], sb[2]})
}

// BmmWithTranspose is Bmm with either operand read transposed in place (no copy): with transA, a
// is (batch, n, m) and the product uses each of its matrices transposed; with transB, b is
// (batch, p, n). The result is (batch, m, p). Attention's scores q·kᵀ are
// BmmWithTranspose(q, k, false, true) (PyTorch's q @ k.transpose(-2, -1)). The gradients have
// a's and b's shapes, as stored.
func (t *Tape) BmmWithTranspose(a, b Var, transA, transB bool) Var {
	const op = "bmm"
	vs, ok := t.args(op, a, b)
	if !ok {
		return Var{}
	}
	sa, sb := vs[0].shape, vs[1].shape
	if len(sa) != 3 || len(sb) != 3 || sa[0] != sb[0] {
		return t.failf(op, "shapes %v and %v do not multiply in batches", sa, sb)
	}
	m, n := sa[1], sa[2]
	if transA {
		m, n = n, m
	}
	nb, p := sb[1], sb[2]
	if transB {
		nb, p = p, nb
	}
	if n != nb {
		return t.failf(op, "shapes %v and %v (transposed: %v, %v) do not multiply in batches", sa, sb, transA, transB)
	}
	return t.bmm(op, a, b, vs[0].buf, vs[1].buf, sa[0], m, n, p, transA, transB, []int{sa[0], m, p})
}

// bmm records C = op(A)·op(B) for batch matrices op(A) (m, n) and op(B) (n, p), op the
// transpose where transA / transB say (ops.BmmWithTranspose). With G = dC, the gradients of the
// stored operands are: (n, n) dA = G·Bᵀ, dB = Aᵀ·G; (n, t) dA = G·B, dB = Gᵀ·A; (t, n) dA =
// B·Gᵀ, dB = A·G; (t, t) dA = Bᵀ·Gᵀ, dB = Gᵀ·Aᵀ: each one product read in place. shape is the
// result's (m, p) or (batch, m, p).
func (t *Tape) bmm(op string, a, b Var, ab, bb *ops.Buffer, batch, m, n, p int, transA, transB bool, shape []int) Var {
	y, err := ops.BmmWithTranspose(ab, bb, batch, m, n, p, transA, transB)
	// Each gradient as stored is one product, op(B)'s and op(A)'s flags carried through.
	da := func(g *ops.Buffer) (*ops.Buffer, error) {
		if transA { // dA = (G·op(B)ᵀ)ᵀ = op(B)·Gᵀ
			return ops.BmmWithTranspose(bb, g, batch, n, p, m, transB, true)
		}
		return ops.BmmWithTranspose(g, bb, batch, m, p, n, false, !transB) // G·op(B)ᵀ
	}
	db := func(g *ops.Buffer) (*ops.Buffer, error) {
		if transB { // dB = (op(A)ᵀ·G)ᵀ = Gᵀ·op(A)
			return ops.BmmWithTranspose(g, ab, batch, p, m, n, true, transA)
		}
		return ops.BmmWithTranspose(ab, g, batch, n, m, p, !transA, false) // op(A)ᵀ·G
	}
	return t.record(op, shape, y, err, nil, []Var{a, b}, func(g *ops.Buffer, need []bool) ([]*ops.Buffer, error) {
		return grads(need, func() (*ops.Buffer, error) { return da(g) }, func() (*ops.Buffer, error) { return db(g) })
	})
}

// Linear returns the affine map of x by the weight w (out, in) and the bias b (out): w·x + b for
// a vector x (in), and x·wᵀ + b, row by row, for a batch x (..., in) of any number of leading
// axes (PyTorch's nn.Linear), which give the result's leading axes: (..., out). The zero Var as
// b means no bias (nn.Linear(bias=False)).
func (t *Tape) Linear(x, w, b Var) Var {
	const op = "linear"
	hasBias := b != Var{}
	args := []Var{x, w}
	if hasBias {
		args = append(args, b)
	}
	vs, ok := t.args(op, args...)
	if !ok {
		return Var{}
	}
	vx, vw := vs[0], vs[1]
	sx, sw := vx.shape, vw.shape
	biasOK := !hasBias || len(vs[2].shape) == 1 && len(sw) == 2 && vs[2].shape[0] == sw[0]
	if len(sw) != 2 || !biasOK || len(sx) < 1 || sx[len(sx)-1] != sw[1] {
		bias := "none"
		if hasBias {
			bias = fmt.Sprint(vs[2].shape)
		}
		return t.failf(op, "input %v, weight %v and bias %s do not fit (want (in) or (..., in), (out, in), (out))",
			sx, sw, bias)
	}
	out, in := sw[0], sw[1]
	// product then bias: the steps of y from w (a vector x) or x (a batch), with rows rows.
	steps := func(product func(*ops.Buffer) (*ops.Buffer, error), rows int) []func(*ops.Buffer) (*ops.Buffer, error) {
		if !hasBias {
			return []func(*ops.Buffer) (*ops.Buffer, error){product}
		}
		return []func(*ops.Buffer) (*ops.Buffer, error){product, func(p *ops.Buffer) (*ops.Buffer, error) {
			if rows == 1 {
				return ops.Add(p, vs[2].buf)
			}
			bias, err := ops.BroadcastVecToRows(vs[2].buf, rows, out)
			if err != nil {
				return nil, err
			}
			defer bias.Release()
			return ops.Add(p, bias)
		}}
	}
	if len(sx) == 1 {
		y, err := then(vw.buf, steps(func(w *ops.Buffer) (*ops.Buffer, error) {
			return ops.Matmul(w, vx.buf, out, in, 1)
		}, 1)...)
		return t.record(op, []int{out}, y, err, nil, args, func(g *ops.Buffer, need []bool) ([]*ops.Buffer, error) {
			return grads(need, []func() (*ops.Buffer, error){
				func() (*ops.Buffer, error) { return ops.BmmWithTranspose(vw.buf, g, 1, in, out, 1, true, false) },
				func() (*ops.Buffer, error) { return ops.Matmul(g, vx.buf, out, 1, in) },
				func() (*ops.Buffer, error) { return ops.Copy(g) },
			}[:len(args)]...)
		})
	}
	batch := size(sx[:len(sx)-1])
	shape := append(slices.Clone(sx[:len(sx)-1]), out)
	y, err := then(vx.buf, steps(func(x *ops.Buffer) (*ops.Buffer, error) {
		return ops.BmmWithTranspose(x, vw.buf, 1, batch, in, out, false, true)
	}, batch)...)
	return t.record(op, shape, y, err, nil, args, func(g *ops.Buffer, need []bool) ([]*ops.Buffer, error) {
		return grads(need, []func() (*ops.Buffer, error){
			func() (*ops.Buffer, error) { return ops.Matmul(g, vw.buf, batch, out, in) },
			func() (*ops.Buffer, error) { return ops.BmmWithTranspose(g, vx.buf, 1, out, batch, in, true, false) },
			func() (*ops.Buffer, error) { return ops.ReduceSumByColumn(g, batch, out) },
		}[:len(args)]...)
	})
}
