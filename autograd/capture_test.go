package autograd_test

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/internal/testenv"
	"github.com/torchlean-go/torchlean/ops"
)

// captureModel is a 4-16-1 tanh network with dropout trained with AdamW on static inputs: the
// model of the capture tests.
type captureModel struct {
	s      *autograd.Session
	x, y   *autograd.StaticInput
	opt    *autograd.Adam
	loss   autograd.Var
	out    *ops.Buffer // the last step's loss, copied inside the step (readable after any Run)
	params []*autograd.Param
}

func newCaptureModel(t *testing.T, d *ops.Device) *captureModel {
	t.Helper()
	s := autograd.NewSession(autograd.Options{Device: d, Seed: 11})
	m := &captureModel{s: s}
	s.ParamUniform("w1", []int{16, 4}, -0.5, 0.5)
	s.Param("b1", []int{16}, nil)
	s.ParamUniform("w2", []int{1, 16}, -0.5, 0.5)
	s.Param("b2", []int{1}, nil)
	m.params = s.Params()
	o := autograd.DefaultAdamW()
	o.LR = 0.01
	m.opt = autograd.NewAdamW(m.params, o)
	var err error
	if m.x, err = s.NewStaticInput(8, 4); err != nil {
		t.Fatal(err)
	}
	if m.y, err = s.NewStaticInput(8, 1); err != nil {
		t.Fatal(err)
	}
	if m.out, err = ops.Zeros(d, 1); err != nil {
		t.Fatal(err)
	}
	return m
}

// step is one whole training step on the static inputs.
func (m *captureModel) step() error {
	s, p := m.s, m.params
	s.Reset()
	h := s.Dropout(s.Tanh(s.Linear(m.x.Var(), s.Use(p[0]), s.Use(p[1]))), 0.25)
	m.loss = s.MSELoss(s.Linear(h, s.Use(p[2]), s.Use(p[3])), m.y.Var())
	s.Backward(m.loss)
	m.opt.Step()
	m.opt.ZeroGrad()
	if err := s.Err(); err != nil {
		return err
	}
	// The loss Var of a captured step goes stale at the next eager step's Reset: the copy in out
	// is what every Run leaves readable.
	return ops.CopyInto(m.out, s.Value(m.loss))
}

// feed copies step k's batch into the static inputs.
func (m *captureModel) feed(t *testing.T, k int) {
	t.Helper()
	x, y := make([]float32, 32), make([]float32, 8)
	for i := range x {
		x[i] = float32(math.Sin(float64(k*32+i) * 0.37))
	}
	for i := range y {
		y[i] = x[4*i]*x[4*i+1] - 0.5*x[4*i+2]
	}
	if err := m.x.Set(x); err != nil {
		t.Fatal(err)
	}
	if err := m.y.Set(y); err != nil {
		t.Fatal(err)
	}
}

// state returns the bits of the parameters, the last loss and the session's random state.
func (m *captureModel) state(t *testing.T) []uint32 {
	t.Helper()
	var out []uint32
	for _, p := range m.params {
		h, err := p.Host()
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range h {
			out = append(out, math.Float32bits(v))
		}
	}
	l, err := m.out.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	out = append(out, math.Float32bits(l[0]))
	_, draws := m.s.RandomState()
	return append(out, uint32(draws))
}

func (m *captureModel) close(t *testing.T) {
	m.out.Release()
	m.x.Release()
	m.y.Release()
	if err := m.s.Close(); err != nil {
		t.Error(err)
	}
}

// eagerRun trains steps steps eagerly and returns the state after each.
func eagerRun(t *testing.T, d *ops.Device, steps int) [][]uint32 {
	m := newCaptureModel(t, d)
	defer m.close(t)
	var out [][]uint32
	for k := range steps {
		m.feed(t, k)
		if err := m.step(); err != nil {
			t.Fatal(err)
		}
		out = append(out, m.state(t))
	}
	return out
}

// capturedRun trains the same steps with one eager step, a Step from Capture, and Runs (with
// eager steps interleaved at the steps eager lists), checking against want after each.
func capturedRun(t *testing.T, d *ops.Device, want [][]uint32, eager func(k int) bool) *autograd.Step {
	m := newCaptureModel(t, d)
	defer m.close(t)
	m.feed(t, 0)
	if err := m.step(); err != nil {
		t.Fatal(err)
	}
	step, err := m.s.Capture(m.step)
	if err != nil {
		t.Fatal(err)
	}
	defer step.Close()
	for k := 1; k < len(want); k++ {
		m.feed(t, k)
		if eager(k) {
			err = m.step()
		} else {
			err = step.Run()
		}
		if err != nil {
			t.Fatalf("step %d: %v", k, err)
		}
		if got := m.state(t); !slices.Equal(got, want[k]) {
			t.Fatalf("step %d (eager %v): the state differs from the eager run's", k, eager(k))
		}
	}
	return step
}

// TestCaptureEagerFallback: on the CPU Capture gives an eager Step, and 100 steps of a model
// with dropout and AdamW give the bits of plain eager steps, also with eager steps in between.
func TestCaptureEagerFallback(t *testing.T) {
	want := eagerRun(t, ops.CPU(), 100)
	last := len(want[0]) - 1
	if draws := want[99][last] - want[0][last]; draws != 99 {
		t.Fatalf("%d draws in 99 steps, want one dropout mask per step", draws)
	}
	step := capturedRun(t, ops.CPU(), want, func(k int) bool { return k%7 == 3 })
	if step.Captured() || !errors.Is(step.Reason(), ops.ErrCaptureUnsupported) {
		t.Errorf("CPU step: captured %v, reason %v", step.Captured(), step.Reason())
	}
	if err := step.Run(); err == nil {
		t.Error("Run after Close succeeded")
	}
}

