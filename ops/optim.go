package ops

import (
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/torchlean-go/torchlean/cpu"
	"github.com/torchlean-go/torchlean/ptx"
)

// The optimizer family (ptx/optim.cu, cpu/optim.go): fused steps, one launch per parameter
// tensor. Unlike every other kernel of this package, which returns fresh buffers, these UPDATE
// THEIR DESTINATIONS IN PLACE: the parameter and the optimizer state (momentum buffer, moments).
// The gradient is borrowed and left unchanged. The kernels read their float32 scalars from device
// memory (SGD's hyperparameters, rounded to float32 once on the host; Adam's computed on the device
// by adam_scalars from float64 hyperparameters and the step counts it advances), so that a step
// captured into a CUDA graph replays with the current learning rate and step number; both devices
// give the same bits.
var (
	sgdOp = row(&kernelOp{name: "sgd_step", kernel: ptx.SGDStep, outs: 1, ins: 2,
		grid: strided(size(0)), units: size(0),
		cpu: func(h *hostArgs, lo, hi int) { sc := h.b[2]; cpu.SGDStep(h.b[0][lo:hi], h.b[1][lo:hi], sc[0], sc[1]) }})
	sgdMomentumOp = row(&kernelOp{name: "sgd_momentum_step", kernel: ptx.SGDMomentumStep, outs: 2, ins: 2,
		grid: strided(size(0)), units: size(0),
		cpu: func(h *hostArgs, lo, hi int) {
			sc := h.b[3]
			cpu.SGDMomentumStep(h.b[0][lo:hi], h.b[1][lo:hi], h.b[2][lo:hi], uint64(h.s[1]), sc[0], sc[1], sc[2], sc[3])
		}})
	adamOp = row(&kernelOp{name: "adam_step", kernel: ptx.AdamStep, outs: 3, ins: 2,
		grid: strided(size(0)), units: size(0),
		cpu: func(h *hostArgs, lo, hi int) {
			f := h.b[4]
			cpu.AdamStep(h.b[0][lo:hi], h.b[1][lo:hi], h.b[2][lo:hi], h.b[3][lo:hi], f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7], f[8])
		}})
	// rmspropOp: outs (param, square_avg, grad_avg, momentum buffer), ins (grad, scalars); sizes
	// (n, flags). An output its flags leave out is a stand-in the twin never touches.
	rmspropOp = row(&kernelOp{name: "rmsprop_step", kernel: ptx.RMSpropStep, outs: 4, ins: 2,
		grid: strided(size(0)), units: size(0),
		cpu: func(h *hostArgs, lo, hi int) {
			flags, sc := uint64(h.s[1]), h.b[5]
			var ga, buf []float32
			if flags&cpu.RMSpropCentered != 0 {
				ga = h.b[2][lo:hi]
			}
			if flags&cpu.RMSpropMomentum != 0 {
				buf = h.b[3][lo:hi]
			}
			cpu.RMSpropStep(h.b[0][lo:hi], h.b[1][lo:hi], ga, buf, h.b[4][lo:hi], flags, sc[0], sc[1], sc[2], sc[3], sc[4], sc[5])
		}})
	// adamScalarsOp: outs (scalars, steps), ins (hyper), index list; sizes (k).
	adamScalarsOp = row(&kernelOp{name: "adam_scalars", kernel: ptx.AdamScalars, outs: 2, ins: 1, idx: 1,
		grid: strided(size(0)), units: size(0),
		cpu: func(h *hostArgs, lo, hi int) { cpu.AdamScalars(h.b[0], h.b[1], h.b[2], h.idx[0], lo, hi) }})
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
// of one length. SGDStep makes the scalars' device buffer for the one call; an optimizer keeps an
// SGD instead.
func SGDStep(param, grad, buf *Buffer, p SGDParams, first bool) error {
	if err := param.liveIn("sgd_step"); err != nil {
		return err
	}
	o, err := NewSGD(param.dev)
	if err != nil {
		return err
	}
	defer o.Release()
	return o.Step(param, grad, buf, p, first)
}

