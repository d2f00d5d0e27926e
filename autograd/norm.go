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

// BatchNormChannelFirst is the seeds' batch norm of one channel-first sample x of shape (C, ...)
// (an image (C, H, W); no batch axis, no running statistics, no train/eval switch): each channel
// is normalized over its other axes, as LayerNorm normalizes a row of the (C, H*W) view (the
// biased variance, epsilon ops.LayerNormEps = 1e-6), then scaled and shifted by its entries of
// gamma and beta (C each): y = x̂ * gamma[c] + beta[c], two roundings. The backward pass is layer
// norm's for x, with dgamma[c] = Σ dy * x̂ and dbeta[c] = Σ dy over the channel (row sums).
//
// It is not PyTorch's nn.BatchNorm2d, which normalizes each channel over the batch as well and
// keeps running statistics. That module's training-mode output for a batch (N, C, H, W) is
// Permute(BatchNormChannelFirstEps(Permute(x, 1, 0, 2, 3), gamma, beta, 1e-5), 1, 0, 2, 3) (one
// copy each way); the running statistics are then the caller's.
func (t *Tape) BatchNormChannelFirst(x, gamma, beta Var) Var {
	return t.BatchNormChannelFirstEps(x, gamma, beta, ops.LayerNormEps)
}

// BatchNormChannelFirstEps is BatchNormChannelFirst with the epsilon eps (finite as a float32 and
// >= 0), e.g. PyTorch's default 1e-5.
func (t *Tape) BatchNormChannelFirstEps(x, gamma, beta Var, eps float64) Var {
	const op = "batchnorm_channel_first"
	vs, ok := t.args(op, x, gamma, beta)
	if !ok {
		return Var{}
	}
	vx, vg, vb := vs[0], vs[1], vs[2]
	if len(vx.shape) < 2 || vx.shape[0] == 0 || vx.len() == 0 || len(vg.shape) != 1 || vg.shape[0] != vx.shape[0] ||
		len(vb.shape) != 1 || vb.shape[0] != vx.shape[0] {
		return t.failf(op, "input %v, gamma %v and beta %v do not fit (want (C, ...) with no empty axis, (C), (C))",
			vx.shape, vg.shape, vb.shape)
	}
	c := vx.shape[0]
	hw := vx.len() / c
	var norm, mean, sd, ones, gb, y *ops.Buffer
	fwd := func() error {
		var zeros *ops.Buffer
		var err error
		if ones, err = ops.Full(t.dev, hw, 1); err != nil {
			return err
		}
		if zeros, err = ops.Zeros(t.dev, hw); err != nil {
			return err
		}
		// x̂ = x̂ * 1 + 0 (the only change: -0 becomes +0).
		norm, mean, sd, err = ops.LayerNormFwd(vx.buf, ones, zeros, c, hw, eps)
		zeros.Release()
		if err != nil {
			return err
		}
		if gb, err = ops.BroadcastVecToCols(vg.buf, c, hw); err != nil {
			return err
		}
		bb, err := ops.BroadcastVecToCols(vb.buf, c, hw)
		if err != nil {
			return err
		}
		scaled, err := ops.Mul(norm, gb)
		if err == nil {
			y, err = ops.Add(scaled, bb)
		}
		ops.ReleaseThen(nil, scaled, bb)
		return err
	}
	err := fwd()
	work := []releaser{norm, mean, sd, ones, gb}
	return t.record(op, vx.shape, y, err, work, []Var{x, gamma, beta}, func(g *ops.Buffer, need []bool) ([]*ops.Buffer, error) {
		return grads(need,
			func() (*ops.Buffer, error) {
				dn, err := ops.Mul(g, gb)
				if err != nil {
					return nil, err
				}
				dx, dg, db, err := ops.LayerNormBwd(dn, vx.buf, mean, sd, ones, c, hw)
				ops.ReleaseThen(nil, dn, dg, db)
				return dx, err
			},
			func() (*ops.Buffer, error) {
				gn, err := ops.Mul(g, norm)
				if err != nil {
					return nil, err
				}
				defer gn.Release()
				return ops.ReduceSumByRow(gn, c, hw)
			},
			func() (*ops.Buffer, error) { return ops.ReduceSumByRow(g, c, hw) })
	})
}
