package autograd

import (
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/torchlean-go/torchlean/ops"
)

// Optimizers update the parameters of a Session in place from their accumulated gradients, one
// fused kernel launch per parameter (ops.SGDStep, ops.AdamStep, ops.RMSpropStep): the same bits
// on every device. A parameter without a gradient (none since the last ZeroGrad) is skipped, as
// in PyTorch. A parameter belongs to one open optimizer at a time: giving it to a second one is an
// error (it would be stepped twice; this package's rule: PyTorch lets two optimizers share a
// parameter). Close the first optimizer to hand its parameters to another. A Step between a
// forward pass and its backward pass first gives each parameter that the forward pass used a
// copy of its buffer to update, so the backward pass still sees the values the forward pass used.
//
// Their state (momentum buffers, moments, step counts) lives on the session's device, keyed by
// parameter name: State and LoadState move it in and out as named buffers, for checkpoints. The
// hyperparameters are not part of the state. Errors (a bad hyperparameter, a parameter of another
// session) are recorded in the session like every other error, and returned by Step; only State
// and LoadState return the errors that leave everything as it was (a step count State cannot
// represent, a state LoadState rejects) without recording them.

// SGDOptions are the hyperparameters of NewSGD, with PyTorch's names and semantics
// (torch.optim.SGD): see ops.SGDParams. The zero value except LR is PyTorch's default.
type SGDOptions struct {
	LR          float64 // learning rate, >= 0
	Momentum    float64 // momentum factor, >= 0 (0: plain SGD)
	Dampening   float64 // dampening of the momentum
	WeightDecay float64 // L2 penalty, >= 0
	Nesterov    bool    // Nesterov momentum (needs Momentum > 0 and Dampening == 0)
}

// AdamOptions are the hyperparameters of NewAdam and NewAdamW, with PyTorch's names and
// semantics (see ops.AdamParams). Start from DefaultAdam or DefaultAdamW.
type AdamOptions struct {
	LR           float64 // learning rate, >= 0
	Beta1, Beta2 float64 // decay rates of the moments, in [0, 1)
	Eps          float64 // added to the denominator, > 0
	WeightDecay  float64 // L2 penalty (Adam) or decoupled decay rate (AdamW), >= 0
}

// DefaultAdam returns PyTorch's defaults for Adam: LR 1e-3, betas (0.9, 0.999), Eps 1e-8, no
// weight decay.
func DefaultAdam() AdamOptions { return AdamOptions{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8} }

// RMSpropOptions are the hyperparameters of NewRMSprop, with PyTorch's names and semantics
// (torch.optim.RMSprop): see ops.RMSpropParams. Start from DefaultRMSprop.
type RMSpropOptions struct {
	LR          float64 // learning rate, >= 0
	Alpha       float64 // smoothing constant of the running averages, >= 0
	Eps         float64 // added to the denominator, >= 0
	WeightDecay float64 // L2 penalty, >= 0
	Momentum    float64 // momentum factor, >= 0 (0: no momentum buffer)
	Centered    bool    // normalize by the gradient's estimated variance (keeps grad_avg)
}

// DefaultRMSprop returns PyTorch's defaults for RMSprop: LR 1e-2, Alpha 0.99, Eps 1e-8, no
// weight decay, no momentum, not centered.
func DefaultRMSprop() RMSpropOptions { return RMSpropOptions{LR: 1e-2, Alpha: 0.99, Eps: 1e-8} }

// DefaultAdamW returns PyTorch's defaults for AdamW: DefaultAdam with WeightDecay 1e-2.
func DefaultAdamW() AdamOptions {
	o := DefaultAdam()
	o.WeightDecay = 1e-2
	return o
}

// optimizer is what SGD and Adam share: the parameters, their session, and per parameter its
// state buffers (nil until its first step) and step count.
type optimizer struct {
	name    string // "sgd", "adam", "adamw" or "rmsprop", for messages
	s       *Session
	params  []*Param
	keys    []string        // the state buffers of a parameter: keys "<parameter name>.<key>"
	counted bool            // the state includes the step count (key "<parameter name>.step")
	state   [][]*ops.Buffer // state[i][k]: buffer keys[k] of params[i]
	steps   []int           // steps taken by params[i] since its state was created (Adam's device counts agree)
	err     error           // set by the constructor (or SetLR, when there is no session)
	closed  bool
	release func() // frees the device state of SGD or Adam (ops.SGD, ops.Adam), once made
	// loaded, when set, gives the step counts of a loaded state to the device state.
	loaded func(steps []int) error
	// hyper uploads the current hyperparameters to the device state, once made (a replayed
	// captured step reads them there: Step.Run).
	hyper func() error
}

