package main

import (
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"testing"

	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/autograd/nn"
	"github.com/torchlean-go/torchlean/internal/testenv"
	"github.com/torchlean-go/torchlean/ops"
)

// TestTrainSmall trains a small FNO on a little Burgers data for a few epochs: the loss must
// fall, the test error must beat predicting zero (relative error 1), a checkpoint must give a
// fresh model the same predictions, and every buffer must be released at the end. In
// deterministic mode a GPU run must end with the CPU's bits.
func TestTrainSmall(t *testing.T) {
	old := ops.Deterministic()
	ops.SetDeterministic(true) // fixed-order reductions (the biases' gradients) on a GPU too
	defer ops.SetDeterministic(old)
	var want map[string][]float32
	t.Run("cpu", func(t *testing.T) { want = trainSmall(t, ops.CPU()) })
	t.Run("cuda", func(t *testing.T) {
		d, err := ops.Open("cuda")
		testenv.RequireCUDA(t, err == nil, fmt.Sprint(err))
		if want == nil {
			t.Fatal("no CPU run to compare with")
		}
		got := trainSmall(t, d)
		for _, name := range slices.Sorted(maps.Keys(want)) {
			w, g := want[name], got[name]
			if len(g) != len(w) {
				t.Fatalf("%s: %d values on %s, %d on the CPU", name, len(g), d, len(w))
			}
			for i := range w {
				if math.Float32bits(g[i]) != math.Float32bits(w[i]) {
					t.Fatalf("%s[%d] = %v on %s, %v on the CPU", name, i, g[i], d, w[i])
				}
			}
		}
	})
}

