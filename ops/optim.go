package ops

import (
	"fmt"
	"math"

	"github.com/torchlean-go/torchlean/cpu"
	"github.com/torchlean-go/torchlean/ptx"
)

// The optimizer family (ptx/optim.cu, cpu/optim.go): fused steps, one launch per parameter
// tensor. Unlike every other kernel of this package, which returns fresh buffers, these UPDATE
// THEIR DESTINATIONS IN PLACE: the parameter and the optimizer state (momentum buffer, moments).
// The gradient is borrowed and left unchanged. The per-step scalars are computed here, on the
// host, in float64, and rounded to float32 once; the kernels then round every operation
// separately, so a step gives the same bits on the CPU and on a GPU.
var (
	sgdOp = &kernelOp{name: "sgd_step", kernel: ptx.SGDStep, outs: 1, ins: 1,
		geometry: strided(size(0)), cpuUnits: size(0),
		cpu: func(h *hostArgs, lo, hi int) { cpu.SGDStep(h.b[0][lo:hi], h.b[1][lo:hi], h.f[0], h.f[1]) }}
	sgdMomentumOp = &kernelOp{name: "sgd_momentum_step", kernel: ptx.SGDMomentumStep, outs: 2, ins: 1,
		geometry: strided(size(0)), cpuUnits: size(0),
		cpu: func(h *hostArgs, lo, hi int) {
			cpu.SGDMomentumStep(h.b[0][lo:hi], h.b[1][lo:hi], h.b[2][lo:hi], uint64(h.s[1]), h.f[0], h.f[1], h.f[2], h.f[3])
		}}
	adamOp = &kernelOp{name: "adam_step", kernel: ptx.AdamStep, outs: 3, ins: 1,
		geometry: strided(size(0)), cpuUnits: size(0),
		cpu: func(h *hostArgs, lo, hi int) {
			f := h.f
			cpu.AdamStep(h.b[0][lo:hi], h.b[1][lo:hi], h.b[2][lo:hi], h.b[3][lo:hi], f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7], f[8])
		}}
)

// SGDParams are the hyperparameters of SGD with PyTorch's names and semantics
// (torch.optim.SGD, maximize=False). The zero value is plain SGD with learning rate 0.
type SGDParams struct {
	LR          float64 // learning rate, finite and >= 0
	Momentum    float64 // momentum factor, finite and >= 0; 0 is plain SGD (no momentum buffer)
	Dampening   float64 // dampening of the momentum, finite
	WeightDecay float64 // L2 penalty added to the gradient as WeightDecay*param, finite and >= 0
	Nesterov    bool    // Nesterov momentum: needs Momentum > 0 and Dampening == 0
}

// Check returns an error when a hyperparameter is out of its range.
func (p SGDParams) Check() error {
	switch {
	case !nonNegative(p.LR):
		return fmt.Errorf("ops: sgd: learning rate %v is not a finite float32 >= 0", p.LR)
	case !nonNegative(p.Momentum):
		return fmt.Errorf("ops: sgd: momentum %v is not a finite float32 >= 0", p.Momentum)
	case !finite(p.Dampening):
		return fmt.Errorf("ops: sgd: dampening %v is not a finite float32", p.Dampening)
	case !nonNegative(p.WeightDecay):
		return fmt.Errorf("ops: sgd: weight decay %v is not a finite float32 >= 0", p.WeightDecay)
	case p.Nesterov && (p.Momentum <= 0 || p.Dampening != 0):
		return fmt.Errorf("ops: sgd: Nesterov momentum needs a momentum > 0 and zero dampening (momentum %v, dampening %v)",
			p.Momentum, p.Dampening)
	}
	return nil
}

// SGDStep runs one SGD step on param in place, with PyTorch's semantics:
//
//	d = grad + WeightDecay*param                 (the term only when WeightDecay != 0)
//	buf = d                                      (Momentum != 0, first step: PyTorch's None buffer)
//	buf = Momentum*buf + (1 - Dampening)*d       (Momentum != 0, later steps)
//	d = d + Momentum*buf (Nesterov), d = buf (otherwise)   (Momentum != 0)
//	param = param - LR*d
//
// param and, when Momentum != 0, buf (the momentum buffer, whose contents first ignores) are
// updated in place; grad is borrowed. When Momentum == 0, buf is not used and may be nil. The
// scalars LR, WeightDecay, Momentum and 1 - Dampening are rounded to float32 once (the
// difference in float64), then every operation is one float32 operation: see cpu.SGDStep and
// cpu.SGDMomentumStep for the exact order. All buffers must be distinct, live, on one device and
// of one length.
func SGDStep(param, grad, buf *Buffer, p SGDParams, first bool) error {
	const op = "sgd_step"
	if err := p.Check(); err != nil {
		return err
	}
	bufs := []*Buffer{param, grad}
	if p.Momentum != 0 {
		bufs = append(bufs, buf)
	}
	if err := checkStepOperands(op, bufs); err != nil {
		return err
	}
	n := param.Len()
	if n == 0 {
		return nil
	}
	lr, wd := float32(p.LR), float32(p.WeightDecay)
	if p.Momentum == 0 {
		return sgdOp.launch([]*Buffer{param}, []*Buffer{grad}, nil, []int{n}, lr, wd)
	}
	var flags int
	if first {
		flags |= cpu.SGDFirst
	}
	if p.Nesterov {
		flags |= cpu.SGDNesterov
	}
	return sgdMomentumOp.launch([]*Buffer{param, buf}, []*Buffer{grad}, nil, []int{n, flags},
		lr, wd, float32(p.Momentum), float32(1-p.Dampening))
}