// maxStep bounds the step counts of State and LoadState (exact in a float32).
const maxStep = 1 << 24

// init checks params (distinct, of one session, created without error) and check (the
// hyperparameters' error), and registers the optimizer with the session; an optimizer that
// failed these checks records its error in the session and is not registered (its parameters
// stay free for another optimizer), and every use of it returns that error.
func (o *optimizer) init(name string, params []*Param, keys []string, counted bool, check error) {
	o.name, o.params, o.keys, o.counted = name, slices.Clone(params), keys, counted
	o.state, o.steps = make([][]*ops.Buffer, len(params)), make([]int, len(params))
	for k, p := range params {
		if o.s == nil && p != nil {
			o.s = p.s // the session that records the optimizer's error, even if p failed
		}
		switch {
		case p != nil && p.buf == nil && p.s != nil && p.s.Err() != nil:
			o.err = p.s.Err() // the error that kept the parameter from being created
		case p == nil || p.buf == nil:
			o.err = fmt.Errorf("autograd: %s: parameter %d is nil or was not created", name, k)
		case slices.Index(params, p) != k:
			o.err = fmt.Errorf("autograd: %s: parameter %s is listed twice", name, p.name)
		case o.s != nil && p.s != o.s:
			o.err = fmt.Errorf("autograd: %s: parameter %s belongs to another session", name, p.name)
		default:
			o.s = p.s
			continue
		}
		break
	}
	if o.err == nil && check != nil {
		o.err = opFailed(name, check)
	}
	if o.s == nil {
		return
	}
	for _, q := range o.s.optims {
		for _, p := range params {
			if o.err == nil && !q.closed && slices.Contains(q.params, p) {
				o.err = fmt.Errorf("autograd: %s: parameter %s is already updated by an open %s optimizer: give each parameter to one optimizer (Close the other first)", name, p.name, q.name)
			}
		}
	}
	if o.err != nil {
		o.s.fail(o.err)
		return
	}
	o.s.optims = append(o.s.optims, o)
}

// ready returns the error that prevents using the optimizer, if any: the constructor's error
// is recorded in the session again (after ClearErr, a Step of a failed optimizer is still an
// error the session reports).
func (o *optimizer) ready() error {
	if err := o.open(); err != nil {
		if o.err != nil && o.s != nil {
			return o.s.fail(o.err)
		}
		return err
	}
	if o.s == nil {
		return nil
	}
	return o.s.Err()
}

// open returns the error that prevents reading the optimizer's state: its own error, or that it
// or its session is closed. Unlike ready, a recorded session error does not: State still returns
// the state of the last completed step.
func (o *optimizer) open() error {
	switch {
	case o.err != nil:
		return o.err
	case o.s == nil:
		return nil // no parameters
	case o.closed:
		return o.s.failf(o.name, "the optimizer is closed")
	case o.s.closed:
		return o.s.Err()
	}
	return nil
}

