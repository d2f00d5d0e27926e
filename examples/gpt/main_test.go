package main

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/autograd/nn"
	"github.com/torchlean-go/torchlean/examples/internal/graphstep/graphtest"
	"github.com/torchlean-go/torchlean/internal/testenv"
	"github.com/torchlean-go/torchlean/ops"
)

// tiny returns the settings of a model small enough to train in a test.
func tiny() options {
	return options{Steps: 60, Batch: 8, Seq: 16, Width: 32, Heads: 2, Layers: 1, LR: 1e-2, Seed: 3,
		Warmup: 5, EvalEvery: 20, ValChars: 4096, Sample: 40, Temperature: 0.8, Prompt: "The Light "}
}

// TestTrainSmall trains a tiny model on the CPU for a few steps: the validation loss must fall
// well below the uniform guess's log2(91) = 6.5 bits and keep falling, the plot and the sample
// must appear, and every buffer must be released.
func TestTrainSmall(t *testing.T) {
	d := ops.CPU()
	base := d.Stats().LiveBytes
	o := tiny()
	o.Plot = filepath.Join(t.TempDir(), "gpt.png")
	var log bytes.Buffer
	res, err := run(d, o, &log)
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Stats().LiveBytes; got != base {
		t.Errorf("live bytes %d after the run, %d before", got, base)
	}
	c := res.curves
	if !slices.Equal(c.ValSteps, []int{20, 40, 60}) || len(c.Val) != 3 || len(c.Train) != 30 || c.TrainSteps[29] != 60 {
		t.Fatalf("curves %+v, want evaluations at steps 20, 40, 60 and training points every 2 steps", c)
	}
	if !(c.Val[2] < c.Val[0] && c.Train[29] < c.Train[0]) {
		t.Errorf("losses did not fall: train %v, validation %v bits per character", c.Train, c.Val)
	}
	if !(res.val < 4.5) || res.val != c.Val[2] {
		t.Errorf("final validation loss %v bits per character (curve %v), want the last point, < 4.5", res.val, c.Val)
	}
	if n := utf8.RuneCountInString(res.sample); n != o.Sample {
		t.Errorf("sample of %d characters, want %d: %q", n, o.Sample, res.sample)
	}
	png, err := os.ReadFile(o.Plot)
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Errorf("plot %s: %v, %d bytes, not a PNG", o.Plot, err, len(png))
	}
	for _, want := range []string{"model: GPT, 1 layers, d 32, 2 heads, context 16", "step    60/60", "plot:"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("the log lacks %q:\n%s", want, log.String())
		}
	}
}

// TestResume stops a run at a checkpoint and resumes it: the resumed run ends with the bits of
// the run that was never stopped (same validation loss, same sample, drawn after the same
// random state), and a checkpoint of another shape is refused.
func TestResume(t *testing.T) {
	d := ops.CPU()
	o := tiny()
	o.Steps, o.EvalEvery, o.Temperature = 30, 10, 0.5
	whole, err := run(d, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	o.Checkpoint = filepath.Join(t.TempDir(), "run.safetensors")
	o.StopAfter = 20
	if _, err := run(d, o, nil); err != nil {
		t.Fatal(err)
	}
	o.StopAfter = 0
	var log bytes.Buffer
	resumed, err := run(d, o, &log)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "resumed from") || resumed.steps != 10 {
		t.Errorf("the resumed run ran %d steps, want 10:\n%s", resumed.steps, log.String())
	}
	if math.Float64bits(resumed.val) != math.Float64bits(whole.val) || resumed.sample != whole.sample {
		t.Errorf("resumed run: %v bits, %q; uninterrupted: %v bits, %q", resumed.val, resumed.sample, whole.val, whole.sample)
	}
	if !slices.Equal(resumed.curves.ValSteps, whole.curves.ValSteps) || !slices.Equal(resumed.curves.Val, whole.curves.Val) ||
		!slices.Equal(resumed.curves.TrainSteps, whole.curves.TrainSteps) || !slices.Equal(resumed.curves.Train, whole.curves.Train) {
		t.Errorf("resumed curves %+v, uninterrupted %+v", resumed.curves, whole.curves)
	}
	o.Heads = 4 // the same parameter shapes, another model
	if _, err := run(d, o, nil); err == nil || !strings.Contains(err.Error(), "holds a model") {
		t.Errorf("a checkpoint of 2 heads loaded into a model of 4: error %v", err)
	}
}

