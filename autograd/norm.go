package autograd

import (
	"github.com/torchlean-go/torchlean/ops"
)

// LayerNorm normalizes x along its last axis (cols; the leading axes are folded into rows) and
// applies the per-column gamma and beta (cols each): (x - mean)/sqrt(var + ops.LayerNormEps) *
// gamma + beta with the biased variance. The per-row mean and sd are retained for the backward
// pass, which gives the gradients of x, gamma and beta. The epsilon is the seeds' 1e-6
// (PyTorch's nn.LayerNorm defaults to 1e-5: see LayerNormEps).
func (t *Tape) LayerNorm(x, gamma, beta Var) Var {
	return t.LayerNormEps(x, gamma, beta, ops.LayerNormEps)
}

// LayerNormEps is LayerNorm with the epsilon eps (finite as a float32 and >= 0), e.g. 1e-5 for
// a model ported from PyTorch's nn.LayerNorm defaults.
func (t *Tape) LayerNormEps(x, gamma, beta Var, eps float64) Var {
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
	y, mean, sd, err := ops.LayerNormFwd(vx.buf, vg.buf, vb.buf, r, c, eps)
	return t.record(op, vx.shape, y, err, []releaser{mean, sd}, []Var{x, gamma, beta}, func(g *ops.Buffer, need []bool) ([]*ops.Buffer, error) {
		dx, dg, db, err := ops.LayerNormBwd(g, vx.buf, mean, sd, vg.buf, r, c)
		return []*ops.Buffer{dx, dg, db}, err
	})
}