// step runs update on every parameter that has a gradient (params[i]), with its state (zeros,
// allocated on its first step) and whether the state was just allocated, after begin (when not
// nil) with the indices of those parameters. It first checks every gradient and parameter
// buffer, moves parameters that a recorded pass still reads to copies (unshare) and allocates
// every new state, so that an error of the caller's input (a released buffer) or an allocation
// that fails changes nothing; an update that fails after that (a device error) leaves the
// earlier parameters updated.
func (o *optimizer) step(begin func(stepped []int) error, update func(i int, p *Param, st []*ops.Buffer, fresh bool) error) error {
	if err := o.ready(); err != nil {
		return err
	}
	fresh := make([][]*ops.Buffer, len(o.params)) // new states, adopted by successful updates
	defer func() {
		for _, st := range fresh {
			releaseAll(st)
		}
	}()
	for i, p := range o.params {
		if p.grad == nil {
			continue
		}
		if err := p.grad.Err(); err != nil {
			return o.s.fail(fmt.Errorf("autograd: %s: gradient of %s: %w", o.name, p.name, err))
		}
		if err := p.buf.Err(); err != nil {
			return o.s.fail(fmt.Errorf("autograd: %s: %s: %w", o.name, p.name, err))
		}
		// A copy when a recorded pass may still read the buffer: the same values, elsewhere.
		if err := p.unshare(); err != nil {
			return o.s.fail(fmt.Errorf("autograd: %s: %s: %w", o.name, p.name, err))
		}
		if o.state[i] != nil {
			continue
		}
		st := make([]*ops.Buffer, len(o.keys))
		for k := range st {
			var err error
			if st[k], err = ops.Zeros(o.s.Device(), p.buf.Len()); err != nil {
				releaseAll(st)
				return o.s.fail(fmt.Errorf("autograd: %s: state of %s: %w", o.name, p.name, err))
			}
		}
		fresh[i] = st
	}
	if begin != nil {
		var stepped []int
		for i, p := range o.params {
			if p.grad != nil {
				stepped = append(stepped, i)
			}
		}
		if err := begin(stepped); err != nil {
			return o.s.fail(fmt.Errorf("autograd: %s: %w", o.name, err))
		}
	}
	for i, p := range o.params {
		if p.grad == nil {
			continue
		}
		st, isNew := o.state[i], fresh[i] != nil
		if isNew {
			st = fresh[i]
		}
		if err := update(i, p, st, isNew); err != nil {
			return o.s.fail(fmt.Errorf("autograd: %s: %s: %w", o.name, p.name, err))
		}
		if isNew {
			o.state[i], o.steps[i], fresh[i] = st, 0, nil
		}
		o.steps[i]++
		p.updated()
	}
	return nil
}

// ZeroGrad releases the accumulated gradients of the optimizer's parameters.
func (o *optimizer) ZeroGrad() {
	for _, p := range o.params {
		p.ZeroGrad()
	}
}

// Close releases the optimizer's state; a later Step, State or LoadState is an error (SetLR, LR
// and ZeroGrad still work). The session's Close calls it.
// It is idempotent.
func (o *optimizer) Close() {
	for i, st := range o.state {
		releaseAll(st)
		o.state[i] = nil
	}
	if o.release != nil {
		o.release()
		o.release = nil
	}
	o.closed = true
	if o.s != nil {
		o.s.optims = slices.DeleteFunc(o.s.optims, func(q *optimizer) bool { return q == o })
	}
}

// State returns copies of the optimizer's state, owned by the caller (release them), keyed
// "<parameter name>.<key>": for SGD with momentum the key momentum_buffer; for Adam and AdamW
// exp_avg and exp_avg_sq; for RMSprop square_avg, momentum_buffer (with momentum) and grad_avg
// (centered) (PyTorch's names; each with the parameter's length, flat: a NamedTensor for
// SaveTensors takes Shape []int{b.Len()}); for Adam, AdamW and RMSprop step (one element: the
// number of steps taken, a whole number, at most 2^24). The hyperparameters (LR, betas, weight decay) are not part of it: a
// checkpoint stores them itself, and a resumed run passes them to the new optimizer (and SetLR).
// Parameters that have taken no step have no entries. State works after the session recorded an
// error (not after Close), like Param.Host, so that the last good state can still be saved; a Step
// that failed part way (a device error) may have updated some parameters and their state and not
// others.
func (o *optimizer) State() (map[string]*ops.Buffer, error) {
	if err := o.open(); err != nil {
		return nil, err
	}
	out := map[string]*ops.Buffer{}
	for i, st := range o.state {
		if st == nil {
			continue
		}
		name := o.params[i].name + "."
		var err error
		for k, b := range st {
			if out[name+o.keys[k]], err = ops.Copy(b); err != nil {
				break
			}
		}
		tooMany := o.counted && o.steps[i] > maxStep
		if o.counted && err == nil && !tooMany {
			out[name+"step"], err = ops.Full(o.s.Device(), 1, float64(o.steps[i]))
		}
		if err != nil || tooMany {
			for _, b := range out {
				b.Release()
			}
			if tooMany { // nothing changed: returned, not recorded
				return nil, fmt.Errorf("autograd: %s: state: %s has taken %d steps, more than the state can hold (2^24)",
					o.name, o.params[i].name, o.steps[i])
			}
			return nil, o.s.fail(fmt.Errorf("autograd: %s: state: %w", o.name, err))
		}
	}
	return out, nil
}

