package nn

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
)

// Learning-rate schedulers: torch.optim.lr_scheduler's StepLR, MultiStepLR, ExponentialLR,
// CosineAnnealingLR, OneCycleLR, and linear warm-up in front of any of them (PyTorch's
// SequentialLR of LinearLR and another scheduler).
//
// Every schedule here is a closed form: the learning rate after n steps is a function of n, the
// base learning rate and the constructor's arguments, computed in float64 without recurrence. It
// matches PyTorch 1.13, whose chained updates accumulate rounding, to 1e-12 relative (at most
// 1.1e-13 over the cases of TestSchedulersMatchTorch, which holds values PyTorch computed:
// testdata/sched_torch.py), and a scheduler restored from its State continues with the same
// bits as one that was never interrupted.

// Optimizer is what a scheduler drives: autograd's SGD, Adam and RMSprop have these methods.
type Optimizer interface {
	LR() float64
	SetLR(lr float64)
}

// Scheduler sets an optimizer's learning rate step by step. The constructors set the
// optimizer's learning rate to the schedule's value at step 0 (as PyTorch's do); call Step once
// after each optimizer step:
//
//	for ... {
//		// forward, backward
//		opt.Step()
//		sched.Step()
//	}
//
// A Scheduler is not safe for concurrent use (nor are the optimizers).
type Scheduler interface {
	// Step advances the schedule by one step and sets the optimizer's learning rate to LR().
	Step()
	// LR returns the learning rate of the current step: the one the next optimizer step uses.
	LR() float64
	// State returns what a checkpoint stores to resume the schedule.
	State() SchedulerState
	// LoadState restores a State of a scheduler of the same kind (built with the same
	// arguments: they are not part of the state) and sets the optimizer's learning rate: the
	// following steps are those of the uninterrupted schedule. On error nothing changes.
	LoadState(SchedulerState) error
}

// SchedulerState is the resumable state of a Scheduler: its kind, the number of steps taken and
// the base learning rate (the optimizer's learning rate when the scheduler was made; OneCycleLR's
// MaxLR). The constructor's other arguments are not stored: a resumed run builds its scheduler
// with them again. MarshalText and UnmarshalText give it a text form (JSON, every float64
// written so that it reads back exactly) for a checkpoint's metadata, e.g.
// {"kind":"StepLR","steps":42,"base_lr":0.1}.
type SchedulerState struct {
	Kind   string          // "StepLR", "MultiStepLR", "ExponentialLR", "CosineAnnealingLR", "LinearWarmup" or "OneCycleLR"
	Steps  int             // Step calls since the scheduler was made
	BaseLR float64         // the learning rate the schedule scales
	Inner  *SchedulerState // LinearWarmup: the state of the schedule after the warm-up
}

// MarshalText returns the state as one line of JSON.
func (s SchedulerState) MarshalText() ([]byte, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	return json.Marshal(s.toJSON())
}

// UnmarshalText reads the form MarshalText writes; unknown fields are an error.
func (s *SchedulerState) UnmarshalText(text []byte) error {
	var j stateJSON
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return fmt.Errorf("nn: scheduler state %q: %w", text, err)
	}
	if dec.More() {
		return fmt.Errorf("nn: scheduler state %q: text after the object", text)
	}
	st := j.state()
	if err := st.check(); err != nil {
		return err
	}
	*s = st
	return nil
}

// stateJSON is the JSON form of a SchedulerState (whose own field Inner would be written with
// MarshalText, as a string).
type stateJSON struct {
	Kind   string     `json:"kind"`
	Steps  int        `json:"steps"`
	BaseLR float64    `json:"base_lr"`
	Inner  *stateJSON `json:"inner,omitempty"`
}

func (s SchedulerState) toJSON() *stateJSON {
	j := &stateJSON{Kind: s.Kind, Steps: s.Steps, BaseLR: s.BaseLR}
	if s.Inner != nil {
		j.Inner = s.Inner.toJSON()
	}
	return j
}

func (j *stateJSON) state() SchedulerState {
	s := SchedulerState{Kind: j.Kind, Steps: j.Steps, BaseLR: j.BaseLR}
	if j.Inner != nil {
		inner := j.Inner.state()
		s.Inner = &inner
	}
	return s
}

// check validates the fields every kind shares.
func (s SchedulerState) check() error {
	for st := &s; st != nil; st = st.Inner {
		if st.Steps < 0 || math.IsNaN(st.BaseLR) || math.IsInf(st.BaseLR, 0) || st.BaseLR < 0 {
			return fmt.Errorf("nn: scheduler state %s: want steps >= 0 and a finite base_lr >= 0, have %d and %v",
				st.Kind, st.Steps, st.BaseLR)
		}
	}
	return nil
}

