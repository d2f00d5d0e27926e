package autograd_test

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/ops"
)

// stateful is what the optimizers have in common.
type stateful interface {
	Step() error
	State() (map[string]*ops.Buffer, error)
	LoadState(map[string]*ops.Buffer) error
}

// fitLine is a small model: a (3, 2) weight and a bias fitted to a fixed batch by MSE.
type fitLine struct {
	s   *autograd.Session
	w   *autograd.Param
	b   *autograd.Param
	opt stateful
}

func newFitLine(d *ops.Device, w, b []float32, opt func(ps []*autograd.Param) stateful) *fitLine {
	s := autograd.NewSession(autograd.Options{Device: d})
	m := &fitLine{s: s, w: s.Param("w", []int{3, 2}, w), b: s.Param("b", []int{3}, b)}
	m.opt = opt(s.Params())
	return m
}

func (m *fitLine) step() {
	s := m.s
	s.Reset()
	x := s.Input([]float32{1, 2, -1, 0.5, 0, 3, 2, -2}, 4, 2)
	y := s.Input([]float32{1, 0, 2, -1, 1, 1, 0.5, 0, 3, 2, -2, 1}, 4, 3)
	s.Backward(s.MSELoss(s.Linear(x, s.Use(m.w), s.Use(m.b)), y))
	m.opt.Step()
	s.ZeroGrad()
}

func (m *fitLine) host(t *testing.T) (w, b []float32) {
	t.Helper()
	w, err := m.w.Host()
	if err == nil {
		b, err = m.b.Host()
	}
	if err != nil {
		t.Fatal(err)
	}
	return w, b
}

var optimizers = []struct {
	name string
	new  func(ps []*autograd.Param) stateful
}{
	{"sgd_momentum", func(ps []*autograd.Param) stateful {
		return autograd.NewSGD(ps, autograd.SGDOptions{LR: 0.05, Momentum: 0.9, Nesterov: true, WeightDecay: 1e-3})
	}},
	{"adam", func(ps []*autograd.Param) stateful {
		o := autograd.DefaultAdam()
		o.LR, o.WeightDecay = 0.01, 1e-3
		return autograd.NewAdam(ps, o)
	}},
	{"adamw", func(ps []*autograd.Param) stateful {
		o := autograd.DefaultAdamW()
		o.LR = 0.01
		return autograd.NewAdamW(ps, o)
	}},
	{"rmsprop", func(ps []*autograd.Param) stateful {
		o := autograd.DefaultRMSprop()
		o.WeightDecay, o.Momentum, o.Centered = 1e-3, 0.5, true
		return autograd.NewRMSprop(ps, o)
	}},
}

