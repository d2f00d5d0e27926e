package nn

import (
	"encoding/json"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/ops"
)

// autograd's optimizers are Optimizers.
var (
	_ Optimizer = (*autograd.SGD)(nil)
	_ Optimizer = (*autograd.Adam)(nil)
	_ Optimizer = (*autograd.RMSprop)(nil)
)

// lrOpt is an Optimizer that only holds a learning rate and counts SetLR calls.
type lrOpt struct {
	lr   float64
	sets int
}

func (o *lrOpt) LR() float64      { return o.lr }
func (o *lrOpt) SetLR(lr float64) { o.lr, o.sets = lr, o.sets+1 }

// torchCases builds the schedulers of testdata/sched_torch.py, by case name, with the base
// learning rate the script gives the optimizer.
var torchCases = map[string]struct {
	base float64
	make func(o Optimizer) (Scheduler, error)
}{
	"step":         {0.1, func(o Optimizer) (Scheduler, error) { return NewStepLR(o, 3, 0.5) }},
	"multistep":    {0.1, func(o Optimizer) (Scheduler, error) { return NewMultiStepLR(o, []int{9, 2, 5, 5}, 0.3) }},
	"exponential":  {0.1, func(o Optimizer) (Scheduler, error) { return NewExponentialLR(o, 0.97) }},
	"cosine":       {0.1, func(o Optimizer) (Scheduler, error) { return NewCosineAnnealingLR(o, 50, 1e-4) }},
	"cosine_short": {3e-4, func(o Optimizer) (Scheduler, error) { return NewCosineAnnealingLR(o, 7, 0) }},
	"warmup_cosine": {0.1, func(o Optimizer) (Scheduler, error) {
		return warmed(o, 10, 0.01)(NewCosineAnnealingLR(o, 40, 0))
	}},
	"warmup_step": {0.5, func(o Optimizer) (Scheduler, error) { return warmed(o, 5, 0.25)(NewStepLR(o, 4, 0.5)) }},
	"warmup_exponential": {0.1, func(o Optimizer) (Scheduler, error) {
		return warmed(o, 3, 0.1)(NewExponentialLR(o, 0.9))
	}},
	"warmup_multistep": {1, func(o Optimizer) (Scheduler, error) {
		return warmed(o, 4, 0.5)(NewMultiStepLR(o, []int{3, 8}, 0.1))
	}},
	"onecycle": {0.1, func(o Optimizer) (Scheduler, error) {
		return NewOneCycleLR(o, OneCycleOptions{MaxLR: 0.5, TotalSteps: 100})
	}},
	"onecycle_linear": {0.1, func(o Optimizer) (Scheduler, error) {
		return NewOneCycleLR(o, OneCycleOptions{MaxLR: 2e-3, TotalSteps: 37, PctStart: 0.25, Linear: true, DivFactor: 10, FinalDivFactor: 100})
	}},
	"onecycle_tiny": {0.1, func(o Optimizer) (Scheduler, error) {
		return NewOneCycleLR(o, OneCycleOptions{MaxLR: 1, TotalSteps: 3})
	}},
}

// warmed returns a function that puts a warm-up in front of the scheduler it is given.
func warmed(o Optimizer, n int, start float64) func(Scheduler, error) (Scheduler, error) {
	return func(s Scheduler, err error) (Scheduler, error) {
		if err != nil {
			return nil, err
		}
		return NewLinearWarmup(o, n, start, s)
	}
}

// torchLRs reads testdata/sched_torch.json: case name -> learning rate after k steps.
func torchLRs(t *testing.T) map[string][]float64 {
	t.Helper()
	data, err := os.ReadFile("testdata/sched_torch.json")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Cases []struct {
			Name string
			LRs  []string
		}
	}
	if err := json.Unmarshal(data, &file); err != nil {
		t.Fatal(err)
	}
	out := map[string][]float64{}
	for _, c := range file.Cases {
		for _, s := range c.LRs {
			v, err := strconv.ParseFloat(s, 64)
			if err != nil {
				t.Fatal(err)
			}
			out[c.Name] = append(out[c.Name], v)
		}
	}
	return out
}

