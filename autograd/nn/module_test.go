package nn

import (
	"encoding/json"
	"flag"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/ops"
)

var update = flag.Bool("update", false, "rewrite testdata/mlp_go.safetensors (then run testdata/nn_torch.py)")

// torchCase is one norm layer's record in testdata/nn_torch.json.
type torchCase struct {
	X, R, Y, DX     []float64
	Shape           []int
	Params, DParams [][]float64
}

type torchRecord struct {
	X            []float64
	Labels       []int
	Logits       []float64
	Loss         float64
	Grads        map[string][]float64
	SGDLosses    []float64 `json:"sgd_losses"`
	LayerNorm    torchCase `json:"layer_norm"`
	GroupNorm    torchCase `json:"group_norm"`
	RMSNorm      torchCase `json:"rms_norm"`
	GoFileLogits []float64 `json:"go_file_logits"`
}

func readTorch(t *testing.T) torchRecord {
	t.Helper()
	b, err := os.ReadFile("testdata/nn_torch.json")
	if err != nil {
		t.Fatal(err)
	}
	var r torchRecord
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

func f32s(v []float64) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}

// close reports the first index where got and want differ by more than tol·max(1, |want|).
func closeTo(t *testing.T, what string, got []float32, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if d := math.Abs(float64(got[i]) - want[i]); !(d <= tol*math.Max(1, math.Abs(want[i]))) {
			t.Fatalf("%s[%d] = %v, PyTorch %v", what, i, got[i], want[i])
		}
	}
}