// LoadState replaces the state with copies of the buffers of state (borrowed; on any device),
// keyed as State returns them, after checking all of them: every key must be one of the
// optimizer's, each parameter must have all of its keys or none (none: no state, as before its
// first step), each buffer the parameter's length, and a step a whole number in [1, 2^24]. A
// state that fails these checks is an error that leaves the optimizer's state as it was and is
// not recorded in the session.
func (o *optimizer) LoadState(state map[string]*ops.Buffer) error {
	if err := o.ready(); err != nil {
		return err
	}
	if o.s == nil {
		if len(state) > 0 {
			return fmt.Errorf("autograd: %s: load state: the optimizer has no parameters", o.name)
		}
		return nil
	}
	fail := func(format string, args ...any) error {
		return fmt.Errorf("autograd: %s: load state: %s", o.name, fmt.Sprintf(format, args...))
	}
	keys := o.keys
	if o.counted {
		keys = append(slices.Clone(keys), "step")
	}
	found := make([][]*ops.Buffer, len(o.params)) // by parameter, in the order of keys
	steps := make([]int, len(o.params))
	seen := 0
	for i, p := range o.params {
		st := make([]*ops.Buffer, len(keys))
		missing := ""
		for k, key := range keys {
			if st[k] = state[p.name+"."+key]; st[k] != nil {
				seen++
			} else {
				missing = key
			}
		}
		if slices.IndexFunc(st, func(b *ops.Buffer) bool { return b != nil }) < 0 {
			continue
		}
		if missing != "" {
			return fail("%s.%s is missing", p.name, missing)
		}
		for k, b := range st {
			if err := b.Err(); err != nil {
				return fail("%s.%s: %v", p.name, keys[k], err)
			}
		}
		for k, b := range st[:len(o.keys)] {
			if b.Len() != p.buf.Len() {
				return fail("%s.%s has %d elements, the parameter %d", p.name, keys[k], b.Len(), p.buf.Len())
			}
		}
		if o.counted {
			f, err := st[len(o.keys)].Float64s()
			if err != nil || len(f) != 1 || !(f[0] >= 1 && f[0] <= maxStep && f[0] == math.Trunc(f[0])) {
				return fail("%s.step is %v (%v), not one whole number in [1, 2^24]", p.name, f, err)
			}
			steps[i] = int(f[0])
		}
		found[i] = st[:len(o.keys)]
	}
	if seen != len(state) {
		for _, key := range slices.Sorted(maps.Keys(state)) {
			if !slices.ContainsFunc(o.params, func(p *Param) bool {
				return slices.ContainsFunc(keys, func(k string) bool { return p.name+"."+k == key })
			}) {
				return fail("unknown key %q", key)
			}
		}
	}
	copies := make([][]*ops.Buffer, len(o.params))
	for i, st := range found {
		if st == nil {
			continue
		}
		copies[i] = make([]*ops.Buffer, len(st))
		for k, b := range st {
			var err error
			if copies[i][k], err = b.To(o.s.Device()); err != nil {
				for _, cs := range copies {
					releaseAll(cs)
				}
				return o.s.fail(fmt.Errorf("autograd: %s: load state: %w", o.name, err))
			}
		}
	}
	if o.loaded != nil {
		if err := o.loaded(steps); err != nil {
			for _, cs := range copies {
				releaseAll(cs)
			}
			return o.s.fail(fmt.Errorf("autograd: %s: load state: %w", o.name, err))
		}
	}
	for _, st := range o.state {
		releaseAll(st)
	}
	o.state, o.steps = copies, steps
	return nil
}

// SGD is stochastic gradient descent with optional momentum, weight decay and Nesterov
// momentum: PyTorch's torch.optim.SGD.
type SGD struct {
	optimizer
	h   ops.SGDParams
	dev *ops.SGD // the device's copy of the scalars, made on the first step
}

