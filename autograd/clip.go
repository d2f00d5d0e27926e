package autograd

import (
	"fmt"
	"math"

	"github.com/torchlean-go/torchlean/ops"
)

// ClipGradNorm scales the accumulated gradients of params so that their total 2-norm is at
// most maxNorm, and returns the total norm before clipping: PyTorch's
// torch.nn.utils.clip_grad_norm_(params, maxNorm). Parameters without a gradient are skipped.
//
// Each gradient's squared norm is ops.Sum of its squares (ops.Mul), the same bits on every
// device; they are added up in float64 on the host (one download per gradient), total =
// sqrt(sum). With c = maxNorm / (total + 1e-6), every gradient g becomes ops.Scale(g, c) unless
// c >= 1; a non-finite total (an Inf or NaN in a gradient) gives c = 0 or NaN, and the
// gradients are scaled by it, as in PyTorch. A maxNorm that is not positive and finite is an
// error that changes nothing; a device error is recorded in the parameters' session.
func ClipGradNorm(params []*Param, maxNorm float64) (float64, error) {
	if !(maxNorm > 0) || math.IsInf(maxNorm, 1) {
		return 0, fmt.Errorf("autograd: clip grad norm: max norm %v, want a positive finite number", maxNorm)
	}
	grads, err := clipGrads("clip grad norm", params)
	if err != nil {
		return 0, err
	}
	total := 0.0
	for _, p := range grads {
		sq, err := ops.Mul(p.grad, p.grad)
		if err != nil {
			return 0, p.s.fail(fmt.Errorf("autograd: clip grad norm: %s: %w", p.name, err))
		}
		sum, err := ops.Sum(sq)
		sq.Release()
		var v []float64
		if err == nil {
			v, err = sum.Float64s()
			sum.Release()
		}
		if err != nil {
			return 0, p.s.fail(fmt.Errorf("autograd: clip grad norm: %s: %w", p.name, err))
		}
		total += v[0]
	}
	total = math.Sqrt(total)
	if c := maxNorm / (total + 1e-6); !(c >= 1) {
		for _, p := range grads {
			if err := p.mapGrad(func(g *ops.Buffer) (*ops.Buffer, error) { return ops.Scale(g, c) }); err != nil {
				return total, p.s.fail(fmt.Errorf("autograd: clip grad norm: %s: %w", p.name, err))
			}
		}
	}
	return total, nil
}

// ClipGradNormDevice is ClipGradNorm computed on the device, with no download and no host
// branch, so that a captured step may clip (ClipGradNorm reads the norm back, which a capture
// refuses). Its arithmetic is a deliberate float32 definition composed of existing exact
// kernels, the same bits on every device, but not ClipGradNorm's (which adds in float64 on the
// host): over the parameters with a gradient, in the order of params,
//
//	sq_p   = ops.Sum(ops.Mul(g_p, g_p))                  // float32, one element
//	total  = ((sq_0 + sq_1) + sq_2) + ...                // ops.Add, in parameter order
//	norm   = sqrt(total)                                  // ops.Sqrt
//	coef   = min(1, float32(maxNorm) / (norm + float32(1e-6)))  // ops.Add, ops.Div, ops.Clamp(·, 0, 1)
//	g_p    = g_p * coef                                   // ops.Mul with coef broadcast (ops.BroadcastVecToRows)
//
// Every gradient is scaled, by exactly 1 when the norm is within maxNorm (which leaves its bits
// unchanged). A NaN norm gives a NaN coefficient and an infinite one a zero coefficient, as in
// ClipGradNorm. It returns norm, a one-element buffer on the session's device (the caller's to
// release; read it after the step), or nil when no parameter has a gradient. A maxNorm that is
// not positive and finite as a float32 is an error that changes nothing; a device error is
// recorded in the parameters' session.
func ClipGradNormDevice(params []*Param, maxNorm float64) (*ops.Buffer, error) {
	if m := float32(maxNorm); !(m > 0) || math.IsInf(float64(m), 1) {
		return nil, fmt.Errorf("autograd: clip grad norm (device): max norm %v, want a positive number finite as a float32", maxNorm)
	}
	grads, err := clipGrads("clip grad norm (device)", params)
	if err != nil || len(grads) == 0 {
		return nil, err
	}
	s := grads[0].s
	fail := func(p *Param, err error) (*ops.Buffer, error) {
		return nil, s.fail(fmt.Errorf("autograd: clip grad norm (device): %s: %w", p.name, err))
	}
	var total *ops.Buffer
	for _, p := range grads {
		sq, err := then(p.grad, func(g *ops.Buffer) (*ops.Buffer, error) { return ops.Mul(g, g) }, ops.Sum)
		if err == nil && total != nil {
			sum := total
			total, err = ops.Add(sum, sq)
			sum.Release()
			sq.Release()
		} else if err == nil {
			total = sq
		}
		if err != nil {
			total.Release()
			return fail(p, err)
		}
	}
	d := total.Device()
	norm, err := ops.Sqrt(total)
	total.Release()
	if err != nil {
		return fail(grads[0], err)
	}
	coef, err := clipCoef(d, norm, maxNorm)
	if err != nil {
		norm.Release()
		return fail(grads[0], err)
	}
	defer coef.Release()
	for _, p := range grads {
		if err := p.mapGrad(func(g *ops.Buffer) (*ops.Buffer, error) {
			return then(coef,
				func(c *ops.Buffer) (*ops.Buffer, error) { return ops.BroadcastVecToRows(c, g.Len(), 1) },
				func(c *ops.Buffer) (*ops.Buffer, error) { return ops.Mul(g, c) })
		}); err != nil {
			norm.Release()
			return fail(p, err)
		}
	}
	return norm, nil
}