// TestStaticInput: shape, Set, CopyFrom and their errors.
func TestStaticInput(t *testing.T) {
	s := autograd.NewSession(autograd.Options{Device: ops.CPU()})
	defer s.Close()
	in, err := s.NewStaticInput(2, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Release()
	if !slices.Equal(in.Shape(), []int{2, 3}) {
		t.Errorf("shape %v", in.Shape())
	}
	if err := in.Set([]float32{1, 2}); err == nil || !strings.HasPrefix(err.Error(), "autograd: static input: ") {
		t.Errorf("Set of 2 values into 6: %v", err)
	}
	b, _ := ops.Full(ops.CPU(), 6, 3)
	defer b.Release()
	if err := in.CopyFrom(b); err != nil {
		t.Fatal(err)
	}
	s.Reset()
	if got := s.Item(s.Sum(in.Var())); got != 18 {
		t.Errorf("sum of the input = %v, want 18", got)
	}
	s.Reset() // the input is borrowed, not released by Reset
	if err := in.Set([]float32{1, 2, 3, 4, 5, 6}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.NewStaticInput(-1); err == nil {
		t.Error("a negative shape was accepted")
	}
}

// TestCaptureCUDA (GPU): captured steps give the bits of eager steps over 100 steps of the
// dropout + AdamW model (with eager steps interleaved), live bytes stay flat over 10,000
// replays, and a download inside the captured function is an error naming it.
func TestCaptureCUDA(t *testing.T) {
	d, err := ops.Open("cuda")
	testenv.RequireCUDA(t, err == nil, fmt.Sprint(err))
	if err := d.CanCapture(); err != nil {
		t.Fatalf("CUDA device cannot capture: %v", err)
	}
	want := eagerRun(t, d, 100)
	step := capturedRun(t, d, want, func(k int) bool { return k%10 == 5 })
	if !step.Captured() {
		t.Fatalf("not captured: %v", step.Reason())
	}

	m := newCaptureModel(t, d)
	defer m.close(t)
	m.feed(t, 0)
	if err := m.step(); err != nil {
		t.Fatal(err)
	}
	step, err = m.s.Capture(m.step)
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		if err := step.Run(); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	before := d.Stats()
	for range 10000 {
		if err := step.Run(); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	after := d.Stats()
	if after.LiveBytes != before.LiveBytes || after.CachedBytes != before.CachedBytes || after.AllocCount != before.AllocCount {
		t.Errorf("memory moved over 10,000 replays: %v -> %v", before, after)
	}
	if err := step.Close(); err != nil {
		t.Fatal(err)
	}

	_, err = m.s.Capture(func() error {
		if err := m.step(); err != nil {
			return err
		}
		m.s.Item(m.loss)
		return m.s.Err()
	})
	if err == nil || !errors.Is(err, ops.ErrCapturing) || !strings.Contains(err.Error(), "item") || !strings.Contains(err.Error(), "download") {
		t.Fatalf("Item inside a capture: %v", err)
	}
	m.s.ClearErr()
	m.feed(t, 1)
	if err := m.step(); err != nil {
		t.Fatalf("eager step after the failed capture: %v", err)
	}
}

// scheduledRun trains steps steps of the capture model with the learning rate set before every
// step (a schedule), eagerly or (captured) with one eager step, Capture and Runs, and returns
// the state after each step.
func scheduledRun(t *testing.T, d *ops.Device, steps int, captured bool) ([][]uint32, *autograd.Step) {
	t.Helper()
	m := newCaptureModel(t, d)
	defer m.close(t)
	lr := func(k int) float64 { return 0.02 * float64(steps-k) / float64(steps) } // linear decay
	var out [][]uint32
	var step *autograd.Step
	for k := range steps {
		m.feed(t, k)
		m.opt.SetLR(lr(k))
		var err error
		switch {
		case !captured || k == 0:
			err = m.step()
		case step == nil:
			if step, err = m.s.Capture(m.step); err == nil {
				err = step.Run()
			}
		default:
			err = step.Run()
		}
		if err != nil {
			t.Fatalf("step %d: %v", k, err)
		}
		out = append(out, m.state(t))
	}
	if step != nil {
		step.Close()
	}
	return out, step
}

// testCaptureSchedule: captured steps follow a learning rate changed before every Run (Run
// uploads it), giving the eager steps' bits.
func testCaptureSchedule(t *testing.T, d *ops.Device) *autograd.Step {
	want, _ := scheduledRun(t, d, 30, false)
	if slices.Equal(want[1], want[29]) {
		t.Fatal("the training does not move")
	}
	got, step := scheduledRun(t, d, 30, true)
	for k := range want {
		if !slices.Equal(got[k], want[k]) {
			t.Fatalf("%s: step %d: the captured steps' state differs from the eager steps' (a stale learning rate?)", d, k)
		}
	}
	return step
}

// TestCaptureSchedule: a learning rate changed between Runs, on the CPU (eager Runs).
func TestCaptureSchedule(t *testing.T) { testCaptureSchedule(t, ops.CPU()) }

// TestCaptureScheduleCUDA (GPU): the same with replayed graphs (Run uploads the new rate).
func TestCaptureScheduleCUDA(t *testing.T) {
	d, err := ops.Open("cuda")
	testenv.RequireCUDA(t, err == nil, fmt.Sprint(err))
	if err := d.CanCapture(); err != nil {
		t.Fatalf("CUDA device cannot capture: %v", err)
	}
	if step := testCaptureSchedule(t, d); !step.Captured() {
		t.Fatalf("not captured: %v", step.Reason())
	}
}