// NewSGD returns an SGD optimizer of params (parameters of one session).
//
// Each parameter belongs to at most one open optimizer: a constructor given a parameter that an
// open optimizer updates records an error in the session (Close the other optimizer first; to
// resume, restore its state with LoadState). The same holds for NewAdam and NewAdamW.
func NewSGD(params []*Param, o SGDOptions) *SGD {
	opt := &SGD{h: ops.SGDParams(o)}
	var keys []string
	if o.Momentum != 0 {
		keys = []string{"momentum_buffer"}
	}
	opt.init("sgd", params, keys, false, opt.h.Check())
	opt.hyper = func() error {
		if opt.dev == nil {
			return nil
		}
		return opt.dev.SetParams(opt.h)
	}
	return opt
}

// Step updates every parameter that has a gradient (ops.SGDStep). A parameter's first step sets
// its momentum buffer to the (weight-decayed) gradient.
func (o *SGD) Step() error {
	return o.step(nil, func(_ int, p *Param, st []*ops.Buffer, fresh bool) error {
		if o.dev == nil {
			dev, err := ops.NewSGD(o.s.Device())
			if err != nil {
				return err
			}
			o.dev, o.release = dev, dev.Release
		}
		var buf *ops.Buffer
		if len(st) > 0 {
			buf = st[0]
		}
		return o.dev.Step(p.buf, p.grad, buf, o.h, fresh)
	})
}

// SetLR sets the learning rate of the following steps (what a schedule does to PyTorch's
// param_groups[0]["lr"]). A negative or non-finite rate is an error: the session records it.
func (o *SGD) SetLR(lr float64) {
	h := o.h
	h.LR = lr
	o.setHyper(h.Check(), func() { o.h = h })
}

// LR returns the current learning rate.
func (o *SGD) LR() float64 { return o.h.LR }

// Adam is Adam or AdamW (NewAdam, NewAdamW): PyTorch's torch.optim.Adam and AdamW.
type Adam struct {
	optimizer
	h   ops.AdamParams
	dev *ops.Adam // the step counts and scalars on the device, made on the first step
}

// NewAdam returns an Adam optimizer of params (parameters of one session; each in at most one
// open optimizer, as for NewSGD); WeightDecay adds an L2 penalty to the gradient.
func NewAdam(params []*Param, o AdamOptions) *Adam { return newAdam("adam", params, o, false) }

// NewAdamW returns an AdamW optimizer of params: WeightDecay decays the parameters directly
// (decoupled weight decay).
func NewAdamW(params []*Param, o AdamOptions) *Adam { return newAdam("adamw", params, o, true) }

func newAdam(name string, params []*Param, o AdamOptions, decoupled bool) *Adam {
	opt := &Adam{h: ops.AdamParams{LR: o.LR, Beta1: o.Beta1, Beta2: o.Beta2, Eps: o.Eps,
		WeightDecay: o.WeightDecay, Decoupled: decoupled}}
	check := opt.h.Check()
	if check != nil && o.Eps == 0 {
		check = fmt.Errorf("%w (AdamOptions' zero values are not PyTorch's defaults: start from DefaultAdam or DefaultAdamW and set LR)", check)
	}
	opt.init(name, params, []string{"exp_avg", "exp_avg_sq"}, true, check)
	opt.loaded = func(steps []int) error {
		if opt.dev == nil {
			return nil // made with o.steps on the next step
		}
		return opt.dev.SetSteps(counts(steps))
	}
	opt.hyper = func() error {
		if opt.dev == nil {
			return nil
		}
		return opt.dev.SetParams(opt.h)
	}
	return opt
}

// counts converts step counts.
func counts(steps []int) []uint64 {
	out := make([]uint64, len(steps))
	for i, v := range steps {
		out[i] = uint64(v)
	}
	return out
}

// SetLR sets the learning rate of the following steps (what a schedule does to PyTorch's
// param_groups[0]["lr"]). A negative or non-finite rate is an error: the session records it.
func (o *Adam) SetLR(lr float64) {
	h := o.h
	h.LR = lr
	o.setHyper(h.Check(), func() { o.h = h })
}