// trainSmall runs TestTrainSmall's training on d and returns the trained parameters by key and
// the test predictions (key "predictions").
func trainSmall(t *testing.T, d *ops.Device) map[string][]float32 {
	base := d.Stats().LiveBytes
	train, test := generate(dataParams{Nu: 0.1, Grid: 32, Train: 40, Test: 10, Seed: 1})
	scale := train.scale()
	cfg := config{Width: 8, Modes: 6, Layers: 2}
	if err := cfg.check(32); err != nil {
		t.Fatal(err)
	}
	sess := autograd.NewSession(autograd.Options{Device: d, Seed: 1})
	model := newFNO(sess, cfg)
	keys := []string{}
	for _, np := range nn.NamedParameters(model) {
		keys = append(keys, np.Key)
	}
	if want := []string{"fc0.weight", "fc0.bias", "conv0.weight_re", "conv0.weight_im", "w0.weight", "w0.bias",
		"conv1.weight_re", "conv1.weight_im", "w1.weight", "w1.bias", "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"}; !slices.Equal(keys, want) {
		t.Errorf("parameter keys %v, want %v", keys, want)
	}
	w, err := model.Spectral[0].WRe.Host()
	if err != nil {
		t.Fatal(err)
	}
	if lo, hi := slices.Min(w), slices.Max(w); lo < 0 || hi >= 1.0/64 || hi-lo < 0.5/64 {
		t.Errorf("spectral weights in [%g, %g], want spread over [0, 1/64)", lo, hi)
	}
	o := autograd.DefaultAdam()
	o.LR = 3e-3
	opt := autograd.NewAdam(nn.Parameters(model), o)
	trainLoader, err := loader(train, scale, 8, true, 1, d)
	if err != nil {
		t.Fatal(err)
	}
	testLoader, err := loader(test, scale, 4, false, 0, d)
	if err != nil {
		t.Fatal(err)
	}
	before := evaluate(sess, model, testLoader, nil)
	var first, last float64 // the mean losses of the first and the last epoch
	const epochs = 8
	for epoch := range epochs {
		sum := 0.0
		for b := range trainLoader.Epoch(epoch) {
			sum += step(sess, model, opt, b)
		}
		sum /= float64(trainLoader.Len())
		if epoch == 0 {
			first = sum
		}
		last = sum
	}
	var preds [][]float32
	after := evaluate(sess, model, testLoader, func(p [][]float32) { preds = p })
	if err := sess.Err(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: loss %.4f in the first epoch, %.4f in the last; test error %.4f before, %.4f after", d, first, last, before, after)
	if !(last < first/2) {
		t.Errorf("loss %.4f in the last epoch, %.4f in the first: it must at least halve", last, first)
	}
	if !(after < 0.5) || !(after < before) {
		t.Errorf("test relative L2 error %.4f after training (%.4f before), want < 0.5 and falling", after, before)
	}
	if len(preds) != 4 || len(preds[0]) != 32 {
		t.Fatalf("predictions of the first test batch: %d of %d values, want 4 of 32", len(preds), len(preds[0]))
	}
	// The reported error is the relative L2 error of u(1) itself: recompute it on the host for
	// the first sample from the prediction times the scale.
	num, den := 0.0, 0.0
	for j, p := range preds[0] {
		e := float64(p*scale) - float64(test.U1[j])
		num += e * e
		den += float64(test.U1[j]) * float64(test.U1[j])
	}
	if e0 := math.Sqrt(num / den); !(e0 < 1) {
		t.Errorf("first test sample: relative error %.4f from the host", e0)
	}
	out := map[string][]float32{"predictions": slices.Concat(preds...)}
	for _, np := range nn.NamedParameters(model) {
		if out[np.Key], err = np.Param.Host(); err != nil {
			t.Fatal(err)
		}
	}

	// A checkpoint restores the model in a fresh session: the same predictions, bit for bit.
	path := filepath.Join(t.TempDir(), "fno.safetensors")
	ck := nn.Checkpoint{Model: model, Optimizer: opt, Session: sess, Step: epochs}
	if err := ck.Save(path); err != nil {
		t.Fatal(err)
	}
	sess2 := autograd.NewSession(autograd.Options{Device: d, Seed: 2})
	model2 := newFNO(sess2, cfg)
	opt2 := autograd.NewAdam(nn.Parameters(model2), o)
	ck2 := nn.Checkpoint{Model: model2, Optimizer: opt2, Session: sess2}
	if err := ck2.Load(path); err != nil {
		t.Fatal(err)
	}
	var preds2 [][]float32
	evaluate(sess2, model2, testLoader, func(p [][]float32) { preds2 = p })
	if ck2.Step != epochs || !slices.EqualFunc(preds, preds2, slices.Equal[[]float32]) {
		t.Errorf("after loading the checkpoint: step %d (want %d), same predictions: %v", ck2.Step, epochs, slices.EqualFunc(preds, preds2, slices.Equal[[]float32]))
	}

	opt.Close()
	opt2.Close()
	trainLoader.Close()
	testLoader.Close()
	if err := sess.Close(); err != nil {
		t.Fatal(err)
	}
	if err := sess2.Close(); err != nil {
		t.Fatal(err)
	}
	if got := d.Stats().LiveBytes; got != base {
		t.Errorf("%s: live bytes %d after Close, %d before", d, got, base)
	}
	return out
}

// TestRelativeL2 checks the loss against a host computation.
func TestRelativeL2(t *testing.T) {
	sess := autograd.NewSession(autograd.Options{Device: ops.CPU()})
	defer sess.Close()
	p := []float32{1, 2, 3, 0, 1, 0}
	y := []float32{1, 1, 1, 0, 2, 0}
	v := download(sess, relativeL2(sess.Tape, sess.Input(p, 2, 3, 1), sess.Input(y, 2, 3, 1)))
	want := []float64{math.Sqrt(5) / math.Sqrt(3), 1.0 / 2}
	if err := sess.Err(); err != nil || len(v) != 2 {
		t.Fatalf("%v, %v", v, err)
	}
	for i := range want {
		if math.Abs(float64(v[i])-want[i]) > 1e-6 {
			t.Errorf("sample %d: %v, want %v", i, v[i], want[i])
		}
	}
}

// TestConfigCheck: the shape errors are errors, named after the flags.
func TestConfigCheck(t *testing.T) {
	for _, c := range []struct {
		cfg  config
		grid int
		ok   bool
	}{
		{config{64, 16, 4}, 256, true},
		{config{8, 17, 1}, 32, true},
		{config{8, 18, 1}, 32, false},
		{config{8, 2, 1}, 2, true},
		{config{0, 4, 1}, 32, false},
		{config{8, 4, 0}, 32, false},
	} {
		if err := c.cfg.check(c.grid); (err == nil) != c.ok {
			t.Errorf("%+v on %d points: %v", c.cfg, c.grid, err)
		}
	}
}
