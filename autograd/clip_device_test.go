package autograd_test

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/ops"
)

// TestClipGradNormDevice: the device clipping's float32 definition (its doc comment), checked on
// gradients whose squared sums are exact: the norm, the coefficient min(1, maxNorm/(norm+1e-6))
// in float32, every gradient scaled by it (bits unchanged by a coefficient of 1), the
// parameters without a gradient skipped, non-finite norms, and the argument errors.
func TestClipGradNormDevice(t *testing.T) {
	forDevices(t, func(t *testing.T, d *ops.Device) {
		s, ps := gradsOf(t, d, []float32{3, -4}, []float32{12})
		defer s.Close()
		norm, err := autograd.ClipGradNormDevice(ps, 14)
		if err != nil {
			t.Fatal(err)
		}
		if n := values(t, norm); !slices.Equal(n, []float64{13}) {
			t.Errorf("norm %v, want [13]", n)
		}
		norm.Release()
		if g := values(t, ps[0].Grad()); !slices.Equal(g, []float64{3, -4}) {
			t.Errorf("max norm 14: gradient %v, want it unchanged", g)
		}
		norm, err = autograd.ClipGradNormDevice(ps, 6.5)
		if err != nil {
			t.Fatal(err)
		}
		norm.Release()
		c := float32(6.5) / (float32(13) + float32(1e-6)) // float32 throughout, unlike ClipGradNorm
		want := [][]float64{{float64(3 * c), float64(-4 * c)}, {float64(12 * c)}}
		for i, w := range want {
			if g := values(t, ps[i].Grad()); !slices.Equal(g, w) {
				t.Errorf("%s: clipped gradient %v, want %v", ps[i].Name(), g, w)
			}
		}
		if ps[2].Grad() != nil {
			t.Error("a parameter without a gradient got one")
		}
		for _, m := range []float64{0, -1, math.NaN(), math.Inf(1), 1e39} {
			if _, err := autograd.ClipGradNormDevice(ps, m); err == nil || !strings.Contains(err.Error(), "autograd: clip grad norm (device): max norm") {
				t.Errorf("max norm %v: %v, want an error", m, err)
			}
		}
		if _, err := autograd.ClipGradNormDevice([]*autograd.Param{ps[0], nil}, 1); err == nil {
			t.Error("a nil parameter accepted")
		}
		if n, err := autograd.ClipGradNormDevice(ps[2:], 1); n != nil || err != nil {
			t.Errorf("no gradients: %v, %v, want nil, nil", n, err)
		}
		if s.Err() != nil {
			t.Fatal(s.Err())
		}
	})
	forDevices(t, func(t *testing.T, d *ops.Device) {
		for _, c := range []struct {
			g    float32
			want float64 // the gradients' factor
		}{{float32(math.Inf(1)), 0}, {float32(math.NaN()), math.NaN()}} {
			s, ps := gradsOf(t, d, []float32{1, c.g}, []float32{2})
			norm, err := autograd.ClipGradNormDevice(ps, 1)
			if err != nil {
				t.Fatal(err)
			}
			n := values(t, norm)[0]
			norm.Release()
			g := values(t, ps[1].Grad())[0]
			if !math.IsInf(n, 1) && !math.IsNaN(n) || (c.want == 0) != (g == 0) || math.IsNaN(c.want) != math.IsNaN(g) {
				t.Errorf("gradient %v: norm %v, w2's gradient %v (want 2*%v)", c.g, n, g, c.want)
			}
			s.Close()
		}
	})
}

// TestClipGradNormDeviceNear: on a model's gradients, the device clipping's norm and clipped
// gradients agree with ClipGradNorm's to float32 rounding (they are different arithmetic).
func TestClipGradNormDeviceNear(t *testing.T) {
	run := func(device bool) ([]float64, float64) {
		s := autograd.NewSession(autograd.Options{Device: ops.CPU(), Seed: 3})
		defer s.Close()
		w := s.ParamNormal("w", []int{40, 30}, 0, 1)
		b := s.ParamNormal("b", []int{30}, 0, 1)
		x := s.Normal(0, 1, 8, 40)
		l := s.Sum(s.Tanh(s.Add(s.MatMul(x, s.Use(w)), s.BroadcastTo(s.Use(b), 8, 30))))
		if err := s.Backward(l); err != nil {
			t.Fatal(err)
		}
		var total float64
		if device {
			n, err := autograd.ClipGradNormDevice([]*autograd.Param{w, b}, 0.5)
			if err != nil {
				t.Fatal(err)
			}
			total = values(t, n)[0]
			n.Release()
		} else {
			var err error
			if total, err = autograd.ClipGradNorm([]*autograd.Param{w, b}, 0.5); err != nil {
				t.Fatal(err)
			}
		}
		return append(values(t, w.Grad()), values(t, b.Grad())...), total
	}
	gh, nh := run(false)
	gd, nd := run(true)
	if math.Abs(nh-nd) > 1e-6*nh || nh <= 0.5 {
		t.Errorf("norms %v (host) and %v (device)", nh, nd)
	}
	for i := range gh {
		if math.Abs(gh[i]-gd[i]) > 1e-6*math.Abs(gh[i])+1e-12 {
			t.Fatalf("gradient %d: %v (host), %v (device)", i, gh[i], gd[i])
		}
	}
}
