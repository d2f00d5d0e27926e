package autograd_test

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/ops"
)

// hookModel is a session whose parameters cover every case of SetGradHook: two layers, a
// scale used by both (two uses), a parameter never used, a frozen one, and one used only in a
// branch the loss does not depend on.
type hookModel struct {
	s                                *autograd.Session
	w1, b1, sc, w2, b2, unused, dead *autograd.Param
	frozen                           *autograd.Param
}

func newHookModel(seed uint64) *hookModel {
	s := autograd.NewSession(autograd.Options{Device: ops.CPU(), Seed: seed})
	m := &hookModel{s: s}
	m.dead = s.ParamUniform("dead", []int{3}, -1, 1)
	m.w1 = s.ParamUniform("w1", []int{4, 3}, -1, 1)
	m.b1 = s.ParamUniform("b1", []int{4}, -1, 1)
	m.sc = s.ParamUniform("sc", []int{4}, 0.5, 1.5)
	m.unused = s.ParamUniform("unused", []int{2}, -1, 1)
	m.frozen = s.ParamUniform("frozen", []int{4}, -1, 1)
	m.frozen.SetRequiresGrad(false)
	m.w2 = s.ParamUniform("w2", []int{4, 4}, -1, 1)
	m.b2 = s.ParamUniform("b2", []int{4}, -1, 1)
	return m
}

// loss records one step on a batch of 5 examples (step varies the inputs).
func (m *hookModel) loss(step int) autograd.Var {
	s := m.s
	x := make([]float32, 15)
	for i := range x {
		x[i] = float32(math.Sin(float64(i*7+step*3) * 0.61))
	}
	s.Sum(s.Use(m.dead)) // recorded, but the loss does not depend on it
	h := s.Mul(s.Linear(s.Input(x, 5, 3), s.Use(m.w1), s.Use(m.b1)), s.Use(m.sc))
	h = s.Add(s.Tanh(h), s.Use(m.frozen))
	y := s.Mul(s.Linear(h, s.Use(m.w2), s.Use(m.b2)), s.Use(m.sc))
	return s.Sum(s.Mul(y, y))
}

func gradBits(t *testing.T, p *autograd.Param) []uint32 {
	t.Helper()
	if p.Grad() == nil {
		return nil
	}
	v, err := p.Grad().Float32s()
	if err != nil {
		t.Fatal(err)
	}
	out := make([]uint32, len(v))
	for i, f := range v {
		out[i] = math.Float32bits(f)
	}
	return out
}