func host(t *testing.T, b *ops.Buffer) []float32 {
	t.Helper()
	v, err := b.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func newSession(t *testing.T) *autograd.Session {
	t.Helper()
	s := autograd.NewSession(autograd.Options{Device: ops.CPU(), Seed: 7})
	t.Cleanup(func() { s.Close() })
	return s
}

// TestMLPFromTorch ports a PyTorch script: the weights of nn.Sequential(Linear(5, 7), ReLU(),
// Linear(7, 3)) come through safetensors, and the logits, the loss, the gradients and five SGD
// steps' losses match PyTorch's.
func TestMLPFromTorch(t *testing.T) {
	r := readTorch(t)
	s := newSession(t)
	model := NewMLP(s, []int{5, 7, 3}, MLPOptions{})
	keys := []string{}
	for _, np := range NamedParameters(model) {
		keys = append(keys, np.Key)
	}
	if want := []string{"0.weight", "0.bias", "2.weight", "2.bias"}; !slices.Equal(keys, want) {
		t.Fatalf("keys %v, want %v", keys, want)
	}
	if err := LoadWeights("testdata/mlp_torch.safetensors", model, true); err != nil {
		t.Fatal(err)
	}
	x := s.Input(f32s(r.X), 4, 5)
	logits := model.Forward(x)
	loss := s.CrossEntropy(logits, r.Labels)
	if err := s.Backward(loss); err != nil {
		t.Fatal(err)
	}
	closeTo(t, "logits", host(t, s.Value(logits)), r.Logits, 1e-6)
	closeTo(t, "loss", []float32{s.Item(loss)}, []float64{r.Loss}, 1e-6)
	for _, np := range NamedParameters(model) {
		closeTo(t, np.Key+" grad", host(t, np.Param.Grad()), r.Grads[np.Key], 1e-5)
	}
	s.ZeroGrad()
	opt := autograd.NewSGD(Parameters(model), autograd.SGDOptions{LR: 0.1, Momentum: 0.9})
	defer opt.Close()
	for i, want := range r.SGDLosses {
		s.Reset()
		l := s.CrossEntropy(model.Forward(s.Input(f32s(r.X), 4, 5)), r.Labels)
		s.Backward(l)
		opt.Step()
		opt.ZeroGrad()
		closeTo(t, "sgd loss "+string(rune('0'+i)), []float32{s.Item(l)}, []float64{want}, 1e-5)
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
}

// TestWeightsToTorch: the weights Go writes load into PyTorch (testdata/nn_torch.py records the
// logits PyTorch computes with mlp_go.safetensors; -update rewrites the file).
func TestWeightsToTorch(t *testing.T) {
	r := readTorch(t)
	s := newSession(t)
	model := NewMLP(s, []int{5, 7, 3}, MLPOptions{})
	path := "testdata/mlp_go.safetensors"
	if *update {
		if err := SaveWeights(path, model); err != nil {
			t.Fatal(err)
		}
		t.Skip("wrote", path, "; now run testdata/nn_torch.py")
	}
	if r.GoFileLogits == nil {
		t.Fatal("nn_torch.json has no go_file_logits: run the test with -update, then nn_torch.py")
	}
	// The file holds this session's initialization (seed 7): Kaiming-uniform draws keyed by the
	// session's generator, the same on every device.
	saved := NewMLP(newSession(t), []int{5, 7, 3}, MLPOptions{})
	if err := LoadWeights(path, saved, true); err != nil {
		t.Fatal(err)
	}
	for i, np := range NamedState(model) {
		a, _ := np.Param.Host()
		b, _ := NamedState(saved)[i].Param.Host()
		if !slices.Equal(a, b) {
			t.Fatalf("%s: the initialization changed since mlp_go.safetensors was written", np.Key)
		}
	}
	closeTo(t, "logits of Go's weights in PyTorch", host(t, s.Value(model.Forward(s.Input(f32s(r.X), 4, 5)))), r.GoFileLogits, 1e-6)
}

// TestNormsAgainstTorch: LayerNorm, GroupNorm and RMSNorm forward and backward against PyTorch.
func TestNormsAgainstTorch(t *testing.T) {
	r := readTorch(t)
	for _, c := range []struct {
		name string
		tc   torchCase
		make func(s *autograd.Session) (Layer, []*autograd.Param)
	}{
		{"layer_norm", r.LayerNorm, func(s *autograd.Session) (Layer, []*autograd.Param) {
			l := NewLayerNorm(s, 6)
			return l, []*autograd.Param{l.Weight, l.Bias}
		}},
		{"group_norm", r.GroupNorm, func(s *autograd.Session) (Layer, []*autograd.Param) {
			l := NewGroupNorm(s, 2, 4)
			return l, []*autograd.Param{l.Weight, l.Bias}
		}},
		{"rms_norm", r.RMSNorm, func(s *autograd.Session) (Layer, []*autograd.Param) {
			l := NewRMSNorm(s, 6)
			return l, []*autograd.Param{l.Weight}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newSession(t)
			layer, params := c.make(s)
			for i, p := range params {
				if err := p.Set(f32s(c.tc.Params[i])); err != nil {
					t.Fatal(err)
				}
			}
			x := s.InputGrad(f32s(c.tc.X), c.tc.Shape...)
			y := layer.Forward(x)
			loss := s.Sum(s.Mul(y, s.Input(f32s(c.tc.R), c.tc.Shape...)))
			if err := s.BackwardParams(loss, x); err != nil {
				t.Fatal(err)
			}
			closeTo(t, "y", host(t, s.Value(y)), c.tc.Y, 1e-5)
			closeTo(t, "dx", host(t, s.Grad(x)), c.tc.DX, 1e-4)
			s.Reset()
			s.ZeroGrad()
			loss = s.Sum(s.Mul(layer.Forward(s.Input(f32s(c.tc.X), c.tc.Shape...)), s.Input(f32s(c.tc.R), c.tc.Shape...)))
			if err := s.Backward(loss); err != nil {
				t.Fatal(err)
			}
			for i, p := range params {
				closeTo(t, "dparam", host(t, p.Grad()), c.tc.DParams[i], 1e-4)
			}
		})
	}
}

func TestTrainEval(t *testing.T) {
	s := newSession(t)
	model := NewSequential(NewLinear(s, 3, 4, true), NewDropout(0.5), NewBatchNorm(s, 4))
	x := []float32{1, 2, 3, 4, 5, 6}
	Eval(model)
	for _, l := range model.Layers {
		if l.base().Training() {
			t.Fatal("Eval left a layer in training mode")
		}
	}
	lin := model.Layers[0].(*Linear)
	want := host(t, s.Value(lin.Forward(s.Input(x, 2, 3))))
	got := host(t, s.Value(model.Layers[1].Forward(s.Input(want, 2, 4))))
	if !slices.Equal(got, want) {
		t.Fatal("Dropout changed its input in evaluation mode")
	}
	Train(model)
	drop := host(t, s.Value(model.Layers[1].Forward(s.Input(want, 2, 4))))
	zeros := 0
	for i, v := range drop {
		switch {
		case v == 0:
			zeros++
		case v != 2*want[i]:
			t.Fatalf("dropout kept %v as %v, want it doubled", want[i], v)
		}
	}
	if zeros == 0 || zeros == len(drop) {
		t.Fatalf("dropout zeroed %d of %d", zeros, len(drop))
	}
	bn := model.Layers[2].(*BatchNorm)
	before, _ := bn.BN.RunningMean.Host()
	s.Reset()
	model.Forward(s.Input(x, 2, 3))
	after, _ := bn.BN.RunningMean.Host()
	if slices.Equal(before, after) {
		t.Fatal("training mode left the running mean unchanged")
	}
	Eval(model)
	s.Reset()
	model.Forward(s.Input(x, 2, 3))
	again, _ := bn.BN.RunningMean.Host()
	if !slices.Equal(after, again) {
		t.Fatal("evaluation mode changed the running mean")
	}
	keys := []string{}
	for _, np := range NamedState(model) {
		keys = append(keys, np.Key)
	}
	want2 := []string{"0.weight", "0.bias", "2.weight", "2.bias", "2.running_mean", "2.running_var", "2.num_batches_tracked"}
	if !slices.Equal(keys, want2) {
		t.Fatalf("state keys %v, want %v", keys, want2)
	}
	if n := len(Parameters(model)); n != 4 {
		t.Fatalf("%d parameters, want 4 (buffers are not parameters)", n)
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
}

func TestInitializers(t *testing.T) {
	s := newSession(t)
	p := s.Param("w", []int{64, 32, 3}, nil) // fan_in 96, fan_out 192
	check := func(in Init, lo, hi, wantStd float64) {
		t.Helper()
		if err := in.Apply(s, p); err != nil {
			t.Fatal(err)
		}
		v, _ := p.Host()
		var sum, sq float64
		for _, x := range v {
			if float64(x) < lo || float64(x) > hi {
				t.Fatalf("%v: %v outside [%v, %v]", in, x, lo, hi)
			}
			sum += float64(x)
			sq += float64(x) * float64(x)
		}
		n := float64(len(v))
		std := math.Sqrt(sq/n - (sum/n)*(sum/n))
		if math.Abs(std-wantStd) > 0.05*wantStd {
			t.Fatalf("%v: std %v, want %v", in, std, wantStd)
		}
	}
	inf := math.Inf(1)
	check(KaimingUniform(math.Sqrt(5), FanIn, "leaky_relu"), -1/math.Sqrt(96), 1/math.Sqrt(96), 1/math.Sqrt(96)/math.Sqrt(3))
	check(KaimingNormal(0, FanOut, "relu"), -inf, inf, math.Sqrt(2.0/192))
	check(XavierUniform(1), -math.Sqrt(6.0/288), math.Sqrt(6.0/288), math.Sqrt(2.0/288))
	check(XavierNormal(2), -inf, inf, 2*math.Sqrt(2.0/288))
	// N(0, 1) truncated to [-1, 1] has std 0.5377.
	check(TruncNormal(0, 1, -1, 1), -1, 1, 0.5377)
	check(Uniform(2, 3), 2, 3, 1/math.Sqrt(12))
	if err := Ones().Apply(s, p); err != nil {
		t.Fatal(err)
	}
	if v, _ := p.Host(); slices.ContainsFunc(v, func(x float32) bool { return x != 1 }) {
		t.Fatal("ones_ left a value other than 1")
	}
	// The same seed gives the same initialization, whatever the device.
	a := NewLinear(newSession(t), 10, 5, true)
	b := NewLinear(newSession(t), 10, 5, true)
	wa, _ := a.Weight.Host()
	wb, _ := b.Weight.Host()
	if !slices.Equal(wa, wb) {
		t.Fatal("two sessions of one seed initialized differently")
	}
	if _, _, err := Fans([]int{3}); err == nil {
		t.Fatal("Fans of a vector: no error")
	}
	if err := KaimingUniform(0, FanIn, "relu").Apply(s, s.Param("v", []int{3}, nil)); err == nil || s.Err() == nil {
		t.Fatal("Kaiming init of a vector: no error recorded")
	}
}

func TestRegisterPanics(t *testing.T) {
	for _, name := range []string{"", "a.b", "dup"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("RegisterModule(%q) did not panic", name)
				}
			}()
			var b Base
			b.RegisterModule("dup", ReLU())
			b.RegisterModule(name, ReLU())
		}()
	}
}