// AdamParams are the hyperparameters of Adam and AdamW with PyTorch's names and semantics
// (torch.optim.Adam and AdamW with amsgrad=False, maximize=False). PyTorch's defaults are
// LR 1e-3, betas (0.9, 0.999), Eps 1e-8, and WeightDecay 0 for Adam, 1e-2 for AdamW.
type AdamParams struct {
	LR           float64 // learning rate, finite and >= 0
	Beta1, Beta2 float64 // decay rates of the first and second moments, in [0, 1)
	Eps          float64 // added to the denominator, finite and > 0
	WeightDecay  float64 // finite and >= 0; its meaning depends on Decoupled
	// Decoupled selects AdamW: the parameter is multiplied by 1 - LR*WeightDecay before the
	// update. Otherwise (Adam) WeightDecay*param is added to the gradient (an L2 penalty).
	Decoupled bool
}

// Check returns an error when a hyperparameter is out of its range.
func (p AdamParams) Check() error {
	switch {
	case !nonNegative(p.LR):
		return fmt.Errorf("ops: adam: learning rate %v is not a finite float32 >= 0", p.LR)
	case !(p.Beta1 >= 0 && p.Beta1 < 1) || !(p.Beta2 >= 0 && p.Beta2 < 1):
		return fmt.Errorf("ops: adam: betas (%v, %v) are not in [0, 1)", p.Beta1, p.Beta2)
	case !nonNegative(p.Eps) || float32(p.Eps) == 0:
		return fmt.Errorf("ops: adam: eps %v is not a finite float32 > 0", p.Eps)
	case !nonNegative(p.WeightDecay):
		return fmt.Errorf("ops: adam: weight decay %v is not a finite float32 >= 0", p.WeightDecay)
	}
	return nil
}

// AdamStep runs step number step (1 for the first update of this parameter: PyTorch's
// state["step"] after its increment) of Adam or AdamW on param, m (the first moment, exp_avg)
// and v (the second moment, exp_avg_sq), all three UPDATED IN PLACE; grad is borrowed. m and v
// start as zeros. PyTorch's formulas:
//
//	g = grad + WeightDecay*param                       (Adam, only when WeightDecay != 0)
//	param = param * (1 - LR*WeightDecay)               (AdamW)
//	m = Beta1*m + (1 - Beta1)*g
//	v = Beta2*v + (1 - Beta2)*g*g
//	param = param - stepSize * m / (sqrt(v)/bc2Sqrt + Eps)
//
// The scalars are computed in float64 and rounded to float32 once each:
//
//	beta1, omb1 = float32(Beta1), float32(1 - Beta1)
//	beta2, omb2 = float32(Beta2), float32(1 - Beta2)
//	stepSize    = float32(LR / (1 - Beta1^step))
//	bc2Sqrt     = float32(math.Sqrt(1 - Beta2^step))
//	eps         = float32(Eps)
//	wd, decay   = float32(WeightDecay), 1                      (Adam)
//	wd, decay   = 0, float32(1 - float64(LR*WeightDecay))      (AdamW)
//
// with Beta^step by binary exponentiation (float64 multiplications only, so that every platform
// computes the same scalars). cpu.AdamStep states the float32 arithmetic per element. All
// buffers must be distinct, live, on one device and of one length.
func AdamStep(param, grad, m, v *Buffer, p AdamParams, step int) error {
	const op = "adam_step"
	if err := p.Check(); err != nil {
		return err
	}
	if step < 1 {
		return fmt.Errorf("ops: %s: step %d, want >= 1", op, step)
	}
	if err := checkStepOperands(op, []*Buffer{param, grad, m, v}); err != nil {
		return err
	}
	n := param.Len()
	if n == 0 {
		return nil
	}
	s := p.scalars(step)
	return adamOp.launch([]*Buffer{param, m, v}, []*Buffer{grad}, nil, []int{n}, s[:]...)
}

// scalars returns the float32 scalars of adam_step for step (see AdamStep).
func (p AdamParams) scalars(step int) [9]float32 {
	wd, decay := float32(p.WeightDecay), float32(1)
	if p.Decoupled {
		wd, decay = 0, float32(1-float64(p.LR*p.WeightDecay))
	}
	return [9]float32{
		float32(p.Beta1), float32(1 - p.Beta1),
		float32(p.Beta2), float32(1 - p.Beta2),
		float32(p.LR / (1 - powInt(p.Beta1, step))),
		float32(math.Sqrt(1 - powInt(p.Beta2, step))),
		float32(p.Eps), wd, decay,
	}
}

// powInt returns b^t for t >= 0 by binary exponentiation.
func powInt(b float64, t int) float64 {
	r := 1.0
	for ; t > 0; t >>= 1 {
		if t&1 == 1 {
			r *= b
		}
		b *= b
	}
	return r
}

// finite reports whether x is finite as a float32 (the kernels' scalars are float32s: 1e300
// would be +Inf there); nonNegative, whether it is also >= 0.
func finite(x float64) bool {
	f := float64(float32(x))
	return !math.IsInf(f, 0) && !math.IsNaN(f)
}
func nonNegative(x float64) bool { return finite(x) && x >= 0 }

// checkStepOperands checks that the operands of an optimizer step are live, distinct, on one
// device and of one length (the first's).
func checkStepOperands(op string, bufs []*Buffer) error {
	if err := sameDevice(op, bufs); err != nil {
		return err
	}
	for k, b := range bufs {
		if b.n != bufs[0].n {
			return fmt.Errorf("ops: %s: operand %d has %d elements, the parameter %d", op, k, b.n, bufs[0].n)
		}
		for _, c := range bufs[:k] {
			if b == c {
				return fmt.Errorf("ops: %s: operand %d is also an earlier operand (the buffers must be distinct)", op, k)
			}
		}
	}
	return nil
}