// schedBaseLR reads and checks an optimizer's learning rate for the constructor of kind.
func schedBaseLR(kind string, opt Optimizer) (float64, error) {
	if opt == nil {
		return 0, fmt.Errorf("nn: %s: nil optimizer", kind)
	}
	lr := opt.LR()
	if math.IsNaN(lr) || math.IsInf(lr, 0) || lr < 0 {
		return 0, fmt.Errorf("nn: %s: the optimizer's learning rate %v is not finite and >= 0", kind, lr)
	}
	return lr, nil
}

// finitePositive reports whether v is finite and > 0.
func finitePositive(v float64) bool { return v > 0 && !math.IsInf(v, 1) }

// closedForm is a schedule whose learning rate after n steps is at(base, n).
type closedForm struct {
	kind  string
	opt   Optimizer
	base  float64
	steps int
	at    func(base float64, n int) float64
}

// driven returns the optimizer a scheduler of this package sets (NewLinearWarmup checks it).
func (c *closedForm) driven() Optimizer { return c.opt }

func (w *warmupSched) driven() Optimizer { return w.opt }

// newClosedForm makes the scheduler and sets the optimizer's learning rate to at(base, 0).
func newClosedForm(kind string, opt Optimizer, base float64, at func(base float64, n int) float64) *closedForm {
	c := &closedForm{kind: kind, opt: opt, base: base, at: at}
	opt.SetLR(c.LR())
	return c
}

func (c *closedForm) Step() {
	c.steps++
	c.opt.SetLR(c.LR())
}

func (c *closedForm) LR() float64 { return c.at(c.base, c.steps) }

func (c *closedForm) State() SchedulerState {
	return SchedulerState{Kind: c.kind, Steps: c.steps, BaseLR: c.base}
}

func (c *closedForm) LoadState(s SchedulerState) error {
	if err := schedLoadable(c.kind, s, false); err != nil {
		return err
	}
	c.steps, c.base = s.Steps, s.BaseLR
	c.opt.SetLR(c.LR())
	return nil
}

// schedLoadable checks that s is a valid state of kind, with an inner state when inner is set.
func schedLoadable(kind string, s SchedulerState, inner bool) error {
	if s.Kind != kind {
		return fmt.Errorf("nn: %s: LoadState of a %q state", kind, s.Kind)
	}
	if (s.Inner != nil) != inner {
		return fmt.Errorf("nn: %s: LoadState: inner state present %v, want %v", kind, s.Inner != nil, inner)
	}
	return s.check()
}

// NewStepLR multiplies the learning rate by gamma every stepSize steps (PyTorch's StepLR): after
// n steps it is base * gamma^floor(n/stepSize), base being opt's learning rate now. stepSize >= 1,
// gamma finite and > 0.
func NewStepLR(opt Optimizer, stepSize int, gamma float64) (Scheduler, error) {
	const kind = "StepLR"
	base, err := schedBaseLR(kind, opt)
	if err != nil {
		return nil, err
	}
	if stepSize < 1 || !finitePositive(gamma) {
		return nil, fmt.Errorf("nn: %s: want stepSize >= 1 and a finite gamma > 0, have %d and %v", kind, stepSize, gamma)
	}
	return newClosedForm(kind, opt, base, func(base float64, n int) float64 {
		return base * math.Pow(gamma, float64(n/stepSize))
	}), nil
}

// NewMultiStepLR multiplies the learning rate by gamma at each milestone (PyTorch's
// MultiStepLR): after n steps it is base * gamma^k, k the number of milestones <= n (a milestone
// listed twice counts twice), base being opt's learning rate now. Milestones are >= 1, in any
// order; gamma finite and > 0.
func NewMultiStepLR(opt Optimizer, milestones []int, gamma float64) (Scheduler, error) {
	const kind = "MultiStepLR"
	base, err := schedBaseLR(kind, opt)
	if err != nil {
		return nil, err
	}
	if !finitePositive(gamma) {
		return nil, fmt.Errorf("nn: %s: want a finite gamma > 0, have %v", kind, gamma)
	}
	ms := slices.Clone(milestones)
	slices.Sort(ms)
	if len(ms) > 0 && ms[0] < 1 {
		return nil, fmt.Errorf("nn: %s: milestone %d (want >= 1)", kind, ms[0])
	}
	return newClosedForm(kind, opt, base, func(base float64, n int) float64 {
		k := sort.SearchInts(ms, n+1) // milestones <= n
		return base * math.Pow(gamma, float64(k))
	}), nil
}

