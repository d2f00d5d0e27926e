package autograd_test

import (
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/ops"
)

// xorRun is the outcome of trainXOR.
type xorRun struct {
	losses []float32
	params [][]float32
}

// trainXOR trains a 2-8-1 tanh MLP on XOR (with dropout on the hidden layer when dropout > 0)
// with opt on d for steps steps, closes the session and returns the losses and the final
// parameters.
func trainXOR(t *testing.T, d *ops.Device, seed uint64, steps int, dropout float64,
	opt func(ps []*autograd.Param) interface{ Step() error }) xorRun {
	t.Helper()
	s := autograd.NewSession(autograd.Options{Device: d, Seed: seed})
	defer s.Close()
	w1 := s.ParamUniform("w1", []int{8, 2}, -1, 1)
	b1 := s.Param("b1", []int{8}, nil)
	w2 := s.ParamUniform("w2", []int{1, 8}, -1, 1)
	b2 := s.Param("b2", []int{1}, nil)
	o := opt(s.Params())
	x := []float32{0, 0, 0, 1, 1, 0, 1, 1}
	y := []float32{0, 1, 1, 0}
	var run xorRun
	for range steps {
		s.Reset()
		h := s.Tanh(s.Linear(s.Input(x, 4, 2), s.Use(w1), s.Use(b1)))
		if dropout > 0 {
			h = s.Dropout(h, dropout)
		}
		loss := s.MSELoss(s.Linear(h, s.Use(w2), s.Use(b2)), s.Input(y, 4, 1))
		s.Backward(loss)
		o.Step()
		s.ZeroGrad()
		run.losses = append(run.losses, s.Item(loss))
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	for _, p := range s.Params() {
		h, err := p.Host()
		if err != nil {
			t.Fatal(err)
		}
		run.params = append(run.params, h)
	}
	return run
}

func adamW(lr float64) func(ps []*autograd.Param) interface{ Step() error } {
	return func(ps []*autograd.Param) interface{ Step() error } {
		o := autograd.DefaultAdamW()
		o.LR = lr
		return autograd.NewAdamW(ps, o)
	}
}

// TestSessionTrainsXOR: the MLP learns XOR with AdamW and with SGD + momentum, and Close gives
// every byte back (forDevices checks the live bytes).
func TestSessionTrainsXOR(t *testing.T) {
	forDevices(t, func(t *testing.T, d *ops.Device) {
		for _, c := range []struct {
			name string
			opt  func(ps []*autograd.Param) interface{ Step() error }
		}{
			{"adamw", adamW(0.05)},
			{"sgd", func(ps []*autograd.Param) interface{ Step() error } {
				return autograd.NewSGD(ps, autograd.SGDOptions{LR: 0.1, Momentum: 0.9})
			}},
		} {
			run := trainXOR(t, d, 7, 400, 0, c.opt)
			if l := run.losses[len(run.losses)-1]; !(l < 1e-3) {
				t.Errorf("%s: final loss %g (first %g), want < 1e-3", c.name, l, run.losses[0])
			}
		}
	})
}

// TestSessionBitExact: two runs from the same seed (random initialization and dropout masks)
// give the same bits; another seed does not.
func TestSessionBitExact(t *testing.T) {
	a := trainXOR(t, ops.CPU(), 11, 50, 0.25, adamW(0.02))
	b := trainXOR(t, ops.CPU(), 11, 50, 0.25, adamW(0.02))
	c := trainXOR(t, ops.CPU(), 12, 50, 0.25, adamW(0.02))
	if !slices.Equal(f32bits(a.losses), f32bits(b.losses)) || !slices.EqualFunc(a.params, b.params, func(x, y []float32) bool {
		return slices.Equal(f32bits(x), f32bits(y))
	}) {
		t.Error("two runs from the same seed differ")
	}
	if slices.Equal(f32bits(a.losses), f32bits(c.losses)) {
		t.Error("runs from different seeds agree")
	}
}

func f32bits(x []float32) []uint32 {
	out := make([]uint32, len(x))
	for i, v := range x {
		out[i] = math.Float32bits(v)
	}
	return out
}

// TestSessionErrors: user errors never panic; the first one is kept, later ops are no-ops,
// and Backward, Step, Reset and Err report it.
func TestSessionErrors(t *testing.T) {
	forDevices(t, func(t *testing.T, d *ops.Device) {
		s := autograd.NewSession(autograd.Options{Device: d})
		defer s.Close()
		w := s.Param("w", []int{2, 3}, []float32{1, 2, 3, 4, 5, 6})
		opt := autograd.NewSGD(s.Params(), autograd.SGDOptions{LR: 0.1})
		x := s.Input([]float32{1, 2}, 2)
		bad := s.MatMul(s.Use(w), s.Reshape(x, 1, 2)) // (2, 3) · (1, 2)
		if bad.Valid() {
			t.Fatal("a bad matmul returned a valid Var")
		}
		first := s.Err()
		if first == nil || !strings.Contains(first.Error(), "matmul") || !strings.Contains(first.Error(), "[2 3] and [1 2]") {
			t.Fatalf("error %v, want the matmul's with the shapes", first)
		}
		if v := s.Input([]float32{1}, 1); v.Valid() {
			t.Error("an op after the error returned a valid Var")
		}
		if err := s.Backward(bad); err != first {
			t.Errorf("Backward returned %v, want the first error", err)
		}
		if err := opt.Step(); err != first {
			t.Errorf("Step returned %v, want the first error", err)
		}
		s.Reset()
		if v := s.Use(w); v.Valid() || s.Err() != first {
			t.Errorf("after Reset: Use valid %v, error %v; want the first error kept", v.Valid(), s.Err())
		}
		if h, err := w.Host(); err != nil || !slices.Equal(h, []float32{1, 2, 3, 4, 5, 6}) {
			t.Errorf("a parameter of a failed session reads %v, %v", h, err)
		}
		if v := s.Item(bad); !math.IsNaN(float64(v)) {
			t.Errorf("Item after the error: %v, want NaN", v)
		}
		if st, err := opt.State(); err != nil || len(st) != 0 {
			t.Errorf("State after the error: %v, %v; want the (empty) state", st, err)
		}
	})

	// The optimizer state of the last good step can be saved after an error.
	forDevices(t, func(t *testing.T, d *ops.Device) {
		s := autograd.NewSession(autograd.Options{Device: d})
		defer s.Close()
		w := s.Param("w", []int{2}, []float32{1, 2})
		opt := autograd.NewAdam(s.Params(), autograd.AdamOptions{LR: 0.1, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8})
		s.Backward(s.Sum(s.Mul(s.Use(w), s.Use(w))))
		opt.Step()
		s.Reset()
		s.Input([]float32{1}, 2) // the error
		st, err := opt.State()
		if err != nil || len(st) != 3 {
			t.Fatalf("State after an error: %d entries, %v", len(st), err)
		}
		if h, _ := st["w.step"].Float32s(); !slices.Equal(h, []float32{1}) {
			t.Errorf("step %v, want [1]", h)
		}
		for _, b := range st {
			b.Release()
		}
		s.Close()
		if _, err := opt.State(); err == nil {
			t.Error("State after Close: no error")
		}
	})

	// Each of these is recorded as the session's first error, with a clear message; Close
	// releases everything all the same.
	base := ops.CPU().Stats().LiveBytes
	for _, c := range []struct {
		name string
		f    func(s *autograd.Session)
		want string
	}{
		{"input size", func(s *autograd.Session) { s.Input([]float32{1, 2, 3}, 2, 2) }, "input: 3 values for shape [2 2]"},
		{"input no shape", func(s *autograd.Session) { s.Input([]float32{1, 2, 3}) }, "input: 3 values for shape [] (a scalar): pass the shape after the values, e.g. 3 for a vector"},
		{"param size", func(s *autograd.Session) { s.Param("p", []int{2}, []float32{1}) }, "param: p: 1 values for shape [2]"},
		{"param name", func(s *autograd.Session) { s.Param("p", nil, nil); s.Param("p", nil, nil) }, `name "p" is taken`},
		{"empty param name", func(s *autograd.Session) { s.Param("", nil, nil) }, `param: the name is empty`},
		{"negative shape", func(s *autograd.Session) { s.Uniform(2, -1) }, "negative dimension"},
		{"bernoulli", func(s *autograd.Session) { s.Bernoulli(1.5, 3) }, "keep probability 1.5"},
		{"set size", func(s *autograd.Session) { s.Param("p", []int{2}, nil).Set([]float32{1}) }, "set: p: 1 values"},
		{"foreign param", func(s *autograd.Session) {
			o := autograd.NewSession(autograd.Options{Device: ops.CPU()})
			defer o.Close()
			s.Use(o.Param("q", nil, nil))
		}, "another session"},
		{"optimizer", func(s *autograd.Session) {
			autograd.NewAdam(s.Params(), autograd.AdamOptions{LR: 1e-3, Beta1: 0.9, Beta2: 0.999})
		}, "autograd: adam: eps 0 is not a finite float32 > 0"},
		{"mixed sessions", func(s *autograd.Session) {
			o := autograd.NewSession(autograd.Options{Device: ops.CPU()})
			defer o.Close()
			autograd.NewSGD([]*autograd.Param{s.Param("a", nil, nil), o.Param("b", nil, nil)}, autograd.SGDOptions{})
		}, "parameter b belongs to another session"},
		{"stale ints", func(s *autograd.Session) {
			r := s.Ints(1, 2)
			s.Reset()
			r.Values()
		}, "stale after Reset"},
		{"negative index", func(s *autograd.Session) { s.Ints(0, -1).Indices() }, "index -1"},
		{"released value", func(s *autograd.Session) {
			p := s.Param("p", []int{1}, nil)
			p.Value().Release()
			s.Use(p)
		}, "use: parameter p: ops: use of released buffer"},
		{"item", func(s *autograd.Session) { s.Item(s.Uniform(2)) }, "item: the value has shape [2]"},
		{"no grad", func(s *autograd.Session) { s.Backward(s.Sum(s.Input([]float32{1}, 1))) }, "does not require grad"},
		{"twice", func(s *autograd.Session) {
			p := s.Param("p", []int{1}, nil)
			l := s.Sum(s.Use(p))
			s.Backward(l)
			s.Backward(l)
		}, "already differentiated"},
	} {
		s := autograd.NewSession(autograd.Options{Device: ops.CPU()})
		s.Param("a0", nil, nil) // so that the optimizer case has a parameter
		c.f(s)
		if err := s.Err(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
		s.Close()
		if err := s.Err(); err == nil {
			t.Errorf("%s: no error after Close", c.name)
		}
	}
	if live := ops.CPU().Stats().LiveBytes; live != base {
		t.Errorf("live bytes %d after the failed sessions, %d before", live, base)
	}
	s := autograd.NewSession(autograd.Options{Device: ops.CPU()})
	s.Close()
	if s.Input([]float32{1}, 1).Valid() || !errors.Is(s.Err(), autograd.ErrClosed) {
		t.Errorf("a closed session: error %v, want closed", s.Err())
	}
}

// TestSessionShapeOverflow: a shape whose element count overflows (here wrapping to 0, the
// length of the values given) is an error, not an empty tensor with huge dimensions.
func TestSessionShapeOverflow(t *testing.T) {
	forDevices(t, func(t *testing.T, d *ops.Device) {
		s := autograd.NewSession(autograd.Options{Device: d})
		defer s.Close()
		if v := s.Input(nil, 1<<(strconv.IntSize/2), 1<<(strconv.IntSize/2)); v.Valid() || s.Err() == nil ||
			!strings.Contains(s.Err().Error(), "too many elements") {
			t.Errorf("Input of shape (2^32, 2^32): valid %v, error %v", v.Valid(), s.Err())
		}
		s2 := autograd.NewSession(autograd.Options{Device: d})
		defer s2.Close()
		x := s2.Input([]float32{1, 2, 3, 4, 5, 6}, 2, 3)
		if v := s2.Slice(x, math.MaxInt, 2); v.Valid() || s2.Err() == nil ||
			!strings.Contains(s2.Err().Error(), "outside dim 0") {
			t.Errorf("Slice from MaxInt: valid %v, error %v", v.Valid(), s2.Err())
		}
	})
}

// TestSessionParams: explicit host sync, Set, gradient accumulation across steps, ZeroGrad, and
// skipped parameters without a gradient.
func TestSessionParams(t *testing.T) {
	forDevices(t, func(t *testing.T, d *ops.Device) {
		s := autograd.NewSession(autograd.Options{Device: d})
		defer s.Close()
		p := s.Param("p", []int{2}, []float32{1, 2})
		q := s.Param("q", []int{2}, []float32{5, 5})
		opt := autograd.NewSGD(s.Params(), autograd.SGDOptions{LR: 0.5})
		if p.Name() != "p" || !slices.Equal(p.Shape(), []int{2}) || !p.RequiresGrad() {
			t.Errorf("name %q shape %v requires grad %v", p.Name(), p.Shape(), p.RequiresGrad())
		}

		// loss = sum(p*p) + sum(p): gradient 2p + 1 = (3, 5), twice over two steps. q is used
		// but the loss does not depend on it: it gets no gradient (PyTorch's None).
		for range 2 {
			s.Reset()
			v := s.Use(p)
			s.Mul(s.Use(q), s.Use(q))
			s.Backward(s.Add(s.Sum(s.Mul(v, v)), s.Sum(s.Use(p))))
		}
		if got := values(t, p.Grad()); !slices.Equal(got, []float64{6, 10}) {
			t.Errorf("accumulated gradient %v, want [6 10]", got)
		}
		if q.Grad() != nil {
			t.Error("a parameter the loss does not depend on has a gradient")
		}
		if err := opt.Step(); err != nil {
			t.Fatal(err)
		}
		h, err := p.Host()
		if err != nil || !slices.Equal(h, []float32{-2, -3}) {
			t.Errorf("after a step p = %v, %v; want [-2 -3] (1 - 0.5*6, 2 - 0.5*10)", h, err)
		}
		if h, _ := q.Host(); !slices.Equal(h, []float32{5, 5}) {
			t.Errorf("a parameter without gradient moved: %v", h)
		}
		opt.ZeroGrad()
		if p.Grad() != nil {
			t.Error("ZeroGrad kept a gradient")
		}

		// Set during a step: the tape keeps reading the old buffer until Reset.
		s.Reset()
		v := s.Use(p)
		if err := p.Set([]float32{7, 8}); err != nil {
			t.Fatal(err)
		}
		if got := values(t, s.Value(v)); !slices.Equal(got, []float64{-2, -3}) {
			t.Errorf("the step's leaf reads %v after Set, want the old value", got)
		}
		if got := values(t, p.Value()); !slices.Equal(got, []float64{7, 8}) {
			t.Errorf("Value after Set: %v", got)
		}

		// A frozen parameter is recorded without gradient; NoGrad records nothing that requires grad.
		q.SetRequiresGrad(false)
		s.Reset()
		if s.RequiresGrad(s.Use(q)) {
			t.Error("a frozen parameter requires grad")
		}
		s.NoGrad(func() {
			if s.RequiresGrad(s.Mul(s.Use(p), s.Use(p))) {
				t.Error("a value computed inside NoGrad requires grad")
			}
		})
		if !s.RequiresGrad(s.Use(p)) {
			t.Error("after NoGrad, Use records no gradient")
		}
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
	})
}

// TestSessionInputsAndRandom: InputGrad gradients, the random draws' keys (not reset by Reset),
// and integer inputs for the indexing ops.
func TestSessionInputsAndRandom(t *testing.T) {
	forDevices(t, func(t *testing.T, d *ops.Device) {
		const seed = 42
		s := autograd.NewSession(autograd.Options{Device: d, Seed: seed})
		defer s.Close()
		x := s.InputGrad([]float32{1, -2, 3}, 3)
		s.Backward(s.Sum(s.Mul(x, x)))
		if got := values(t, s.Grad(x)); !slices.Equal(got, []float64{2, -4, 6}) {
			t.Errorf("InputGrad gradient %v, want 2x", got)
		}

		u := s.Uniform(2, 3)
		s.Reset()
		m := s.Bernoulli(0.5, 1000)
		drawn := [][]float64{values(t, s.Value(u)), values(t, s.Value(m))}
		if drawn[0] != nil {
			t.Error("a draw of the previous step is still readable")
		}
		mask, _ := ops.BernoulliMask(ops.CPU(), 1000, 0.5, ops.KeyOf(seed, 1))
		if want := values(t, mask); !slices.Equal(drawn[1], want) {
			t.Error("the second draw does not use KeyOf(seed, 1)")
		}
		mask.Release()
		if k := s.NextKey(); k != ops.KeyOf(seed, 2) {
			t.Errorf("NextKey %#x, want KeyOf(seed, 2)", k)
		}
		// RandomState / SetRandomState: a resumed session draws what the first one drew next.
		rs, rd := s.RandomState()
		if rs != seed || rd != 3 {
			t.Errorf("RandomState = %d, %d; want %d, 3", rs, rd, seed)
		}
		next := values(t, s.Value(s.Uniform(5)))
		resumed := autograd.NewSession(autograd.Options{Device: d, Seed: 7})
		resumed.SetRandomState(rs, rd)
		if got := values(t, resumed.Value(resumed.Uniform(5))); !slices.Equal(got, next) {
			t.Errorf("after SetRandomState the draw is %v, want %v", got, next)
		}
		resumed.Close()

		// Integer inputs: gather rows 2, 0 of a (3, 2) matrix; the gradient scatters back.
		r := s.Ints(2, 0)
		mat := s.InputGrad([]float32{1, 2, 3, 4, 5, 6}, 3, 2)
		g := s.GatherIdx(mat, r.Indices())
		if got := values(t, s.Value(g)); !slices.Equal(got, []float64{5, 6, 1, 2}) {
			t.Errorf("gather %v, want [5 6 1 2]", got)
		}
		r.Set(1)
		if got := r.Values(); !slices.Equal(got, []int{1}) {
			t.Errorf("Values after Set: %v", got)
		}
		g2 := s.GatherIdx(mat, r.Indices())
		s.Backward(s.Add(s.Sum(g), s.Sum(g2)))
		if got := values(t, s.Grad(mat)); !slices.Equal(got, []float64{1, 1, 1, 1, 1, 1}) {
			t.Errorf("gradient through both gathers %v, want ones", got)
		}
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
	})
}

// TestParamCreationLimits: a zero parameter too large for the device is the allocator's error
// (nothing is allocated on the host first), zeros are downloaded on demand, ParamUniform refuses
// bounds that are not a finite interval (as PyTorch's uniform_ does) and gives lo when lo == hi,
// and Host fails once the session is closed.
func TestParamCreationLimits(t *testing.T) {
	forDevices(t, func(t *testing.T, d *ops.Device) {
		s := autograd.NewSession(autograd.Options{Device: d})
		s.Param("huge", []int{1 << 20, 1 << 20}, nil)
		// Where int has 32 bits, 2^40 elements are too many to count, not too many to allocate.
		if err := s.Err(); !errors.Is(err, ops.ErrOutOfMemory) && (strconv.IntSize == 64 || !strings.Contains(err.Error(), "too many elements")) {
			t.Errorf("Param of 2^40 zeros: error %v, want ops.ErrOutOfMemory", err)
		}
		s.Close()
		if strconv.IntSize == 64 { // 2^40 channels: ones made on the device, not a host slice
			s = autograd.NewSession(autograd.Options{Device: d})
			shift := 40
			s.NewBatchNorm("bn", 1<<shift)
			if err := s.Err(); !errors.Is(err, ops.ErrOutOfMemory) {
				t.Errorf("NewBatchNorm of 2^40 channels: error %v, want ops.ErrOutOfMemory", err)
			}
			s.Close()
		}
		s = autograd.NewSession(autograd.Options{Device: d})
		bn := s.NewBatchNorm("bn", 3)
		for _, p := range []*autograd.Param{bn.Weight, bn.RunningVar} {
			if h, err := p.Host(); err != nil || !slices.Equal(h, []float32{1, 1, 1}) {
				t.Errorf("%s: %v, %v; want ones", p.Name(), h, err)
			}
		}
		s.Close()

		s = autograd.NewSession(autograd.Options{Device: d})
		z := s.Param("z", []int{3}, nil)
		c := s.ParamUniform("c", []int{4}, 0.5, 0.5)
		if h, err := z.Host(); err != nil || !slices.Equal(h, []float32{0, 0, 0}) {
			t.Errorf("zero parameter: %v, %v", h, err)
		}
		if h, err := c.Host(); err != nil || !slices.Equal(h, []float32{0.5, 0.5, 0.5, 0.5}) {
			t.Errorf("ParamUniform(0.5, 0.5): %v, %v", h, err)
		}
		s.Close()
		if h, err := c.Host(); err == nil {
			t.Errorf("Host after Close: %v, no error", h)
		}

		inf := math.Inf(1)
		for _, b := range [][2]float64{{1, -1}, {math.NaN(), 1}, {0, inf}, {inf, inf}, {-inf, -inf},
			{1e39, 1e39}, {-math.MaxFloat32, math.MaxFloat32}} {
			s := autograd.NewSession(autograd.Options{Device: d})
			s.ParamUniform("w", []int{2}, b[0], b[1])
			if err := s.Err(); err == nil || !strings.Contains(err.Error(), "uniform bounds") {
				t.Errorf("ParamUniform(%v, %v): error %v", b[0], b[1], err)
			}
			s.Close()
		}
	})
}

// TestOptimizerWithoutParams: an optimizer of no parameters has no session to record a bad
// learning rate in; it keeps the old rate and Step returns the error.
func TestOptimizerWithoutParams(t *testing.T) {
	o := autograd.NewSGD(nil, autograd.SGDOptions{LR: 1})
	if err := o.Step(); err != nil {
		t.Fatalf("Step with no parameters: %v", err)
	}
	o.SetLR(-5)
	if err := o.Step(); o.LR() != 1 || err == nil {
		t.Errorf("after SetLR(-5): LR %v, Step error %v; want 1 and an error", o.LR(), err)
	}
}

// TestSessionBackwardVariants: BackwardWith (a non-scalar output and its seed) and
// BackwardParams (only the inputs asked for) add into Param.Grad like Backward, and leave the
// gradients of the other listed leaves to Grad.
func TestSessionBackwardVariants(t *testing.T) {
	forDevices(t, func(t *testing.T, d *ops.Device) {
		s := autograd.NewSession(autograd.Options{Device: d})
		defer s.Close()
		p := s.Param("p", []int{3}, []float32{1, 2, 3})
		q := s.Param("q", []int{3}, []float32{1, 1, 1})

		// y = p*p (per element) seeded with (1, 10, 100): dp = 2p * seed.
		seed, err := ops.FromFloat32(d, []float32{1, 10, 100})
		if err != nil {
			t.Fatal(err)
		}
		defer seed.Release()
		pv := s.Use(p)
		if err := s.BackwardWith(s.Mul(pv, pv), seed); err != nil {
			t.Fatal(err)
		}
		if got := values(t, p.Grad()); !slices.Equal(got, []float64{2, 40, 600}) {
			t.Errorf("BackwardWith: p.Grad %v, want [2 40 600]", got)
		}

		// loss = sum(p*q) + sum(x*x), restricted to p's use and the input x: p.Grad grows by q,
		// x's gradient is read with Grad, q gets nothing.
		s.Reset()
		x := s.InputGrad([]float32{1, -1}, 2)
		pu := s.Use(p)
		loss := s.Add(s.Sum(s.Mul(pu, s.Use(q))), s.Sum(s.Mul(x, x)))
		if err := s.BackwardParams(loss, pu, x); err != nil {
			t.Fatal(err)
		}
		if got := values(t, p.Grad()); !slices.Equal(got, []float64{3, 41, 601}) {
			t.Errorf("BackwardParams: p.Grad %v, want [3 41 601]", got)
		}
		if q.Grad() != nil {
			t.Error("BackwardParams: q, not among the inputs, got a gradient")
		}
		if got := values(t, s.Grad(x)); !slices.Equal(got, []float64{2, -2}) {
			t.Errorf("BackwardParams: x's gradient %v, want [2 -2]", got)
		}

		s.Reset()
		if err := s.BackwardParams(s.Sum(s.Use(p))); err == nil || !strings.Contains(err.Error(), "no inputs") {
			t.Errorf("BackwardParams with no inputs: %v", err)
		}

		// BackwardFrom with a seed count that does not match fails cleanly.
		s2 := autograd.NewSession(autograd.Options{Device: d})
		defer s2.Close()
		r := s2.Param("r", []int{1}, []float32{2})
		if err := s2.BackwardFrom([]autograd.Var{s2.Use(r)}, nil); err == nil || !strings.Contains(err.Error(), "1 outputs and 0 seeds") {
			t.Errorf("BackwardFrom without seeds: %v", err)
		}
	})
}

// TestSessionTape: code written against *Tape, handed a session's tape, trains the session's
// parameters: the tape's Backward and Reset are the session's (no silently missing gradient, no
// inputs left live after its Reset).
func TestSessionTape(t *testing.T) {
	forDevices(t, func(t *testing.T, d *ops.Device) {
		base := d.Stats().LiveBytes
		s := autograd.NewSession(autograd.Options{Device: d})
		w := s.Param("w", []int{2}, []float32{1, 2})
		var tp *autograd.Tape = s.Tape
		var after []int64
		for range 3 {
			x := s.Input([]float32{3, 4}, 2)
			if err := tp.Backward(tp.Sum(tp.Mul(s.Use(w), x))); err != nil {
				t.Fatal(err)
			}
			tp.Reset()
			after = append(after, d.Stats().LiveBytes)
		}
		g, err := w.Grad().Float32s()
		if err != nil || !slices.Equal(g, []float32{9, 12}) {
			t.Errorf("gradient %v, %v; want [9 12] (three steps through the tape)", g, err)
		}
		if after[2] != after[0] {
			t.Errorf("live bytes after each step's Reset: %v (the inputs must be released)", after)
		}
		if tp.Leaf(nil, nil, false); tp.Err() == nil || s.Err() != tp.Err() {
			t.Errorf("the tape's Err %v, the session's %v: want the same error", tp.Err(), s.Err())
		}
		s.Close()
		if live := d.Stats().LiveBytes; live != base {
			t.Errorf("live bytes %d after Close, %d before", live, base)
		}
	})
}

// TestParamNormal: ParamNormal holds ops.RandNormal's draws for the session's next key, the same
// on every device, and refuses a std that is negative or not finite.
func TestParamNormal(t *testing.T) {
	want := func(seed uint64) []float32 {
		s := autograd.NewSession(autograd.Options{Device: ops.CPU(), Seed: seed})
		defer s.Close()
		s.ParamUniform("first", []int{3}, 0, 1) // one earlier draw
		b, err := ops.RandNormal(ops.CPU(), 6, 0.5, 0.02, s.NextKey())
		if err != nil {
			t.Fatal(err)
		}
		defer b.Release()
		v, _ := b.Float32s()
		return v
	}(7)
	forDevices(t, func(t *testing.T, d *ops.Device) {
		s := autograd.NewSession(autograd.Options{Device: d, Seed: 7})
		defer s.Close()
		s.ParamUniform("first", []int{3}, 0, 1)
		p := s.ParamNormal("w", []int{2, 3}, 0.5, 0.02)
		if h, err := p.Host(); err != nil || !slices.Equal(h, want) {
			t.Errorf("ParamNormal: %v, %v; want %v", h, err, want)
		}
		for _, std := range []float64{-1, math.NaN(), math.Inf(1)} {
			s := autograd.NewSession(autograd.Options{Device: d})
			s.ParamNormal("w", []int{2}, 0, std)
			if err := s.Err(); err == nil || !strings.Contains(err.Error(), "param: w:") {
				t.Errorf("ParamNormal(std %v): error %v", std, err)
			}
			s.Close()
		}
	})
}

// TestSessionClearErr: a bad batch (an out-of-range label) fails its step; ClearErr returns that
// error and the next steps train from the same parameters, gradients and optimizer state as a
// session that never saw the bad batch, bit for bit. A closed session stays closed.
func TestSessionClearErr(t *testing.T) {
	forDevices(t, func(t *testing.T, d *ops.Device) {
		before := d.Stats().LiveBytes
		run := func(bad bool) []float32 {
			s := autograd.NewSession(autograd.Options{Device: d, Seed: 3})
			defer s.Close()
			w := s.ParamUniform("w", []int{3, 4}, -1, 1)
			opt := autograd.NewAdamW([]*autograd.Param{w}, autograd.DefaultAdamW())
			x := []float32{1, 2, 3, 4, -1, 0.5, 2, 0}
			step := func(labels []int) error {
				s.Reset()
				loss := s.CrossEntropy(s.Linear(s.Input(x, 2, 4), s.Use(w), autograd.Var{}), labels)
				s.Backward(loss)
				opt.Step()
				opt.ZeroGrad()
				return s.Err()
			}
			if err := step([]int{0, 2}); err != nil {
				t.Fatal(err)
			}
			if bad {
				err := step([]int{0, 3})
				if err == nil || !strings.Contains(err.Error(), "label") {
					t.Fatalf("bad label: error %v", err)
				}
				if got := s.ClearErr(); got != err {
					t.Errorf("ClearErr returned %v, want %v", got, err)
				}
				if s.Err() != nil || s.ClearErr() != nil {
					t.Errorf("error after ClearErr: %v", s.Err())
				}
			}
			if err := step([]int{1, 2}); err != nil {
				t.Fatal(err)
			}
			v, err := w.Host()
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
		if clean, recovered := run(false), run(true); !slices.Equal(clean, recovered) {
			t.Errorf("parameters after a recovered bad step %v, want %v", recovered, clean)
		}
		s := autograd.NewSession(autograd.Options{Device: d})
		s.Close()
		if err := s.ClearErr(); !errors.Is(err, autograd.ErrClosed) || !errors.Is(s.Err(), autograd.ErrClosed) {
			t.Errorf("ClearErr on a closed session: %v, then %v", err, s.Err())
		}
		if after := d.Stats().LiveBytes; after != before {
			t.Errorf("live bytes %d, want %d", after, before)
		}
	})
}

// TestClearErrLeavesNothingBehind: the failures a loop may skip with ClearErr change nothing. An
// optimizer whose hyperparameters are rejected does not hold its parameters (another may take
// them) and its Step records its error again; a Step that meets a released gradient updates no
// parameter and creates no state; draws with bad arguments take no key; a strict
// LoadStateDict accepts a BatchNorm state dict without num_batches_tracked.
func TestClearErrLeavesNothingBehind(t *testing.T) {
	forDevices(t, func(t *testing.T, d *ops.Device) {
		before := d.Stats().LiveBytes
		s := autograd.NewSession(autograd.Options{Device: d, Seed: 9})
		defer func() {
			s.Close()
			if after := d.Stats().LiveBytes; after != before {
				t.Errorf("live bytes %d, want %d", after, before)
			}
		}()
		p1 := s.Param("p1", []int{2}, []float32{1, 2})
		p2 := s.Param("p2", []int{2}, []float32{3, 4})
		bad := autograd.NewSGD([]*autograd.Param{p1, p2}, autograd.SGDOptions{LR: -1})
		if s.ClearErr() == nil {
			t.Fatal("a negative learning rate was accepted")
		}
		if bad.Step() == nil || s.ClearErr() == nil {
			t.Error("the failed optimizer's Step did not record its error")
		}
		opt := autograd.NewSGD([]*autograd.Param{p1, p2}, autograd.SGDOptions{LR: 0.5, Momentum: 0.9})
		if err := s.Err(); err != nil {
			t.Fatalf("a second optimizer of the same parameters after ClearErr: %v", err)
		}
		loss := s.Sum(s.Add(s.Use(p1), s.Use(p2)))
		if err := s.Backward(loss); err != nil {
			t.Fatal(err)
		}
		p2.Grad().Release() // a stale handle: Step must fail before touching anything
		if opt.Step() == nil || s.ClearErr() == nil {
			t.Fatal("Step with a released gradient succeeded")
		}
		if v, _ := p1.Host(); !slices.Equal(v, []float32{1, 2}) {
			t.Errorf("the failed Step updated p1: %v", v)
		}
		if st, err := opt.State(); err != nil || len(st) != 0 {
			t.Errorf("the failed Step left state %v (%v)", st, err)
		}
		seed, draws := s.RandomState()
		x := s.Input([]float32{1, 2, 3}, 3)
		s.Dropout(x, 1.5)
		s.ClearErr()
		s.Bernoulli(2, 3)
		s.ClearErr()
		s.Normal(0, -1, 3)
		s.ClearErr()
		s.ParamNormal("q", []int{2}, 0, -1)
		s.ClearErr()
		if s2, d2 := s.RandomState(); s2 != seed || d2 != draws {
			t.Errorf("failed draws took keys: %d draws, want %d", d2, draws)
		}
		s.Normal(0, 1, 3)
		if _, d2 := s.RandomState(); d2 != draws+1 || s.Err() != nil {
			t.Errorf("Normal: %d draws, want %d (%v)", d2, draws+1, s.Err())
		}

		// An optimizer whose only parameter failed to be created, and a parameter whose buffer
		// the caller released: Step records its error and updates nothing.
		q := s.Param("q", []int{2}, []float32{1, 2, 3})
		noParam := autograd.NewSGD([]*autograd.Param{q}, autograd.SGDOptions{LR: 1})
		s.ClearErr()
		if noParam.Step() == nil || s.ClearErr() == nil {
			t.Error("Step of an optimizer of a failed parameter recorded no error")
		}
		s2 := autograd.NewSession(autograd.Options{Device: d})
		r1 := s2.Param("r1", []int{2}, []float32{1, 2})
		r2 := s2.Param("r2", []int{2}, []float32{3, 4})
		adam := autograd.NewAdam([]*autograd.Param{r1, r2}, autograd.DefaultAdam())
		if err := s2.Backward(s2.Sum(s2.Add(s2.Use(r1), s2.Use(r2)))); err != nil {
			t.Fatal(err)
		}
		r2.Value().Release()
		if adam.Step() == nil || s2.ClearErr() == nil {
			t.Error("Step with a released parameter buffer succeeded")
		}
		if v, _ := r1.Host(); !slices.Equal(v, []float32{1, 2}) {
			t.Errorf("the failed Step updated r1: %v", v)
		}
		s2.Close()

		// A released accumulated gradient fails Backward before any gradient is added.
		s3 := autograd.NewSession(autograd.Options{Device: d})
		u1 := s3.Param("u1", []int{2}, []float32{1, 2})
		u2 := s3.Param("u2", []int{2}, []float32{3, 4})
		for step := range 2 {
			s3.Reset()
			s3.Backward(s3.Sum(s3.Add(s3.Use(u1), s3.Use(u2))))
			if step == 0 {
				u2.Grad().Release()
			}
		}
		if s3.ClearErr() == nil {
			t.Error("Backward into a released gradient succeeded")
		}
		if g, _ := u1.Grad().Float32s(); !slices.Equal(g, []float32{1, 1}) {
			t.Errorf("the failed Backward added to u1's gradient: %v", g)
		}
		s3.Close()

		s.NewBatchNorm("bn", 2)
		sd, err := s.StateDict()
		if err != nil {
			t.Fatal(err)
		}
		if old, ok := sd["bn.num_batches_tracked"]; ok {
			old.Buf.Release()
			delete(sd, "bn.num_batches_tracked")
		}
		if err := s.LoadStateDict(sd, true); err != nil {
			t.Errorf("strict load without num_batches_tracked: %v", err)
		}
		autograd.ReleaseTensors(sd)
	})
}
