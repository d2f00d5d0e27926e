package autograd

import (
	"slices"

	"github.com/torchlean-go/torchlean/ops"
)

// MatMul returns the product of the matrices a (m, n) and b (n, p). The gradients are products
// with transposed operands read in place (ops.BmmWithTranspose), never materialized.
func (t *Tape) MatMul(a, b Var) Var {
	const op = "matmul"
	vs, ok := t.args(op, a, b)
	if !ok {
		return Var{}
	}
	sa, sb := vs[0].shape, vs[1].shape
	if len(sa) != 2 || len(sb) != 2 || sa[1] != sb[0] {
		return t.failf(op, "shapes %v and %v do not multiply", sa, sb)
	}
	return t.bmm(op, a, b, vs[0].buf, vs[1].buf, 1, sa[0], sa[1], sb[1], []int{sa[0], sb[1]})
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
	return t.bmm(op, a, b, vs[0].buf, vs[1].buf, sa[0], sa[1], sa[2], sb[2], []int{sa[0], sa[1], sb[2]})
}

// bmm records C = A·B for batch matrices A (m, n) and B (n, p): dA = dC·Bᵀ, dB = Aᵀ·dC.
func (t *Tape) bmm(op string, a, b Var, ab, bb *ops.Buffer, batch, m, n, p int, shape []int) Var {
	y, err := ops.Bmm(ab, bb, batch, m, n, p)
	return t.record(op, shape, y, err, nil, []Var{a, b}, func(g *ops.Buffer, need []bool) ([]*ops.Buffer, error) {
		return grads(need,
			func() (*ops.Buffer, error) { return ops.BmmWithTranspose(g, bb, batch, m, p, n, false, true) },
			func() (*ops.Buffer, error) { return ops.BmmWithTranspose(ab, g, batch, n, m, p, true, false) })
	})
}

// Linear returns the affine map of x by the weight w (out, in) and the bias b (out): w·x + b for
// a vector x (in), and x·wᵀ + b, row by row, for a batch x (..., in) of any number of leading
// axes (PyTorch's nn.Linear), which give the result's leading axes: (..., out).
func (t *Tape) Linear(x, w, b Var) Var {
	const op = "linear"
	vs, ok := t.args(op, x, w, b)
	if !ok {
		return Var{}
	}
	vx, vw, vb := vs[0], vs[1], vs[2]
	sx, sw := vx.shape, vw.shape
	if len(sw) != 2 || len(vb.shape) != 1 || vb.shape[0] != sw[0] ||
		len(sx) < 1 || sx[len(sx)-1] != sw[1] {
		return t.failf(op, "input %v, weight %v and bias %v do not fit (want (in) or (..., in), (out, in), (out))",
			sx, sw, vb.shape)
	}
	out, in := sw[0], sw[1]
	if len(sx) == 1 {
		y, err := then(vw.buf,
			func(w *ops.Buffer) (*ops.Buffer, error) { return ops.Matmul(w, vx.buf, out, in, 1) },
			func(wx *ops.Buffer) (*ops.Buffer, error) { return ops.Add(wx, vb.buf) })
		return t.record(op, []int{out}, y, err, nil, []Var{x, w, b}, func(g *ops.Buffer, need []bool) ([]*ops.Buffer, error) {
			return grads(need,
				func() (*ops.Buffer, error) { return ops.BmmWithTranspose(vw.buf, g, 1, in, out, 1, true, false) },
				func() (*ops.Buffer, error) { return ops.Matmul(g, vx.buf, out, 1, in) },
				func() (*ops.Buffer, error) { return ops.Copy(g) })
		})
	}
	batch := size(sx[:len(sx)-1])
	shape := append(slices.Clone(sx[:len(sx)-1]), out)
	bias, err := ops.BroadcastVecToRows(vb.buf, batch, out)
	var y *ops.Buffer
	if err == nil {
		y, err = then(vx.buf,
			func(x *ops.Buffer) (*ops.Buffer, error) {
				return ops.BmmWithTranspose(x, vw.buf, 1, batch, in, out, false, true)
			},
			func(xw *ops.Buffer) (*ops.Buffer, error) { return ops.Add(xw, bias) })
		bias.Release()
	}
	return t.record(op, shape, y, err, nil, []Var{x, w, b}, func(g *ops.Buffer, need []bool) ([]*ops.Buffer, error) {
		return grads(need,
			func() (*ops.Buffer, error) { return ops.Matmul(g, vw.buf, batch, out, in) },
			func() (*ops.Buffer, error) { return ops.BmmWithTranspose(g, vx.buf, 1, out, batch, in, true, false) },
			func() (*ops.Buffer, error) { return ops.ReduceSumByColumn(g, batch, out) })
	})
}