// TestOptimizerStateResume: saving the state and parameters after 5 steps and resuming in a
// new session gives the same bits as 12 uninterrupted steps.
func TestOptimizerStateResume(t *testing.T) {
	forDevices(t, func(t *testing.T, d *ops.Device) {
		w0, b0 := []float32{0.1, -0.2, 0.3, 0.4, -0.5, 0.6}, []float32{0, 0.1, -0.1}
		for _, o := range optimizers {
			whole := newFitLine(d, w0, b0, o.new)
			for range 12 {
				whole.step()
			}
			wantW, wantB := whole.host(t)

			first := newFitLine(d, w0, b0, o.new)
			for range 5 {
				first.step()
			}
			state, err := first.opt.State()
			if err != nil {
				t.Fatal(err)
			}
			wantKeys := []string{"b.exp_avg", "b.exp_avg_sq", "b.step", "w.exp_avg", "w.exp_avg_sq", "w.step"}
			switch o.name {
			case "sgd_momentum":
				wantKeys = []string{"b.momentum_buffer", "w.momentum_buffer"}
			case "rmsprop":
				wantKeys = []string{"b.grad_avg", "b.momentum_buffer", "b.square_avg", "b.step",
					"w.grad_avg", "w.momentum_buffer", "w.square_avg", "w.step"}
			}
			if keys := slices.Sorted(maps.Keys(state)); !slices.Equal(keys, wantKeys) {
				t.Errorf("%s: state keys %v, want %v", o.name, keys, wantKeys)
			}
			if st := state["w.step"]; st != nil {
				if got := values(t, st); !slices.Equal(got, []float64{5}) {
					t.Errorf("%s: step %v, want 5", o.name, got)
				}
			}
			w, b := first.host(t)
			first.s.Close() // state holds copies: still live

			second := newFitLine(d, w, b, o.new)
			if err := second.opt.LoadState(state); err != nil {
				t.Fatal(err)
			}
			for _, buf := range state {
				buf.Release()
			}
			for range 7 {
				second.step()
			}
			gotW, gotB := second.host(t)
			if !slices.Equal(f32bits(gotW), f32bits(wantW)) || !slices.Equal(f32bits(gotB), f32bits(wantB)) {
				t.Errorf("%s: resumed run ends at %v %v, uninterrupted at %v %v", o.name, gotW, gotB, wantW, wantB)
			}
			for _, m := range []*fitLine{whole, second} {
				if err := m.s.Err(); err != nil {
					t.Error(err)
				}
				m.s.Close()
			}
		}
	})
}