// NewExponentialLR multiplies the learning rate by gamma every step (PyTorch's ExponentialLR):
// after n steps it is base * gamma^n, base being opt's learning rate now; gamma finite and > 0.
func NewExponentialLR(opt Optimizer, gamma float64) (Scheduler, error) {
	const kind = "ExponentialLR"
	base, err := schedBaseLR(kind, opt)
	if err != nil {
		return nil, err
	}
	if !finitePositive(gamma) {
		return nil, fmt.Errorf("nn: %s: want a finite gamma > 0, have %v", kind, gamma)
	}
	return newClosedForm(kind, opt, base, func(base float64, n int) float64 {
		return base * math.Pow(gamma, float64(n))
	}), nil
}

// NewCosineAnnealingLR anneals the learning rate from base (opt's learning rate now) to etaMin
// over tMax steps along a half cosine, PyTorch's closed form of CosineAnnealingLR: after n steps
// it is etaMin + (base - etaMin) * (1 + cos(pi * n / tMax)) / 2. Past tMax the cosine goes on
// (back up to base at 2 tMax), as PyTorch's does. tMax >= 1, etaMin finite and >= 0.
func NewCosineAnnealingLR(opt Optimizer, tMax int, etaMin float64) (Scheduler, error) {
	const kind = "CosineAnnealingLR"
	base, err := schedBaseLR(kind, opt)
	if err != nil {
		return nil, err
	}
	if tMax < 1 || !(etaMin >= 0) || math.IsInf(etaMin, 1) {
		return nil, fmt.Errorf("nn: %s: want tMax >= 1 and a finite etaMin >= 0, have %d and %v", kind, tMax, etaMin)
	}
	return newClosedForm(kind, opt, base, func(base float64, n int) float64 {
		return etaMin + (base-etaMin)*(1+math.Cos(math.Pi*float64(n)/float64(tMax)))/2
	}), nil
}

// OneCycleOptions configure NewOneCycleLR; a zero field takes the default in its comment
// (PyTorch's).
type OneCycleOptions struct {
	MaxLR          float64 // the peak learning rate (required, finite and > 0)
	TotalSteps     int     // the length of the cycle in steps (required, >= 1)
	PctStart       float64 // the fraction of the steps spent rising: 0.3
	DivFactor      float64 // the initial learning rate is MaxLR / DivFactor: 25
	FinalDivFactor float64 // the final learning rate is the initial one / FinalDivFactor: 1e4
	Linear         bool    // anneal linearly instead of along a half cosine
}

// NewOneCycleLR is PyTorch's OneCycleLR (two phases, no momentum cycling): the learning rate
// rises from MaxLR/DivFactor to MaxLR until step PctStart*TotalSteps - 1 and then falls to
// MaxLR/DivFactor/FinalDivFactor at step TotalSteps - 1. In float64, with e1 = PctStart *
// TotalSteps - 1 and e2 = TotalSteps - 1, after n steps the learning rate is
// anneal(initial, MaxLR, n / e1) when n <= e1 and anneal(MaxLR, final, (n - e1) / (e2 - e1))
// otherwise, where anneal(a, b, p) = b + (a - b) / 2 * (cos(pi * p) + 1), or (b - a) * p + a with
// Linear. PyTorch raises an error after TotalSteps steps; here the learning rate then stays that
// of step TotalSteps. The optimizer's own learning rate is not used. PctStart must be in (0, 1)
// with PctStart*TotalSteps != 1 (PyTorch divides by zero there).
func NewOneCycleLR(opt Optimizer, o OneCycleOptions) (Scheduler, error) {
	const kind = "OneCycleLR"
	if opt == nil {
		return nil, fmt.Errorf("nn: %s: nil optimizer", kind)
	}
	if o.PctStart == 0 {
		o.PctStart = 0.3
	}
	if o.DivFactor == 0 {
		o.DivFactor = 25
	}
	if o.FinalDivFactor == 0 {
		o.FinalDivFactor = 1e4
	}
	switch {
	case !finitePositive(o.MaxLR) || o.TotalSteps < 1:
		return nil, fmt.Errorf("nn: %s: want a finite MaxLR > 0 and TotalSteps >= 1, have %v and %d", kind, o.MaxLR, o.TotalSteps)
	case !finitePositive(o.DivFactor) || !finitePositive(o.FinalDivFactor):
		return nil, fmt.Errorf("nn: %s: want finite DivFactor and FinalDivFactor > 0, have %v and %v", kind, o.DivFactor, o.FinalDivFactor)
	case !(o.PctStart > 0 && o.PctStart < 1):
		return nil, fmt.Errorf("nn: %s: PctStart %v is not in (0, 1)", kind, o.PctStart)
	}
	total := o.TotalSteps
	e1 := o.PctStart*float64(total) - 1
	e2 := float64(total - 1)
	if e1 == 0 || !(e2-e1 > 0) {
		return nil, fmt.Errorf("nn: %s: PctStart %v of %d steps leaves a phase of no steps", kind, o.PctStart, total)
	}
	anneal := func(a, b, p float64) float64 { return b + (a-b)/2*(math.Cos(math.Pi*p)+1) }
	if o.Linear {
		anneal = func(a, b, p float64) float64 { return (b-a)*p + a }
	}
	div, final := o.DivFactor, o.FinalDivFactor
	return newClosedForm(kind, opt, o.MaxLR, func(maxLR float64, n int) float64 {
		initial := maxLR / div
		x := float64(min(n, total))
		if x <= e1 {
			return anneal(initial, maxLR, x/e1)
		}
		return anneal(maxLR, initial/final, (x-e1)/(e2-e1))
	}), nil
}