func TestLoadStateDictMismatch(t *testing.T) {
	s := newSession(t)
	a := NewMLP(s, []int{4, 6, 2}, MLPOptions{})
	ts, err := StateDict(a)
	if err != nil {
		t.Fatal(err)
	}
	defer autograd.ReleaseTensors(ts)
	b := NewMLP(s, []int{4, 5, 2}, MLPOptions{})
	if err := LoadStateDict(b, ts, true); err == nil || !strings.Contains(err.Error(), "0.weight") {
		t.Fatalf("loading another architecture: %v, want an error naming 0.weight", err)
	}
	c := NewMLP(s, []int{4, 6, 6, 2}, MLPOptions{})
	if err := LoadStateDict(c, ts, true); err == nil || !strings.Contains(err.Error(), "2.weight") {
		t.Fatalf("loading another depth: %v, want an error naming 2.weight", err)
	}
	d := NewMLP(s, []int{4, 6, 2}, MLPOptions{})
	if err := LoadStateDict(d, ts, true); err != nil {
		t.Fatal(err)
	}
	wa, _ := a.Layers[0].(*Linear).Weight.Host()
	wd, _ := d.Layers[0].(*Linear).Weight.Host()
	if !slices.Equal(wa, wd) {
		t.Fatal("LoadStateDict did not copy the weights")
	}
}