// TestGradHook: with a hook, every parameter is reported once per pass, the gradient it sees
// is final (the bits Backward leaves, and the same buffer), the order is the reverse sweep's
// (parameters no node of the sweep can reach first), and the gradients have the bits of a
// session without a hook, across two accumulated passes.
func TestGradHook(t *testing.T) {
	plain, hooked := newHookModel(3), newHookModel(3)
	defer plain.s.Close()
	defer hooked.s.Close()
	var order []string
	seen := map[string][]uint32{}
	bufs := map[string]*ops.Buffer{}
	hooked.s.SetGradHook(func(p *autograd.Param) error {
		order = append(order, p.Name())
		seen[p.Name()] = gradBits(t, p)
		bufs[p.Name()] = p.Grad()
		return nil
	})
	for step := range 2 { // the second pass accumulates onto the first's gradients
		order = order[:0]
		for _, m := range []*hookModel{plain, hooked} {
			m.s.Reset()
			if err := m.s.Backward(m.loss(step)); err != nil {
				t.Fatal(err)
			}
		}
		want := []string{"unused", "frozen", "w2", "b2", "sc", "w1", "b1", "dead"}
		if !slices.Equal(order, want) {
			t.Errorf("pass %d: order %v, want %v", step, order, want)
		}
		hp, pp := hooked.s.Params(), plain.s.Params()
		for i, p := range hp {
			g := gradBits(t, p)
			if !slices.Equal(g, gradBits(t, pp[i])) {
				t.Errorf("pass %d: %s: gradient differs from the session without a hook", step, p.Name())
			}
			if !slices.Equal(g, seen[p.Name()]) || p.Grad() != bufs[p.Name()] {
				t.Errorf("pass %d: %s: the gradient changed after the hook saw it", step, p.Name())
			}
			none := p.Name() == "unused" || p.Name() == "frozen" || p.Name() == "dead"
			if (g == nil) != none {
				t.Errorf("pass %d: %s: gradient %v", step, p.Name(), g)
			}
		}
	}
	// BackwardParams: only the uses among the inputs count; the others complete before the sweep.
	order = order[:0]
	hooked.s.Reset()
	hooked.s.ZeroGrad()
	s := hooked.s
	w := s.Use(hooked.w1)
	loss := s.Sum(s.Tanh(s.Linear(s.Input([]float32{1, 2, 3}, 1, 3), w, s.Use(hooked.b1))))
	if err := s.BackwardParams(loss, w); err != nil {
		t.Fatal(err)
	}
	if want := []string{"dead", "b1", "sc", "unused", "frozen", "w2", "b2", "w1"}; !slices.Equal(order, want) {
		t.Errorf("BackwardParams: order %v, want %v", order, want)
	}
	if hooked.w1.Grad() == nil || hooked.b1.Grad() != nil {
		t.Errorf("BackwardParams: w1 %v, b1 %v", hooked.w1.Grad(), hooked.b1.Grad())
	}
}

// TestGradHookError: an error of the hook stops the pass; Backward returns it and the session
// records it. Removing the hook restores the plain pass.
func TestGradHookError(t *testing.T) {
	m := newHookModel(5)
	defer m.s.Close()
	calls := 0
	m.s.SetGradHook(func(p *autograd.Param) error {
		calls++
		if p.Name() == "b2" {
			return errors.New("all-reduce failed")
		}
		return nil
	})
	err := m.s.Backward(m.loss(0))
	if err == nil || !strings.Contains(err.Error(), "gradient hook of b2: all-reduce failed") || m.s.Err() == nil {
		t.Fatalf("error %v, session %v", err, m.s.Err())
	}
	if calls != 4 { // unused, frozen, w2, b2
		t.Errorf("%d calls before the failure", calls)
	}
	m.s.ClearErr()
	m.s.SetGradHook(nil)
	m.s.Reset()
	m.s.ZeroGrad()
	if err := m.s.Backward(m.loss(0)); err != nil || calls != 4 {
		t.Errorf("without the hook: %v, %d calls", err, calls)
	}
}

func TestGradOrZeros(t *testing.T) {
	m := newHookModel(1)
	defer m.s.Close()
	g, err := m.unused.GradOrZeros()
	if err != nil || g == nil || m.unused.Grad() != g {
		t.Fatalf("%v %v", g, err)
	}
	v, _ := g.Float32s()
	if !slices.Equal(v, []float32{0, 0}) {
		t.Errorf("zeros: %v", v)
	}
	if again, _ := m.unused.GradOrZeros(); again != g {
		t.Error("a second call replaced the gradient")
	}
}

// A gradient hook sees each parameter's gradient as soon as the backward pass is done with it:
// the last layer's first.
func ExampleSession_SetGradHook() {
	s := autograd.NewSession(autograd.Options{Device: ops.CPU()})
	defer s.Close()
	w1 := s.Param("w1", []int{1}, []float32{2})
	w2 := s.Param("w2", []int{1}, []float32{3})
	s.SetGradHook(func(p *autograd.Param) error {
		g, err := p.Grad().Float32s()
		fmt.Println(p.Name(), g, err)
		return err
	})
	x := s.Input([]float32{5}, 1)
	s.Backward(s.Sum(s.Mul(s.Mul(x, s.Use(w1)), s.Use(w2)))) // loss = x * w1 * w2
	// Output:
	// w2 [10] <nil>
	// w1 [15] <nil>
}
