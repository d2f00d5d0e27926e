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
