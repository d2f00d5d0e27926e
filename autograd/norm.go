package autograd

import (
	"github.com/torchlean-go/torchlean/ops"
)

// LayerNorm normalizes x along its last axis (cols; the leading axes are folded into rows) and
// applies the per-column gamma and beta (cols each): (x - mean)/sqrt(var + ops.LayerNormEps) *
// gamma + beta with the biased variance. The per-row mean and sd are retained for the backward
// pass, which gives the gradients of x, gamma and beta.
func (t *Tape) LayerNorm(x, gamma, beta Var) Var {
	const op = "layer_norm"
	vs, ok := t.args(op, x, gamma, beta)
	if !ok {
		return Var{}
	}
	vx, vg, vb := vs[0], vs[1], vs[2]
	r, c := lastAxis(vx.shape)
	if len(vx.shape) == 0 || c == 0 || len(vg.shape) != 1 || vg.shape[0] != c || len(vb.shape) != 1 || vb.shape[0] != c {
		return t.failf(op, "input %v, gamma %v and beta %v do not fit (want (..., cols), (cols), (cols) with cols > 0)",
			vx.shape, vg.shape, vb.shape)
	}
	y, mean, sd, err := ops.LayerNormFwd(vx.buf, vg.buf, vb.buf, r, c, ops.LayerNormEps)
	return t.record(op, vx.shape, y, err, []releaser{mean, sd}, []Var{x, gamma, beta}, func(g *ops.Buffer, need []bool) ([]*ops.Buffer, error) {
		dx, dg, db, err := ops.LayerNormBwd(g, vx.buf, mean, sd, vg.buf, r, c)
		return []*ops.Buffer{dx, dg, db}, err
	})
}