// clipCoef returns ClipGradNormDevice's coefficient min(1, float32(maxNorm)/(norm +
// float32(1e-6))), one element on d.
func clipCoef(d *ops.Device, norm *ops.Buffer, maxNorm float64) (*ops.Buffer, error) {
	eps, err := ops.Full(d, 1, 1e-6)
	if err != nil {
		return nil, err
	}
	defer eps.Release()
	m, err := ops.Full(d, 1, maxNorm)
	if err != nil {
		return nil, err
	}
	defer m.Release()
	return then(norm,
		func(n *ops.Buffer) (*ops.Buffer, error) { return ops.Add(n, eps) },
		func(den *ops.Buffer) (*ops.Buffer, error) { return ops.Div(m, den) },
		func(c *ops.Buffer) (*ops.Buffer, error) { return ops.Clamp(c, 0, 1) })
}

// ClipGradValue clamps every element of the accumulated gradients of params to [-clip, clip]
// (ops.Clamp; a NaN stays NaN): PyTorch's torch.nn.utils.clip_grad_value_(params, clip).
// Parameters without a gradient are skipped. A clip that is not positive and finite is an error
// that changes nothing; a device error is recorded in the parameters' session.
func ClipGradValue(params []*Param, clip float64) error {
	if !(clip > 0) || math.IsInf(clip, 1) {
		return fmt.Errorf("autograd: clip grad value: clip %v, want a positive finite number", clip)
	}
	grads, err := clipGrads("clip grad value", params)
	if err != nil {
		return err
	}
	for _, p := range grads {
		if err := p.mapGrad(func(g *ops.Buffer) (*ops.Buffer, error) { return ops.Clamp(g, -clip, clip) }); err != nil {
			return p.s.fail(fmt.Errorf("autograd: clip grad value: %s: %w", p.name, err))
		}
	}
	return nil
}

// clipGrads returns the parameters of params that have a gradient, after checking that none
// is nil and that their sessions hold no error.
func clipGrads(op string, params []*Param) ([]*Param, error) {
	var grads []*Param
	for k, p := range params {
		switch {
		case p == nil || p.s == nil:
			return nil, fmt.Errorf("autograd: %s: parameter %d is nil", op, k)
		case p.s.Err() != nil:
			return nil, p.s.Err()
		case p.grad != nil:
			grads = append(grads, p)
		}
	}
	return grads, nil
}

// mapGrad replaces the accumulated gradient g (not nil) with f(g).
func (p *Param) mapGrad(f func(g *ops.Buffer) (*ops.Buffer, error)) error {
	g, err := f(p.grad)
	if err != nil {
		return err
	}
	p.grad.Release()
	p.grad = g
	return nil
}
