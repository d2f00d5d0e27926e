package autograd_test

import (
	"math"
	"slices"
	"testing"

	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/ops"
)

// gradsOf gives w1 (2 elements) and w2 (1 element) the gradients g1 and g2 (the loss
// sum(w1*g1) + sum(w2*g2)); w3 gets none.
func gradsOf(t *testing.T, d *ops.Device, g1, g2 []float32) (*autograd.Session, []*autograd.Param) {
	t.Helper()
	s := autograd.NewSession(autograd.Options{Device: d})
	w1 := s.Param("w1", []int{2}, []float32{1, 1})
	w2 := s.Param("w2", []int{1}, []float32{1})
	w3 := s.Param("w3", []int{1}, []float32{1})
	l := s.Add(s.Sum(s.Mul(s.Use(w1), s.Input(g1, 2))), s.Sum(s.Mul(s.Use(w2), s.Input(g2, 1))))
	if err := s.Backward(l); err != nil {
		t.Fatal(err)
	}
	return s, []*autograd.Param{w1, w2, w3}
}

func TestClipGradNorm(t *testing.T) {
	forDevices(t, func(t *testing.T, d *ops.Device) {
		s, ps := gradsOf(t, d, []float32{3, 4}, []float32{12})
		defer s.Close()
		before := ps[0].Grad()
		total, err := autograd.ClipGradNorm(ps, 14)
		if err != nil || total != 13 || ps[0].Grad() != before {
			t.Errorf("max norm 14: total %v (%v), gradient replaced %v; want 13, unchanged", total, err, ps[0].Grad() != before)
		}
		total, err = autograd.ClipGradNorm(ps, 6.5)
		if err != nil || total != 13 {
			t.Fatalf("max norm 6.5: total %v (%v), want 13", total, err)
		}
		c := 6.5 / (13 + 1e-6)
		want := [][]float64{{float64(float32(3 * float32(c))), float64(float32(4 * float32(c)))}, {float64(float32(12 * float32(c)))}}
		for i, w := range want {
			if g := values(t, ps[i].Grad()); !slices.Equal(g, w) {
				t.Errorf("%s: clipped gradient %v, want %v", ps[i].Name(), g, w)
			}
		}
		if ps[2].Grad() != nil {
			t.Error("a parameter without a gradient got one")
		}
		if _, err := autograd.ClipGradNorm(ps, 0); err == nil {
			t.Error("max norm 0: no error")
		}
		if err := s.Err(); err != nil {
			t.Errorf("session error after a rejected max norm: %v", err)
		}
	})
}

func TestClipGradNormNonFinite(t *testing.T) {
	s, ps := gradsOf(t, ops.CPU(), []float32{3, float32(math.Inf(1))}, []float32{1})
	defer s.Close()
	total, err := autograd.ClipGradNorm(ps, 1)
	if err != nil || !math.IsInf(total, 1) {
		t.Fatalf("total %v (%v), want +Inf", total, err)
	}
	// c = 0: finite elements become 0, Inf * 0 is NaN (PyTorch does the same).
	if g := values(t, ps[0].Grad()); g[0] != 0 || !math.IsNaN(g[1]) {
		t.Errorf("gradient %v, want [0 NaN]", g)
	}
}

func TestClipGradValue(t *testing.T) {
	forDevices(t, func(t *testing.T, d *ops.Device) {
		s, ps := gradsOf(t, d, []float32{3, -4}, []float32{float32(math.NaN())})
		defer s.Close()
		if err := autograd.ClipGradValue(ps, 3.5); err != nil {
			t.Fatal(err)
		}
		if g := values(t, ps[0].Grad()); !slices.Equal(g, []float64{3, -3.5}) {
			t.Errorf("clipped gradient %v, want [3 -3.5]", g)
		}
		if g := values(t, ps[1].Grad()); !math.IsNaN(g[0]) {
			t.Errorf("clipped NaN gradient %v, want NaN", g)
		}
		if err := autograd.ClipGradValue(ps, math.NaN()); err == nil {
			t.Error("clip NaN: no error")
		}
		if err := autograd.ClipGradValue([]*autograd.Param{nil}, 1); err == nil {
			t.Error("nil parameter: no error")
		}
	})
}