// LR returns the current learning rate.
func (o *Adam) LR() float64 { return o.h.LR }

// setHyper applies new hyperparameters (set) when check is nil, else records the error in the
// session (an optimizer of no parameters keeps it for Step) and keeps the old ones.
func (o *optimizer) setHyper(check error, set func()) {
	if check == nil {
		set()
		return
	}
	err := opFailed(o.name, check)
	if o.s != nil {
		o.s.fail(err)
	} else if o.err == nil {
		o.err = err
	}
}

// Step updates every parameter that has a gradient, counting each parameter's steps from 1: one
// launch computes every stepped parameter's scalars on the device (ops.Adam.Begin), then one
// fused launch per parameter updates it (ops.Adam.Step).
func (o *Adam) Step() error {
	begin := func(stepped []int) error {
		if o.dev == nil {
			dev, err := ops.NewAdam(o.s.Device(), len(o.params))
			if err == nil {
				if err = dev.SetSteps(counts(o.steps)); err != nil {
					dev.Release()
				}
			}
			if err != nil {
				return err
			}
			o.dev, o.release = dev, dev.Release
		}
		return o.dev.Begin(o.h, stepped)
	}
	return o.step(begin, func(i int, p *Param, st []*ops.Buffer, _ bool) error {
		return o.dev.Step(i, p.buf, p.grad, st[0], st[1])
	})
}

// RMSprop is RMSprop with optional momentum, centering and weight decay: PyTorch's
// torch.optim.RMSprop.
type RMSprop struct {
	optimizer
	h   ops.RMSpropParams
	dev *ops.RMSprop // the device's copy of the scalars, made on the first step
}

// NewRMSprop returns an RMSprop optimizer of params (parameters of one session; each in at most
// one open optimizer, as for NewSGD). Its state per parameter is square_avg, and momentum_buffer
// when Momentum != 0 and grad_avg when Centered, all starting at zero as in PyTorch, and the step
// count (kept for PyTorch's state layout; the update does not depend on it). Alpha and Eps both
// 0 are refused: that is RMSpropOptions' zero value, not PyTorch's defaults (start from
// DefaultRMSprop).
func NewRMSprop(params []*Param, o RMSpropOptions) *RMSprop {
	opt := &RMSprop{h: ops.RMSpropParams(o)}
	check := opt.h.Check()
	if check == nil && o.Alpha == 0 && o.Eps == 0 {
		check = fmt.Errorf("alpha and eps are both 0 (RMSpropOptions' zero values are not PyTorch's defaults: start from DefaultRMSprop and set LR)")
	}
	keys := []string{"square_avg"}
	if o.Momentum != 0 {
		keys = append(keys, "momentum_buffer")
	}
	if o.Centered {
		keys = append(keys, "grad_avg")
	}
	opt.init("rmsprop", params, keys, true, check)
	opt.hyper = func() error {
		if opt.dev == nil {
			return nil
		}
		return opt.dev.SetParams(opt.h)
	}
	return opt
}

// Step updates every parameter that has a gradient (ops.RMSprop.Step: one fused launch per
// parameter).
func (o *RMSprop) Step() error {
	return o.step(nil, func(_ int, p *Param, st []*ops.Buffer, _ bool) error {
		if o.dev == nil {
			dev, err := ops.NewRMSprop(o.s.Device())
			if err != nil {
				return err
			}
			o.dev, o.release = dev, dev.Release
		}
		var buf, gradAvg *ops.Buffer
		k := 1
		if o.h.Momentum != 0 {
			buf, k = st[k], k+1
		}
		if o.h.Centered {
			gradAvg = st[k]
		}
		return o.dev.Step(p.buf, p.grad, st[0], gradAvg, buf, o.h)
	})
}

// SetLR sets the learning rate of the following steps (what a schedule does to PyTorch's
// param_groups[0]["lr"]). A negative or non-finite rate is an error: the session records it.
func (o *RMSprop) SetLR(lr float64) {
	h := o.h
	h.LR = lr
	o.setHyper(h.Check(), func() { o.h = h })
}

// LR returns the current learning rate.
func (o *RMSprop) LR() float64 { return o.h.LR }