// SGD is the device state of SGD steps: the four float32 scalars the kernels read (LR,
// WeightDecay, Momentum, 1 - Dampening), uploaded when the hyperparameters change, so that steps
// queued or captured before a change of the learning rate read the rate of their turn only if
// they run after it (the upload is ordered with the device's work). Safe for concurrent use.
type SGD struct {
	mu   sync.Mutex
	sc   *Buffer
	last uploaded[SGDParams]
}

// NewSGD returns the SGD state on d.
func NewSGD(d *Device) (*SGD, error) {
	sc, err := newBuffer(d, 4)
	if err != nil {
		return nil, opErr("sgd_step", err)
	}
	return &SGD{sc: sc}, nil
}

// Release frees the state.
func (o *SGD) Release() { o.sc.Release() }

// Step is SGDStep with o's scalars (set from p).
func (o *SGD) Step(param, grad, buf *Buffer, p SGDParams, first bool) error {
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
	if err := onDevice(op, o.sc, param.dev); err != nil {
		return err
	}
	n := param.Len()
	if n == 0 {
		return nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := o.setParams(p); err != nil {
		return err
	}
	if p.Momentum == 0 {
		return sgdOp.launch([]*Buffer{param}, []*Buffer{grad, o.sc}, nil, []int{n})
	}
	var flags int
	if first {
		flags |= cpu.SGDFirst
	}
	if p.Nesterov {
		flags |= cpu.SGDNesterov
	}
	return sgdMomentumOp.launch([]*Buffer{param, buf}, []*Buffer{grad, o.sc}, nil, []int{n, flags})
}

// SetParams uploads the scalars of p when they differ from the last ones uploaded (ordered with
// the device's work, like the upload of a Step): a graph that captured Steps of o, replayed
// after it, reads them. Not inside a capture. Momentum and Nesterov choose the kernel a Step
// launches, so a captured step keeps those of its capture.
func (o *SGD) SetParams(p SGDParams) error {
	if err := p.Check(); err != nil {
		return err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.setParams(p)
}

// setParams is SetParams with o.mu held and p checked.
func (o *SGD) setParams(p SGDParams) error {
	return o.last.update("sgd_step", o.sc, p, func(p SGDParams) []float32 {
		return []float32{float32(p.LR), float32(p.WeightDecay), float32(p.Momentum), float32(1 - p.Dampening)}
	})
}

// RMSpropParams are the hyperparameters of RMSprop with PyTorch's names and semantics
// (torch.optim.RMSprop, maximize=False). PyTorch's defaults are LR 1e-2, Alpha 0.99, Eps 1e-8,
// no weight decay, no momentum, not centered.
type RMSpropParams struct {
	LR          float64 // learning rate, finite and >= 0
	Alpha       float64 // smoothing constant of the running averages, finite and >= 0
	Eps         float64 // added to the denominator, finite and >= 0
	WeightDecay float64 // L2 penalty added to the gradient as WeightDecay*param, finite and >= 0
	Momentum    float64 // momentum factor, finite and >= 0; 0: no momentum buffer
	// Centered normalizes by an estimate of the gradient's variance: the running mean of the
	// gradient (grad_avg) is kept and its square subtracted from the running mean of its square.
	Centered bool
}

// Check returns an error when a hyperparameter is out of its range (PyTorch's checks, and
// finite as float32s).
func (p RMSpropParams) Check() error {
	for _, h := range []struct {
		name string
		v    float64
	}{{"learning rate", p.LR}, {"alpha", p.Alpha}, {"eps", p.Eps}, {"weight decay", p.WeightDecay}, {"momentum", p.Momentum}} {
		if !nonNegative(h.v) {
			return fmt.Errorf("ops: rmsprop: %s %v is not a finite float32 >= 0", h.name, h.v)
		}
	}
	return nil
}

// RMSpropStep runs one RMSprop step on param, with PyTorch's semantics:
//
//	g = grad + WeightDecay*param                   (only when WeightDecay != 0)
//	squareAvg = Alpha*squareAvg + (1 - Alpha)*g*g
//	gradAvg = Alpha*gradAvg + (1 - Alpha)*g        (Centered)
//	avg = sqrt(squareAvg - gradAvg*gradAvg) + Eps  (Centered), sqrt(squareAvg) + Eps (otherwise)
//	buf = Momentum*buf + g/avg; param = param - LR*buf   (Momentum != 0)
//	param = param - LR*g/avg                       (otherwise)
//
// param, squareAvg (square_avg), gradAvg (grad_avg, when Centered; else unused and may be nil)
// and buf (momentum_buffer, when Momentum != 0; else may be nil) are UPDATED IN PLACE; grad is
// borrowed. The state starts as zeros (PyTorch's zeros_like, also for the momentum buffer). The
// scalars LR, Alpha, 1 - Alpha (in float64), Eps, WeightDecay and Momentum are rounded to
// float32 once, then every operation is one float32 operation: cpu.RMSpropStep states the exact
// order. All buffers must be distinct, live, on one device and of one length. RMSpropStep makes
// the scalars' device buffer for the one call; an optimizer keeps an RMSprop instead.
func RMSpropStep(param, grad, squareAvg, gradAvg, buf *Buffer, p RMSpropParams) error {
	if err := param.liveIn("rmsprop_step"); err != nil {
		return err
	}
	o, err := NewRMSprop(param.dev)
	if err != nil {
		return err
	}
	defer o.Release()
	return o.Step(param, grad, squareAvg, gradAvg, buf, p)
}

// RMSprop is the device state of RMSprop steps: the six float32 scalars the kernel reads (LR,
// Alpha, 1 - Alpha, Eps, WeightDecay, Momentum), uploaded when the hyperparameters change, as
// for SGD: a step captured into a CUDA graph replays with the learning rate of its turn. Safe
// for concurrent use.
type RMSprop struct {
	mu   sync.Mutex
	sc   *Buffer
	last uploaded[RMSpropParams]
}

// NewRMSprop returns the RMSprop state on d.
func NewRMSprop(d *Device) (*RMSprop, error) {
	sc, err := newBuffer(d, 6)
	if err != nil {
		return nil, opErr("rmsprop_step", err)
	}
	return &RMSprop{sc: sc}, nil
}

// Release frees the state.
func (o *RMSprop) Release() { o.sc.Release() }

// Step is RMSpropStep with o's scalars (set from p).
func (o *RMSprop) Step(param, grad, squareAvg, gradAvg, buf *Buffer, p RMSpropParams) error {
	const op = "rmsprop_step"
	if err := p.Check(); err != nil {
		return err
	}
	bufs := []*Buffer{param, grad, squareAvg}
	var flags int
	if p.Centered {
		bufs = append(bufs, gradAvg)
		flags |= cpu.RMSpropCentered
	} else {
		gradAvg = squareAvg // a stand-in the kernel does not touch
	}
	if p.Momentum != 0 {
		bufs = append(bufs, buf)
		flags |= cpu.RMSpropMomentum
	} else {
		buf = squareAvg
	}
	if err := checkStepOperands(op, bufs); err != nil {
		return err
	}
	if err := onDevice(op, o.sc, param.dev); err != nil {
		return err
	}
	n := param.Len()
	if n == 0 {
		return nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := o.setParams(p); err != nil {
		return err
	}
	return rmspropOp.launch([]*Buffer{param, squareAvg, gradAvg, buf}, []*Buffer{grad, o.sc}, nil, []int{n, flags})
}

// SetParams uploads the scalars of p when they differ from the last ones uploaded, as
// SGD.SetParams does (Momentum and Centered, which choose what the kernel updates, stay those of
// a captured step).
func (o *RMSprop) SetParams(p RMSpropParams) error {
	if err := p.Check(); err != nil {
		return err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.setParams(p)
}

// setParams is SetParams with o.mu held and p checked.
func (o *RMSprop) setParams(p RMSpropParams) error {
	return o.last.update("rmsprop_step", o.sc, p, func(p RMSpropParams) []float32 {
		return []float32{float32(p.LR), float32(p.Alpha), float32(1 - p.Alpha), float32(p.Eps),
			float32(p.WeightDecay), float32(p.Momentum)}
	})
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
// with stepSize = LR / (1 - Beta1^step) and bc2Sqrt = sqrt(1 - Beta2^step). The scalars are
// computed in float64 and rounded to float32 once each (cpu.AdamScalars, on the device), then
// cpu.AdamStep states the float32 arithmetic per element. All buffers must be distinct, live, on
// one device and of one length. AdamStep makes a one-tensor Adam state for the call; an optimizer
// keeps an Adam instead.
func AdamStep(param, grad, m, v *Buffer, p AdamParams, step int) error {
	const op = "adam_step"
	if step < 1 {
		return fmt.Errorf("ops: %s: step %d, want >= 1", op, step)
	}
	if err := param.liveIn(op); err != nil {
		return err
	}
	o, err := NewAdam(param.dev, 1)
	if err != nil {
		return err
	}
	defer o.Release()
	if err := o.SetSteps([]uint64{uint64(step - 1)}); err != nil {
		return err
	}
	if err := o.Begin(p, []int{0}); err != nil {
		return err
	}
	return o.Step(0, param, grad, m, v)
}

// Adam is the device state of Adam or AdamW steps over a fixed number of parameter tensors:
// the step count of each tensor, the float64 hyperparameters (uploaded when they change) and the
// nine float32 scalars of each tensor's current step, which Begin computes on the device from the
// two (adam_scalars) and Step's kernel reads. Nothing of a step's arithmetic passes through a
// kernel parameter, so a step captured into a CUDA graph replays with the step number and the
// learning rate of its turn. Safe for concurrent use; calls are ordered as they are made.
type Adam struct {
	mu      sync.Mutex
	tensors int
	steps   *Buffer // 2 float32 slots per tensor: its step count (cpu.CountAt)
	hyper   *Buffer // cpu.AdamHyper slots
	sc      *Buffer // cpu.AdamScalarCount scalars per tensor
	list    *Indices
	listed  []int // the tensors of list
	last    uploaded[AdamParams]
}

// NewAdam returns the state of tensors parameter tensors on d, every step count 0.
func NewAdam(d *Device, tensors int) (*Adam, error) {
	const op = "adam_step"
	if tensors < 1 {
		return nil, fmt.Errorf("ops: %s: %d tensors, want >= 1", op, tensors)
	}
	o := &Adam{tensors: tensors}
	var err error
	if o.steps, err = Zeros(d, 2*tensors); err == nil {
		if o.hyper, err = newBuffer(d, cpu.AdamHyper); err == nil {
			o.sc, err = newBuffer(d, cpu.AdamScalarCount*tensors)
		}
	}
	if err != nil {
		o.Release()
		return nil, opErr(op, err)
	}
	return o, nil
}

// Release frees the state.
func (o *Adam) Release() {
	for _, b := range []*Buffer{o.steps, o.hyper, o.sc} {
		if b != nil {
			b.Release()
		}
	}
	if o.list != nil {
		o.list.Release()
	}
}

// Begin starts a step of the tensors listed (distinct, in [0, tensors)) with the
// hyperparameters p: it advances their step counts by one and computes their scalars, on the
// device. A tensor's Step then uses them until the next Begin that lists it.
func (o *Adam) Begin(p AdamParams, tensors []int) error {
	const op = "adam_step"
	if err := p.Check(); err != nil {
		return err
	}
	if len(tensors) == 0 {
		return nil
	}
	seen := make([]bool, o.tensors)
	for _, t := range tensors {
		if t < 0 || t >= o.tensors || seen[t] {
			return fmt.Errorf("ops: %s: tensor %d is out of range [0, %d) or listed twice", op, t, o.tensors)
		}
		seen[t] = true
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := o.setParams(p); err != nil {
		return err
	}
	if o.list == nil || !slices.Equal(o.listed, tensors) {
		list, err := NewIndices(o.steps.dev, tensors)
		if err != nil {
			return opErr(op, err)
		}
		if o.list != nil {
			o.list.Release()
		}
		o.list, o.listed = list, slices.Clone(tensors)
	}
	return adamScalarsOp.launch([]*Buffer{o.sc, o.steps}, []*Buffer{o.hyper}, []*Indices{o.list}, []int{len(tensors)})
}

// SetParams uploads the hyperparameters p when they differ from the last ones uploaded (ordered
// with the device's work): the scalars of a later Begin, also one replayed by a graph that
// captured it, are computed from them. Not inside a capture.
func (o *Adam) SetParams(p AdamParams) error {
	if err := p.Check(); err != nil {
		return err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.setParams(p)
}

// setParams is SetParams with o.mu held and p checked.
func (o *Adam) setParams(p AdamParams) error {
	return o.last.update("adam_step", o.hyper, p, adamHyper)
}

// uploaded remembers the hyperparameters an optimizer's state last uploaded to its device.
type uploaded[P comparable] struct {
	p   P
	set bool
}

// update uploads scalars(p) to dst (ordered with the device's work) unless p is the set last
// uploaded.
func (u *uploaded[P]) update(op string, dst *Buffer, p P, scalars func(P) []float32) error {
	if u.set && u.p == p {
		return nil
	}
	if err := upload(op, dst, scalars(p)); err != nil {
		return err
	}
	u.p, u.set = p, true
	return nil
}

// adamHyper returns the hyperparameters as cpu.AdamScalars reads them: six float64 values, low 32
// bits first.
func adamHyper(p AdamParams) []float32 {
	decoupled := 0.0
	if p.Decoupled {
		decoupled = 1
	}
	out := make([]float32, 0, cpu.AdamHyper)
	for _, v := range []float64{p.LR, p.Beta1, p.Beta2, p.Eps, p.WeightDecay, decoupled} {
		b := math.Float64bits(v)
		out = append(out, math.Float32frombits(uint32(b)), math.Float32frombits(uint32(b>>32)))
	}
	return out
}

// Step updates tensor t (param, with its moments m and v, and its gradient grad) with the scalars
// of the last Begin that listed it.
func (o *Adam) Step(t int, param, grad, m, v *Buffer) error {
	const op = "adam_step"
	if t < 0 || t >= o.tensors {
		return fmt.Errorf("ops: %s: tensor %d is out of range [0, %d)", op, t, o.tensors)
	}
	if err := checkStepOperands(op, []*Buffer{param, grad, m, v}); err != nil {
		return err
	}
	if err := onDevice(op, o.sc, param.dev); err != nil {
		return err
	}
	n := param.Len()
	if n == 0 {
		return nil
	}
	if err := o.sc.useIn(op); err != nil {
		return err
	}
	defer o.sc.done()
	sc := o.sc.view(cpu.AdamScalarCount*t, cpu.AdamScalarCount)
	return adamOp.launch([]*Buffer{param, m, v}, []*Buffer{grad, sc}, nil, []int{n})
}

// Steps returns the step count of every tensor (a download).
func (o *Adam) Steps() ([]uint64, error) {
	f, err := o.steps.Float32s()
	if err != nil {
		return nil, opErr("adam_step", err)
	}
	out := make([]uint64, o.tensors)
	for t := range out {
		out[t] = cpu.CountAt(f, t)
	}
	return out, nil
}

// SetSteps sets the step count of every tensor (len(steps) == tensors).
func (o *Adam) SetSteps(steps []uint64) error {
	if len(steps) != o.tensors {
		return fmt.Errorf("ops: adam_step: %d step counts for %d tensors", len(steps), o.tensors)
	}
	f := make([]float32, 2*o.tensors)
	for t, v := range steps {
		cpu.SetCountAt(f, t, v)
	}
	return upload("adam_step", o.steps, f)
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