// TestCUDAMatchesCPU trains the tiny model on a CUDA device in deterministic mode: it must end
// with the CPU's bits (the validation loss and the sample drawn from the same distributions).
func TestCUDAMatchesCPU(t *testing.T) {
	old := ops.Deterministic()
	ops.SetDeterministic(true) // the embeddings' backward scatter-adds in a fixed order
	defer ops.SetDeterministic(old)
	gpu, err := ops.Open("cuda")
	testenv.RequireCUDA(t, err == nil, fmt.Sprint(err))
	o := tiny()
	want, err := run(ops.CPU(), o, nil)
	if err != nil {
		t.Fatal(err)
	}
	base := gpu.Stats().LiveBytes
	got, err := run(gpu, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	if live := gpu.Stats().LiveBytes; live != base {
		t.Errorf("%s: live bytes %d after the run, %d before", gpu, live, base)
	}
	if !slices.Equal(got.curves.Val, want.curves.Val) || !slices.Equal(got.curves.Train, want.curves.Train) || got.sample != want.sample {
		t.Errorf("%s: losses %v %v, sample %q; CPU: %v %v, %q", gpu, got.curves.Train, got.curves.Val, got.sample,
			want.curves.Train, want.curves.Val, want.sample)
	}
}

// TestCausal checks that the logits at a position do not depend on the characters after it,
// and do depend on the ones before it.
func TestCausal(t *testing.T) {
	s := autograd.NewSession(autograd.Options{Device: ops.CPU(), Seed: 1})
	defer s.Close()
	m := newGPT(s, config{Vocab: 10, Seq: 8, Width: 16, Heads: 2, Layers: 2})
	logits := func(tokens []int) []float32 {
		s.Reset()
		var out []float32
		s.NoGrad(func() {
			var err error
			if out, err = s.Value(m.logits(tokens, 1, len(tokens))).Float32s(); err != nil {
				t.Fatal(err)
			}
		})
		return out
	}
	a := logits([]int{1, 2, 3, 4, 5, 6, 7, 8})
	b := logits([]int{1, 2, 3, 4, 5, 6, 7, 0}) // the last character changed
	c := logits([]int{9, 2, 3, 4, 5, 6, 7, 8}) // the first character changed
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	const v = 10
	if !slices.Equal(a[:7*v], b[:7*v]) {
		t.Error("the last character changed the logits of the positions before it")
	}
	if slices.Equal(a[7*v:], b[7*v:]) {
		t.Error("the last character did not change its own position's logits")
	}
	if slices.Equal(a[7*v:], c[7*v:]) {
		t.Error("the first character did not change the last position's logits")
	}
}

// TestGreedy checks the sampling at temperature 0: every character is the likeliest next one.
func TestGreedy(t *testing.T) {
	s := autograd.NewSession(autograd.Options{Device: ops.CPU(), Seed: 1})
	defer s.Close()
	m := newGPT(s, config{Vocab: 10, Seq: 4, Width: 16, Heads: 2, Layers: 1})
	prompt := []int{3, 1, 4}
	out := generate(m, prompt, 6, 0)
	if err := s.Err(); err != nil || len(out) != 6 {
		t.Fatalf("%d characters, error %v", len(out), err)
	}
	ctx := append(slices.Clone(prompt), out...)
	for i := range out {
		window := ctx[max(len(prompt)+i-4, 0) : len(prompt)+i] // the last Seq characters
		s.Reset()
		logits, err := s.Value(m.logits(window, 1, len(window))).Float32s()
		if err != nil {
			t.Fatal(err)
		}
		last := logits[len(logits)-10:]
		if best := slices.Index(last, slices.Max(last)); out[i] != best {
			t.Errorf("character %d: %d, the likeliest is %d (logits %v)", i, out[i], best, last)
		}
	}
}

// TestKeys checks the parameters' keys (GPT-2's layout, the head without a bias) and count.
func TestKeys(t *testing.T) {
	s := autograd.NewSession(autograd.Options{Device: ops.CPU(), Seed: 1})
	defer s.Close()
	c := config{Vocab: 91, Seq: 32, Width: 128, Heads: 4, Layers: 2}
	m := newGPT(s, c)
	var keys []string
	for _, np := range nn.NamedParameters(m) {
		keys = append(keys, np.Key)
	}
	for _, want := range []string{"wte.weight", "wpe.weight", "h.0.ln_1.weight", "h.0.attn.q_proj.weight",
		"h.0.attn.out_proj.bias", "h.1.mlp.0.weight", "h.1.mlp.2.bias", "ln_f.bias", "lm_head.weight"} {
		if !slices.Contains(keys, want) {
			t.Errorf("no key %s in %v", want, keys)
		}
	}
	if slices.Contains(keys, "lm_head.bias") {
		t.Error("the head has a bias")
	}
	// 12 d² + 13 d per block, the embeddings, the final norm and the head
	want := c.Layers*(12*c.Width*c.Width+13*c.Width) + (c.Vocab+c.Seq)*c.Width + 2*c.Width + c.Vocab*c.Width
	if got := nn.NumParameters(m); got != want {
		t.Errorf("%d parameters, want %d", got, want)
	}
}

// TestOptionsCheck checks that impossible settings are refused before training.
func TestOptionsCheck(t *testing.T) {
	if err := defaults(false).check(); err != nil {
		t.Errorf("CPU defaults: %v", err)
	}
	if err := defaults(true).check(); err != nil {
		t.Errorf("GPU defaults: %v", err)
	}
	for name, f := range map[string]func(*options){
		"steps":         func(o *options) { o.Steps = 0 },
		"lr":            func(o *options) { o.LR = math.Inf(1) },
		"temperature":   func(o *options) { o.Temperature = -1 },
		"plot":          func(o *options) { o.Plot = "/nonexistent/dir/gpt.png" },
		"val-chars<0":   func(o *options) { o.ValChars = -1 },
		"val-chars=seq": func(o *options) { o.ValChars = o.Seq },
	} {
		o := defaults(false)
		f(&o)
		if err := o.check(); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	for _, c := range []config{{Vocab: 91, Seq: 8, Width: 30, Heads: 4, Layers: 1}, {Vocab: 91, Seq: 8, Width: 600, Heads: 2, Layers: 1}} {
		if err := c.check(); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
	o := tiny()
	o.Prompt = "Ω"
	if _, err := run(ops.CPU(), o, nil); err == nil || !strings.Contains(err.Error(), "-prompt") {
		t.Errorf("a prompt outside the vocabulary: error %v", err)
	}
}

// graphRun trains tiny's model for 12 steps on d (an evaluation every 6, a short sample, no
// plot) with -graph, or eagerly clipping on the device as -graph does (deviceClip), or plainly,
// and returns the result and the log.
func graphRun(t *testing.T, d *ops.Device, graph, deviceClip bool) (*result, string) {
	t.Helper()
	o := tiny()
	o.Steps, o.EvalEvery, o.Sample, o.Graph, o.DeviceClip = 12, 6, 20, graph, deviceClip
	base := d.Stats().LiveBytes
	var log strings.Builder
	res, err := run(d, o, &log)
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Stats().LiveBytes; got != base {
		t.Errorf("%s graph %v: live bytes %d after the run, %d before", d, graph, got, base)
	}
	return res, log.String()
}

// checkGraphRun checks that -graph's run got gives the eager run want's bits: the training
// and validation losses, the parameters (digest) and the sample.
func checkGraphRun(t *testing.T, d *ops.Device, got, want *result) {
	t.Helper()
	bits := func(r *result) []uint64 {
		var b []uint64
		for _, v := range append(slices.Clone(r.curves.Train), r.curves.Val...) {
			b = append(b, math.Float64bits(v))
		}
		return b
	}
	if len(want.curves.Train) != 12 || len(want.curves.Val) != 2 || !slices.Equal(bits(got), bits(want)) ||
		got.digest != want.digest || got.sample != want.sample {
		t.Errorf("%s: -graph changed the training: losses %v %v, digest %s, sample %q; without: %v %v, %s, %q", d,
			got.curves.Train, got.curves.Val, got.digest, got.sample, want.curves.Train, want.curves.Val, want.digest, want.sample)
	}
}

// TestGraphSteps: -graph (static inputs refilled between steps, the device clipping, the step
// offered to the capture: on the CPU it runs eagerly, with a schedule changing the learning rate
// every step) gives the losses, parameters and sample of an eager run that clips on the device
// bit for bit, and logs no graph line there. The plain eager run clips with ClipGradNorm: its
// digest is reported when it differs (the clippings agree bit for bit while the norm stays under
// 1).
func TestGraphSteps(t *testing.T) {
	want, _ := graphRun(t, ops.CPU(), false, true)
	got, log := graphRun(t, ops.CPU(), true, false)
	checkGraphRun(t, ops.CPU(), got, want)
	if strings.Contains(log, "graph:") {
		t.Errorf("a graph line on the CPU:\n%s", log)
	}
	if plain, _ := graphRun(t, ops.CPU(), false, false); plain.digest != want.digest {
		t.Logf("ClipGradNorm's digest %s, the device clipping's %s", plain.digest, want.digest)
	}
}

// TestGPUGraph (GPU): the step is captured, and its replays give the bits of eager steps that
// clip on the device (deterministic mode).
func TestGPUGraph(t *testing.T) {
	d := graphtest.CUDA(t, true)
	want, _ := graphRun(t, d, false, true)
	got, log := graphRun(t, d, true, false)
	checkGraphRun(t, d, got, want)
	graphtest.CheckCaptured(t, log)
}