// TestSchedulersMatchTorch: the learning rate after every step of each case equals PyTorch
// 1.13's to 1e-12 relative, in the optimizer and in LR().
func TestSchedulersMatchTorch(t *testing.T) {
	want := torchLRs(t)
	if len(want) != len(torchCases) {
		t.Fatalf("%d cases in testdata, %d in the test", len(want), len(torchCases))
	}
	for name, c := range torchCases {
		lrs := want[name]
		if lrs == nil {
			t.Fatalf("case %s missing from testdata", name)
		}
		opt := &lrOpt{lr: c.base}
		s, err := c.make(opt)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		worst := 0.0
		for k, w := range lrs {
			if k > 0 {
				s.Step()
			}
			if opt.lr != s.LR() {
				t.Fatalf("%s step %d: optimizer at %v, LR() %v", name, k, opt.lr, s.LR())
			}
			d := math.Abs(opt.lr - w)
			if d > 1e-12*math.Abs(w) {
				t.Errorf("%s step %d: lr %v, PyTorch %v (relative error %.3g)", name, k, opt.lr, w, d/math.Abs(w))
			}
			if w != 0 {
				worst = max(worst, d/math.Abs(w))
			}
		}
		if got := s.State().Steps; got != len(lrs)-1 {
			t.Errorf("%s: State().Steps %d after %d steps", name, got, len(lrs)-1)
		}
		t.Logf("%-18s %4d steps, largest relative difference from PyTorch %.2g", name, len(lrs)-1, worst)
	}
}

// TestSchedulerResume: at every step of every case, the state through its text form loaded into
// a fresh scheduler (made on an optimizer at another learning rate) continues with the same bits
// as the uninterrupted run.
func TestSchedulerResume(t *testing.T) {
	want := torchLRs(t)
	for name, c := range torchCases {
		steps := len(want[name]) - 1 + 5 // a few past the recorded ones (OneCycleLR's end included)
		ref := &lrOpt{lr: c.base}
		s, _ := c.make(ref)
		lrs := []float64{ref.lr}
		states := []SchedulerState{s.State()}
		for range steps {
			s.Step()
			lrs = append(lrs, ref.lr)
			states = append(states, s.State())
		}
		for at, st := range states {
			text, err := st.MarshalText()
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			var back SchedulerState
			if err := back.UnmarshalText(text); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			opt := &lrOpt{lr: 123}
			r, err := c.make(opt)
			if err != nil {
				t.Fatal(err)
			}
			if err := r.LoadState(back); err != nil {
				t.Fatalf("%s at %d: %v (state %s)", name, at, err, text)
			}
			for k := at; k <= steps; k++ {
				if k > at {
					r.Step()
				}
				if opt.lr != lrs[k] || r.LR() != lrs[k] {
					t.Fatalf("%s resumed at %d: step %d lr %v (LR() %v), uninterrupted %v", name, at, k, opt.lr, r.LR(), lrs[k])
				}
			}
		}
	}
}

