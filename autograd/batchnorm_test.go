package autograd_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/ops"
)

// TestBatchNorm checks the module against a float64 model of PyTorch's nn.BatchNorm2d: training
// outputs, the running statistics after two batches, evaluation outputs and the bias gradient in
// evaluation mode; then its state_dict keys and its errors.
func TestBatchNorm(t *testing.T) {
	forDevices(t, func(t *testing.T, d *ops.Device) {
		const n, c, hw = 4, 3, 5
		shape := []int{n, c, 1, hw}
		r := rand.New(rand.NewPCG(5, 6))
		s := autograd.NewSession(autograd.Options{Device: d})
		defer s.Close()
		bn := s.NewBatchNorm("bn", c)
		if err := bn.Weight.Set([]float32{1.5, -0.5, 2}); err != nil {
			t.Fatal(err)
		}
		bn.Bias.Set([]float32{0.25, 0, -1})
		w, b := []float64{1.5, -0.5, 2}, []float64{0.25, 0, -1}
		rm, rv := make([]float64, c), []float64{1, 1, 1}
		near := func(what string, got []float32, want []float64) {
			t.Helper()
			for i := range want {
				if !(math.Abs(float64(got[i])-want[i]) <= 1e-5*(1+math.Abs(want[i]))) {
					t.Fatalf("%s[%d] = %v, want %v", what, i, got[i], want[i])
				}
			}
		}
		for step := range 2 {
			x := make([]float32, n*c*hw)
			for i := range x {
				x[i] = float32(3*r.NormFloat64() + float64(step))
			}
			s.Reset()
			y := s.BatchNorm(bn, s.Input(x, shape...), true)
			got, err := s.Value(y).Float32s()
			if err != nil || s.Err() != nil {
				t.Fatal(err, s.Err())
			}
			want := make([]float64, len(x))
			for ch := range c {
				var mean, ss float64
				for i := range n * hw {
					mean += float64(x[(i/hw*c+ch)*hw+i%hw])
				}
				mean /= n * hw
				for i := range n * hw {
					dv := float64(x[(i/hw*c+ch)*hw+i%hw]) - mean
					ss += dv * dv
				}
				for i := range n * hw {
					j := (i/hw*c+ch)*hw + i%hw
					want[j] = (float64(x[j])-mean)/math.Sqrt(ss/(n*hw)+1e-5)*w[ch] + b[ch]
				}
				rm[ch] = 0.9*rm[ch] + 0.1*mean
				rv[ch] = 0.9*rv[ch] + 0.1*ss/(n*hw-1)
			}
			near("train output", got, want)
		}
		gm, _ := bn.RunningMean.Host()
		gv, _ := bn.RunningVar.Host()
		near("running mean", gm, rm)
		near("running var", gv, rv)
		if cnt, _ := bn.NumBatchesTracked.Host(); !slices.Equal(cnt, []float32{2}) || len(bn.NumBatchesTracked.Shape()) != 0 {
			t.Errorf("num_batches_tracked %v of shape %v, want [2] of shape []", cnt, bn.NumBatchesTracked.Shape())
		}

		// Evaluation mode, with gradients.
		x := make([]float32, n*c*hw)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		s.Reset()
		s.ZeroGrad()
		y := s.BatchNorm(bn, s.Input(x, shape...), false)
		got, _ := s.Value(y).Float32s()
		want := make([]float64, len(x))
		for j := range x {
			ch := j / hw % c
			want[j] = (float64(x[j])-rm[ch])/math.Sqrt(rv[ch]+1e-5)*w[ch] + b[ch]
		}
		near("eval output", got, want)
		if err := s.Backward(s.Sum(y)); err != nil {
			t.Fatal(err)
		}
		if g, _ := bn.Bias.Grad().Float32s(); !slices.Equal(g, []float32{n * hw, n * hw, n * hw}) {
			t.Errorf("eval bias gradient %v, want %d each", g, n*hw)
		}
		if bn.RunningMean.Grad() != nil {
			t.Errorf("the running mean got a gradient")
		}
		gm2, _ := bn.RunningMean.Host()
		cnt, _ := bn.NumBatchesTracked.Host()
		if !slices.Equal(gm, gm2) || !slices.Equal(cnt, []float32{2}) {
			t.Errorf("evaluation changed the running mean (%v -> %v) or the batch count (%v)", gm, gm2, cnt)
		}

		sd, err := s.StateDict()
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for k := range sd {
			keys = append(keys, k)
		}
		autograd.ReleaseTensors(sd)
		slices.Sort(keys)
		if want := []string{"bn.bias", "bn.num_batches_tracked", "bn.running_mean", "bn.running_var", "bn.weight"}; !slices.Equal(keys, want) {
			t.Errorf("state dict keys %v, want %v", keys, want)
		}

		for _, e := range []struct {
			shape []int
			train bool
			want  string
		}{
			{[]int{2, 4}, true, "input of shape [2 4] for 3 channels"},
			{[]int{1, 3}, true, "1 value per channel"},
		} {
			s := autograd.NewSession(autograd.Options{Device: d})
			bn := s.NewBatchNorm("bn", 3)
			s.BatchNorm(bn, s.Input(make([]float32, e.shape[0]*e.shape[1]), e.shape...), e.train)
			if err := s.Err(); err == nil || !strings.Contains(err.Error(), e.want) {
				t.Errorf("shape %v: error %v, want %q", e.shape, err, e.want)
			}
			s.Close()
		}
		for _, train := range []bool{true, false} {
			s := autograd.NewSession(autograd.Options{Device: d})
			bn := s.NewBatchNorm("bn", 3)
			bn.Eps = -2
			s.BatchNorm(bn, s.Input(make([]float32, 6), 2, 3), train)
			if err := s.Err(); err == nil || !strings.Contains(err.Error(), "eps -2") {
				t.Errorf("eps -2, training %v: error %v", train, err)
			}
			s.Close()
		}
	})
}