// TestLoadStateErrors: LoadState checks everything before changing anything.
func TestLoadStateErrors(t *testing.T) {
	d := ops.CPU()
	base := d.Stats().LiveBytes
	adam := optimizers[1].new
	buf := func(v ...float32) *ops.Buffer {
		b, err := ops.FromFloat32(d, v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	full := func() map[string]*ops.Buffer {
		return map[string]*ops.Buffer{"b.exp_avg": buf(0, 0, 0), "b.exp_avg_sq": buf(1, 1, 1), "b.step": buf(3)}
	}
	for _, c := range []struct {
		name string
		edit func(m map[string]*ops.Buffer)
		want string
	}{
		{"ok", func(map[string]*ops.Buffer) {}, ""},
		{"unknown", func(m map[string]*ops.Buffer) { m["c.exp_avg"] = buf(1) }, `unknown key "c.exp_avg"`},
		{"missing", func(m map[string]*ops.Buffer) { m["b.exp_avg"].Release(); delete(m, "b.exp_avg") }, "b.exp_avg is missing"},
		{"length", func(m map[string]*ops.Buffer) { m["b.exp_avg_sq"].Release(); m["b.exp_avg_sq"] = buf(1, 1) }, "b.exp_avg_sq has 2 elements, the parameter 3"},
		{"step", func(m map[string]*ops.Buffer) { m["b.step"].Release(); m["b.step"] = buf(2.5) }, "b.step is [2.5]"},
		{"released", func(m map[string]*ops.Buffer) { m["b.exp_avg"].Release() }, "b.exp_avg: ops: use of released buffer"},
	} {
		m := newFitLine(d, nil, nil, adam)
		st := full()
		c.edit(st)
		err := m.opt.LoadState(st)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
		if c.want == "" {
			got, err := m.opt.State()
			if err != nil {
				t.Fatal(err)
			}
			if keys := slices.Sorted(maps.Keys(got)); !slices.Equal(keys, []string{"b.exp_avg", "b.exp_avg_sq", "b.step"}) {
				t.Errorf("state after LoadState: keys %v", keys)
			}
			if v := values(t, got["b.step"]); !slices.Equal(v, []float64{3}) {
				t.Errorf("step after LoadState: %v", v)
			}
			for _, b := range got {
				b.Release()
			}
		}
		// A rejected state changes nothing: the session trains on.
		m.step()
		if err := m.s.Err(); err != nil {
			t.Errorf("%s: the session after LoadState: %v", c.name, err)
		}
		for _, b := range st {
			b.Release()
		}
		m.s.Close()
	}
	if live := d.Stats().LiveBytes; live != base {
		t.Errorf("live bytes %d, %d before", live, base)
	}
}

// SetLR changes the step of the next updates; a bad rate is a sticky session error.
func TestSetLR(t *testing.T) {
	s := autograd.NewSession(autograd.Options{Device: ops.CPU()})
	p := s.Param("p", []int{2}, []float32{1, 2})
	opt := autograd.NewSGD(s.Params(), autograd.SGDOptions{LR: 1})
	step := func() {
		s.Reset()
		s.Backward(s.Sum(s.Use(p))) // gradient 1 everywhere
		opt.Step()
		opt.ZeroGrad()
	}
	step()
	opt.SetLR(0.25)
	if opt.LR() != 0.25 {
		t.Fatalf("LR() = %v after SetLR(0.25)", opt.LR())
	}
	step()
	got, err := p.Host()
	if err != nil || got[0] != -0.25 || got[1] != 0.75 { // 1 - 1 - 0.25 and 2 - 1 - 0.25
		t.Fatalf("after steps of 1 and 0.25: %v (%v)", got, err)
	}
	opt.SetLR(-1)
	if err := s.Err(); err == nil || !strings.Contains(err.Error(), "sgd") {
		t.Fatalf("SetLR(-1): session error %v", err)
	}
	if opt.LR() != 0.25 {
		t.Errorf("a refused rate replaced the old one: %v", opt.LR())
	}
	opt.Close()
	s.Close()
}

// TestStepBeforeBackward: an optimizer step between a forward pass and its backward pass leaves
// the values the forward pass recorded as they were, so the gradients are those of the recorded
// pass; a step after the backward pass updates the parameters' buffers in place (no copy).
func TestStepBeforeBackward(t *testing.T) {
	forDevices(t, func(t *testing.T, d *ops.Device) {
		s := autograd.NewSession(autograd.Options{Device: d})
		defer s.Close()
		w1 := s.Param("w1", []int{1, 1}, []float32{2})
		w2 := s.Param("w2", []int{1, 1}, []float32{3})
		opt := autograd.NewSGD(s.Params(), autograd.SGDOptions{LR: 0.125})
		forward := func() autograd.Var {
			h := s.Linear(s.Input([]float32{1}, 1, 1), s.Use(w1), autograd.Var{})
			return s.MSELoss(s.Linear(h, s.Use(w2), autograd.Var{}), s.Input([]float32{0}, 1, 1))
		}
		// Backward, then Step: in place.
		before := w2.Value()
		if err := s.Backward(forward()); err != nil {
			t.Fatal(err)
		}
		if err := opt.Step(); err != nil {
			t.Fatal(err)
		}
		if w2.Value() != before {
			t.Error("a step after the backward pass replaced the parameter's buffer")
		}
		// loss = (w1*w2)^2: at (2, 3) the gradients are 36 and 24; at the values after one step,
		// (-2.5, 0), both are 0. Record at (2, 3), step, then differentiate.
		opt.ZeroGrad()
		s.Reset()
		if err := w1.Set([]float32{2}); err != nil {
			t.Fatal(err)
		}
		if err := w2.Set([]float32{3}); err != nil {
			t.Fatal(err)
		}
		if err := s.Backward(forward()); err != nil { // grads 36, 24 at (2, 3)
			t.Fatal(err)
		}
		s.Reset()
		loss := forward() // recorded at (2, 3)
		if err := opt.Step(); err != nil {
			t.Fatal(err)
		}
		opt.ZeroGrad()
		if err := s.Backward(loss); err != nil {
			t.Fatal(err)
		}
		if got := s.Item(loss); got != 36 {
			t.Errorf("recorded loss %v after the step, want 36", got)
		}
		for _, c := range []struct {
			p    *autograd.Param
			want float64
		}{{w1, 36}, {w2, 24}} {
			if g := values(t, c.p.Grad()); len(g) != 1 || g[0] != c.want {
				t.Errorf("%s: gradient %v of the recorded pass, want [%v]", c.p.Name(), g, c.want)
			}
		}
		for _, c := range []struct {
			p    *autograd.Param
			want float32
		}{{w1, 2 - 0.125*36}, {w2, 3 - 0.125*24}} {
			if h, err := c.p.Host(); err != nil || len(h) != 1 || h[0] != c.want {
				t.Errorf("%s after the step: %v (%v), want [%v]", c.p.Name(), h, err, c.want)
			}
		}
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
	})
}

// TestStateStepLimit: State of an Adam past 2^24 steps is an error that leaves the session
// usable.
func TestStateStepLimit(t *testing.T) {
	d := ops.CPU()
	m := newFitLine(d, nil, nil, optimizers[1].new)
	defer m.s.Close()
	st := map[string]*ops.Buffer{}
	for _, p := range []string{"w", "b"} {
		for _, k := range []string{"exp_avg", "exp_avg_sq"} {
			b, err := ops.Zeros(d, map[string]int{"w": 6, "b": 3}[p])
			if err != nil {
				t.Fatal(err)
			}
			st[p+"."+k] = b
		}
		b, err := ops.Full(d, 1, 1<<24)
		if err != nil {
			t.Fatal(err)
		}
		st[p+".step"] = b
	}
	defer func() {
		for _, b := range st {
			b.Release()
		}
	}()
	if err := m.opt.LoadState(st); err != nil {
		t.Fatal(err)
	}
	m.step()
	if _, err := m.opt.State(); err == nil || !strings.Contains(err.Error(), "16777217 steps") {
		t.Errorf("State after 2^24 + 1 steps: %v", err)
	}
	m.step()
	if err := m.s.Err(); err != nil {
		t.Errorf("the session after State failed: %v", err)
	}
}

// TestOptimizerOfFailedParam: an optimizer of a parameter that the session could not create
// reports the session's error.
func TestOptimizerOfFailedParam(t *testing.T) {
	s := autograd.NewSession(autograd.Options{Device: ops.CPU()})
	defer s.Close()
	p := s.Param("w", []int{2}, []float32{1, 2, 3})
	opt := autograd.NewSGD([]*autograd.Param{p}, autograd.SGDOptions{LR: 1})
	if err := opt.Step(); err == nil || !strings.Contains(err.Error(), "3 values for shape [2]") {
		t.Errorf("Step: %v, want the session's error about the values", err)
	}
}

// TestStepAfterNoGradEval: a step after an evaluation under NoGrad (no node requires grad, so no
// backward pass can read the recorded values) updates the parameter in place, without a copy.
func TestStepAfterNoGradEval(t *testing.T) {
	s := autograd.NewSession(autograd.Options{Device: ops.CPU()})
	defer s.Close()
	w := s.Param("w", []int{2}, []float32{1, 2})
	opt := autograd.NewSGD(s.Params(), autograd.SGDOptions{LR: 0.5})
	s.Backward(s.Sum(s.Use(w)))
	s.Reset()
	before := w.Value()
	s.NoGrad(func() { s.Sum(s.Mul(s.Use(w), s.Use(w))) })
	if err := opt.Step(); err != nil {
		t.Fatal(err)
	}
	if w.Value() != before {
		t.Error("a step after a NoGrad evaluation copied the parameter")
	}
	if h, _ := w.Host(); !slices.Equal(h, []float32{0.5, 1.5}) {
		t.Errorf("w after the step: %v", h)
	}
}

// TestOptimizerOverlap: a parameter given to a second open optimizer is an error (it would be
// stepped twice); once the first is closed, a new optimizer may take it.
func TestOptimizerOverlap(t *testing.T) {
	s := autograd.NewSession(autograd.Options{Device: ops.CPU()})
	defer s.Close()
	w := s.Param("w", []int{2}, []float32{1, 2})
	b := s.Param("b", []int{1}, []float32{0})
	autograd.NewAdamW([]*autograd.Param{w}, autograd.DefaultAdamW())
	second := autograd.NewSGD([]*autograd.Param{b, w}, autograd.SGDOptions{LR: 0.1})
	if err := second.Step(); err == nil || !strings.Contains(err.Error(), "parameter w is already updated by an open adamw optimizer") {
		t.Fatalf("second optimizer on w: %v", err)
	}
	s2 := autograd.NewSession(autograd.Options{Device: ops.CPU()})
	defer s2.Close()
	w2 := s2.Param("w", []int{2}, []float32{1, 2})
	first2 := autograd.NewAdamW([]*autograd.Param{w2}, autograd.DefaultAdamW())
	first2.Close()
	if err := autograd.NewSGD([]*autograd.Param{w2}, autograd.SGDOptions{LR: 0.1}).Step(); err != nil {
		t.Errorf("a new optimizer after Close: %v", err)
	}
}

// rmspropStepRef is one RMSprop step in float32, operation by operation as cpu.RMSpropStep's doc
// comment states it (the kernels' arithmetic, on every device).
func rmspropStepRef(o autograd.RMSpropOptions, p, g, sq, ga, buf []float32) {
	lr, alpha, oma := float32(o.LR), float32(o.Alpha), float32(1-o.Alpha)
	eps, wd, mom := float32(o.Eps), float32(o.WeightDecay), float32(o.Momentum)
	for i := range p {
		gi := g[i]
		if wd != 0 {
			gi = gi + float32(wd*p[i])
		}
		s := float32(alpha*sq[i]) + float32(float32(oma*gi)*gi)
		sq[i] = s
		var avg float32
		if o.Centered {
			a := float32(alpha*ga[i]) + float32(oma*gi)
			ga[i] = a
			avg = float32(math.Sqrt(float64(s-float32(a*a)))) + eps
		} else {
			avg = float32(math.Sqrt(float64(s))) + eps
		}
		if o.Momentum != 0 {
			b := float32(mom*buf[i]) + gi/avg
			buf[i] = b
			p[i] = p[i] - float32(lr*b)
		} else {
			p[i] = p[i] - float32(lr*gi)/avg
		}
	}
}

// TestRMSpropAgainstPyTorch runs three RMSprop steps of fixed gradients from PyTorch's
// torch.optim.RMSprop runs (testdata/torch_reference.json): the parameters after each step and
// the final state match PyTorch's to float32 rounding (PyTorch's CPU kernels contract some
// products into fmas), and match the kernels' stated float32 arithmetic bit for bit.
func TestRMSpropAgainstPyTorch(t *testing.T) {
	ref := loadTorchReference(t)
	forDevices(t, func(t *testing.T, d *ops.Device) {
		for _, c := range ref.RMSprop {
			o := autograd.DefaultRMSprop()
			if c.Opts.LR != nil {
				o.LR = *c.Opts.LR
			}
			if c.Opts.Alpha != nil {
				o.Alpha = *c.Opts.Alpha
			}
			if c.Opts.Eps != nil {
				o.Eps = *c.Opts.Eps
			}
			o.WeightDecay, o.Momentum, o.Centered = c.Opts.WeightDecay, c.Opts.Momentum, c.Opts.Centered
			s := autograd.NewSession(autograd.Options{Device: d})
			p := s.Param("p", []int{len(c.P0)}, f32s(c.P0))
			opt := autograd.NewRMSprop(s.Params(), o)
			n := len(c.P0)
			rp, rsq, rga, rbuf := f32s(c.P0), make([]float32, n), make([]float32, n), make([]float32, n)
			for k, g := range c.Grads {
				s.Reset()
				s.Backward(s.Sum(s.Mul(s.Use(p), s.Input(f32s(g), n)))) // gradient g
				if err := opt.Step(); err != nil {
					t.Fatal(err)
				}
				opt.ZeroGrad()
				rmspropStepRef(o, rp, f32s(g), rsq, rga, rbuf)
				got, err := p.Host()
				if err != nil {
					t.Fatal(err)
				}
				if closeTo(f64s(got), c.Params[k], 2e-6) >= 0 {
					t.Errorf("%+v, step %d: %v, PyTorch's %v", o, k+1, got, c.Params[k])
				}
				if !slices.Equal(f32bits(got), f32bits(rp)) {
					t.Errorf("%+v, step %d: %v, the stated float32 arithmetic gives %v", o, k+1, got, rp)
				}
			}
			state, err := opt.State()
			if err != nil {
				t.Fatal(err)
			}
			for key, want := range map[string][]float64{"p.square_avg": c.SquareAvg, "p.momentum_buffer": c.MomentumBuffer,
				"p.grad_avg": c.GradAvg, "p.step": {c.Step}} {
				b := state[key]
				switch {
				case want == nil && b != nil:
					t.Errorf("%+v: state has %s, PyTorch's has not", o, key)
				case want != nil && b == nil:
					t.Errorf("%+v: state lacks %s", o, key)
				case want != nil && closeTo(values(t, b), want, 2e-6) >= 0:
					t.Errorf("%+v: %s = %v, PyTorch's %v", o, key, values(t, b), want)
				}
			}
			for _, b := range state {
				b.Release()
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// TestRMSpropOptions: bad hyperparameters are session errors naming rmsprop; SetLR as for SGD.
func TestRMSpropOptions(t *testing.T) {
	for _, c := range []struct {
		o    autograd.RMSpropOptions
		want string
	}{
		{autograd.RMSpropOptions{LR: 0.01}, "start from DefaultRMSprop"},
		{autograd.RMSpropOptions{LR: -1, Alpha: 0.99}, "rmsprop: learning rate -1"},
		{autograd.RMSpropOptions{LR: 0.01, Alpha: 0.99, Momentum: math.Inf(1)}, "rmsprop: momentum +Inf"},
	} {
		s := autograd.NewSession(autograd.Options{Device: ops.CPU()})
		autograd.NewRMSprop([]*autograd.Param{s.Param("p", []int{1}, nil)}, c.o)
		if err := s.Err(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one containing %q", c.o, err, c.want)
		}
		s.Close()
	}
	s := autograd.NewSession(autograd.Options{Device: ops.CPU()})
	defer s.Close()
	opt := autograd.NewRMSprop([]*autograd.Param{s.Param("p", []int{1}, nil)}, autograd.DefaultRMSprop())
	if opt.LR() != 1e-2 {
		t.Errorf("default LR %v", opt.LR())
	}
	opt.SetLR(0.5)
	if opt.LR() != 0.5 || s.Err() != nil {
		t.Errorf("SetLR(0.5): LR %v, error %v", opt.LR(), s.Err())
	}
	opt.SetLR(math.NaN())
	if err := s.Err(); err == nil || !strings.Contains(err.Error(), "rmsprop") || opt.LR() != 0.5 {
		t.Errorf("SetLR(NaN): error %v, LR %v", err, opt.LR())
	}
}

func f32s(v []float64) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}

func f64s(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

// Minimize (p - 3)² with RMSprop from PyTorch's defaults and a larger learning rate.
func ExampleNewRMSprop() {
	s := autograd.NewSession(autograd.Options{Device: ops.CPU()})
	defer s.Close()
	p := s.Param("p", []int{1}, []float32{0})
	o := autograd.DefaultRMSprop()
	o.LR = 0.1
	opt := autograd.NewRMSprop(s.Params(), o)
	for range 100 {
		s.Reset()
		d := s.AddScalar(s.Use(p), -3)
		s.Backward(s.Sum(s.Mul(d, d)))
		opt.Step()
		opt.ZeroGrad()
	}
	v, _ := p.Host()
	fmt.Printf("p = %.2f, err %v\n", v[0], s.Err())
	// Output: p = 3.00, err <nil>
}