func TestSchedulerStateText(t *testing.T) {
	opt := &lrOpt{lr: 0.1}
	s, err := NewLinearWarmup(opt, 2, 0.5, mustSched(NewStepLR(opt, 3, 0.5)))
	if err != nil {
		t.Fatal(err)
	}
	for range 7 {
		s.Step()
	}
	text, err := s.State().MarshalText()
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"kind":"LinearWarmup","steps":7,"base_lr":0.1,"inner":{"kind":"StepLR","steps":5,"base_lr":0.1}}`
	if string(text) != want {
		t.Errorf("state text %s, want %s", text, want)
	}
	for _, bad := range []string{
		``, `{}x`, `{"kind":"StepLR","steps":1,"base_lr":0.1,"gamma":2}`, `{"kind":"StepLR","steps":-1,"base_lr":0.1}`,
		`{"kind":"StepLR","steps":1,"base_lr":-0.1}`, `{"kind":"StepLR","steps":1.5,"base_lr":0.1}`, `[1]`,
	} {
		var st SchedulerState
		if err := st.UnmarshalText([]byte(bad)); err == nil || !strings.HasPrefix(err.Error(), "nn: ") {
			t.Errorf("UnmarshalText(%q): error %v, want one starting with nn:", bad, err)
		}
	}
	if _, err := (SchedulerState{Kind: "StepLR", BaseLR: math.NaN()}).MarshalText(); err == nil {
		t.Error("MarshalText of a NaN base_lr: no error")
	}
}

func mustSched(s Scheduler, err error) Scheduler {
	if err != nil {
		panic(err)
	}
	return s
}

func TestSchedulerErrors(t *testing.T) {
	opt := &lrOpt{lr: 0.1}
	bad := map[string]func() (Scheduler, error){
		"step nil opt":        func() (Scheduler, error) { return NewStepLR(nil, 1, 0.5) },
		"step size 0":         func() (Scheduler, error) { return NewStepLR(opt, 0, 0.5) },
		"step gamma 0":        func() (Scheduler, error) { return NewStepLR(opt, 1, 0) },
		"step gamma NaN":      func() (Scheduler, error) { return NewStepLR(opt, 1, math.NaN()) },
		"step lr NaN":         func() (Scheduler, error) { return NewStepLR(&lrOpt{lr: math.NaN()}, 1, 0.5) },
		"step lr -1":          func() (Scheduler, error) { return NewStepLR(&lrOpt{lr: -1}, 1, 0.5) },
		"multistep 0":         func() (Scheduler, error) { return NewMultiStepLR(opt, []int{3, 0}, 0.5) },
		"multistep gamma Inf": func() (Scheduler, error) { return NewMultiStepLR(opt, []int{3}, math.Inf(1)) },
		"exponential -1":      func() (Scheduler, error) { return NewExponentialLR(opt, -1) },
		"cosine tMax 0":       func() (Scheduler, error) { return NewCosineAnnealingLR(opt, 0, 0) },
		"cosine etaMin -1":    func() (Scheduler, error) { return NewCosineAnnealingLR(opt, 10, -1) },
		"cosine etaMin NaN":   func() (Scheduler, error) { return NewCosineAnnealingLR(opt, 10, math.NaN()) },
		"warmup nil":          func() (Scheduler, error) { return NewLinearWarmup(opt, 3, 0.1, nil) },
		"warmup n 0":          func() (Scheduler, error) { return NewLinearWarmup(opt, 0, 0.1, mustSched(NewExponentialLR(opt, 0.9))) },
		"warmup start 0":      func() (Scheduler, error) { return NewLinearWarmup(opt, 3, 0, mustSched(NewExponentialLR(opt, 0.9))) },
		"warmup start 1.5":    func() (Scheduler, error) { return NewLinearWarmup(opt, 3, 1.5, mustSched(NewExponentialLR(opt, 0.9))) },
		"warmup of another optimizer": func() (Scheduler, error) {
			return NewLinearWarmup(opt, 3, 0.1, mustSched(NewCosineAnnealingLR(&lrOpt{lr: 0.5}, 10, 0)))
		},
		"warmup stepped": func() (Scheduler, error) {
			s := mustSched(NewExponentialLR(opt, 0.9))
			s.Step()
			return NewLinearWarmup(opt, 3, 0.1, s)
		},
		"onecycle nil":      func() (Scheduler, error) { return NewOneCycleLR(nil, OneCycleOptions{MaxLR: 1, TotalSteps: 10}) },
		"onecycle no max":   func() (Scheduler, error) { return NewOneCycleLR(opt, OneCycleOptions{TotalSteps: 10}) },
		"onecycle no total": func() (Scheduler, error) { return NewOneCycleLR(opt, OneCycleOptions{MaxLR: 1}) },
		"onecycle pct 1": func() (Scheduler, error) {
			return NewOneCycleLR(opt, OneCycleOptions{MaxLR: 1, TotalSteps: 10, PctStart: 1})
		},
		"onecycle pct -0.1": func() (Scheduler, error) {
			return NewOneCycleLR(opt, OneCycleOptions{MaxLR: 1, TotalSteps: 10, PctStart: -0.1})
		},
		"onecycle empty phase": func() (Scheduler, error) {
			return NewOneCycleLR(opt, OneCycleOptions{MaxLR: 1, TotalSteps: 10, PctStart: 0.1})
		},
		"onecycle div -1": func() (Scheduler, error) {
			return NewOneCycleLR(opt, OneCycleOptions{MaxLR: 1, TotalSteps: 10, DivFactor: -1})
		},
	}
	for name, f := range bad {
		s, err := f()
		if err == nil || s != nil || !strings.HasPrefix(err.Error(), "nn: ") {
			t.Errorf("%s: scheduler %v, error %v; want nil and an error starting with nn:", name, s, err)
		}
	}

	// LoadState refuses another kind, a missing or inconsistent inner state, and bad numbers,
	// and changes nothing then.
	step := mustSched(NewStepLR(opt, 2, 0.5))
	warm := mustSched(NewLinearWarmup(opt, 3, 0.5, mustSched(NewStepLR(opt, 2, 0.5))))
	for range 5 {
		warm.Step()
	}
	opt.lr = 7
	for _, c := range []struct {
		s  Scheduler
		st SchedulerState
	}{
		{step, SchedulerState{Kind: "ExponentialLR", Steps: 1, BaseLR: 0.1}},
		{step, SchedulerState{Kind: "StepLR", Steps: -1, BaseLR: 0.1}},
		{step, SchedulerState{Kind: "StepLR", Steps: 1, BaseLR: math.Inf(1)}},
		{step, SchedulerState{Kind: "StepLR", Steps: 1, BaseLR: 0.1, Inner: &SchedulerState{Kind: "StepLR"}}},
		{warm, SchedulerState{Kind: "LinearWarmup", Steps: 5, BaseLR: 0.1}},
		{warm, SchedulerState{Kind: "LinearWarmup", Steps: 5, BaseLR: 0.1, Inner: &SchedulerState{Kind: "StepLR", Steps: 1, BaseLR: 0.1}}},
		{warm, SchedulerState{Kind: "LinearWarmup", Steps: 5, BaseLR: 0.1, Inner: &SchedulerState{Kind: "ExponentialLR", Steps: 2, BaseLR: 0.1}}},
	} {
		before := c.s.State()
		if err := c.s.LoadState(c.st); err == nil || !strings.HasPrefix(err.Error(), "nn: ") {
			t.Errorf("LoadState(%+v) into %s: error %v", c.st, before.Kind, err)
		}
		if after := c.s.State(); after.Steps != before.Steps || after.BaseLR != before.BaseLR || opt.lr != 7 {
			t.Errorf("failed LoadState(%+v) changed the scheduler (%+v -> %+v) or the optimizer (lr %v)", c.st, before, after, opt.lr)
		}
	}
}

// TestOneCycleEnd: past TotalSteps (where PyTorch raises) the learning rate stays that of step
// TotalSteps; the cycle's last step is at the final learning rate.
func TestOneCycleEnd(t *testing.T) {
	opt := &lrOpt{}
	s, err := NewOneCycleLR(opt, OneCycleOptions{MaxLR: 0.4, TotalSteps: 10})
	if err != nil {
		t.Fatal(err)
	}
	if want := 0.4 / 25; math.Abs(opt.lr-want) > 1e-16 {
		t.Errorf("initial lr %v, want %v", opt.lr, want)
	}
	var lrs []float64
	for range 13 {
		s.Step()
		lrs = append(lrs, opt.lr)
	}
	if final := 0.4 / 25 / 1e4; lrs[8] != final {
		t.Errorf("lr at step 9 %v, want the final %v", lrs[8], final)
	}
	if lrs[1] != 0.4 {
		t.Errorf("lr at step 2 %v, want the peak 0.4", lrs[1])
	}
	for k := 10; k < 13; k++ {
		if lrs[k] != lrs[9] {
			t.Errorf("lr at step %d %v, want that of step 10, %v", k+1, lrs[k], lrs[9])
		}
	}
}

// TestSchedulerDrivesSGD: a scheduler sets autograd's SGD's learning rate.
func TestSchedulerDrivesSGD(t *testing.T) {
	s := autograd.NewSession(autograd.Options{Device: ops.CPU()})
	defer s.Close()
	p := s.Param("w", []int{2}, []float32{1, 2})
	opt := autograd.NewSGD([]*autograd.Param{p}, autograd.SGDOptions{LR: 0.2})
	sched, err := NewExponentialLR(opt, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	sched.Step()
	sched.Step()
	if opt.LR() != 0.05 {
		t.Errorf("SGD lr %v after two steps of gamma 0.5 from 0.2, want 0.05", opt.LR())
	}
}