// warmupSched is LinearWarmup's scheduler.
type warmupSched struct {
	opt   Optimizer
	n     int
	start float64
	then  Scheduler
	base  float64
	steps int
}

const warmupKind = "LinearWarmup"

// NewLinearWarmup puts a linear warm-up of n steps in front of then, PyTorch's
// SequentialLR(opt, [LinearLR(opt, startFactor, total_iters=n), then], milestones=[n]): after
// k < n steps the learning rate is base * (startFactor + (1 - startFactor) * k / n), base being
// then's learning rate now (its step 0); from step n on it is then's after k - n steps (then
// steps only after the warm-up). then must drive the same optimizer (checked for this
// package's schedulers) and not have stepped yet. n >= 1, startFactor in (0, 1].
func NewLinearWarmup(opt Optimizer, n int, startFactor float64, then Scheduler) (Scheduler, error) {
	if opt == nil || then == nil {
		return nil, fmt.Errorf("nn: %s: nil optimizer or scheduler", warmupKind)
	}
	if n < 1 || !(startFactor > 0 && startFactor <= 1) {
		return nil, fmt.Errorf("nn: %s: want n >= 1 and startFactor in (0, 1], have %d and %v", warmupKind, n, startFactor)
	}
	if st := then.State(); st.Steps != 0 {
		return nil, fmt.Errorf("nn: %s: the %s after the warm-up has taken %d steps (want a fresh one)", warmupKind, st.Kind, st.Steps)
	}
	if d, ok := then.(interface{ driven() Optimizer }); ok && d.driven() != opt {
		return nil, fmt.Errorf("nn: %s: the %s after the warm-up drives another optimizer (want the same one)", warmupKind, then.State().Kind)
	}
	w := &warmupSched{opt: opt, n: n, start: startFactor, then: then, base: then.LR()}
	if math.IsNaN(w.base) || math.IsInf(w.base, 0) || w.base < 0 {
		return nil, fmt.Errorf("nn: %s: the %s's learning rate %v is not finite and >= 0", warmupKind, then.State().Kind, w.base)
	}
	opt.SetLR(w.LR())
	return w, nil
}

func (w *warmupSched) Step() {
	w.steps++
	if w.steps > w.n {
		w.then.Step()
	}
	w.opt.SetLR(w.LR())
}

func (w *warmupSched) LR() float64 {
	if w.steps >= w.n {
		return w.then.LR()
	}
	return w.base * (w.start + (1-w.start)*float64(w.steps)/float64(w.n))
}

func (w *warmupSched) State() SchedulerState {
	inner := w.then.State()
	return SchedulerState{Kind: warmupKind, Steps: w.steps, BaseLR: w.base, Inner: &inner}
}

func (w *warmupSched) LoadState(s SchedulerState) error {
	if err := schedLoadable(warmupKind, s, true); err != nil {
		return err
	}
	if want := max(s.Steps-w.n, 0); s.Inner.Steps != want {
		return fmt.Errorf("nn: %s: LoadState: %d steps with %d of warm-up, but the inner %s took %d (want %d)",
			warmupKind, s.Steps, w.n, s.Inner.Kind, s.Inner.Steps, want)
	}
	if err := w.then.LoadState(*s.Inner); err != nil {
		return fmt.Errorf("nn: %s: LoadState: inner state: %w", warmupKind, err)
	}
	w.steps, w.base = s.Steps, s.BaseLR
	w.opt.SetLR(w.LR())
	return nil
}
