package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/torchlean-go/torchlean/autograd/nn"
	"github.com/torchlean-go/torchlean/examples/internal/graphstep/graphtest"
	"github.com/torchlean-go/torchlean/internal/testenv"
	"github.com/torchlean-go/torchlean/ops"
)

// tiny returns the settings of a model small enough to train in a test.
func tiny(dir string) options {
	return options{Steps: 80, Batch: 8, Seq: 32, Width: 16, Layers: 1, LR: 2e-2, Seed: 3, EvalEvery: 40,
		EvalWindows: 16, Sample: 40, Temperature: 0.8, Prompt: "Light ", Plot: filepath.Join(dir, "ssm.png")}
}

// TestTrainSmall trains a tiny model for a few steps on the CPU: the loss must fall, the plot and
// the sample appear, and no buffer is left behind.
func TestTrainSmall(t *testing.T) {
	d := ops.CPU()
	base := d.Stats().LiveBytes
	o := tiny(t.TempDir())
	r, err := run(d, o, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Stats().LiveBytes; got != base {
		t.Errorf("live bytes %d after the run, %d before", got, base)
	}
	uniform := math.Log2(float64(r.Corpus.Vocab.Size()))
	t.Logf("bits per character: first step %.3f, last training %.3f, validation %.3f", r.FirstTrainLoss, r.TrainBPC, r.ValBPC)
	if !(r.FirstTrainLoss > 0.9*uniform) || !(r.ValBPC < r.FirstTrainLoss-1.5) || !(r.TrainBPC < r.FirstTrainLoss-1) {
		t.Errorf("losses (bits per character): first step %.3f (uniform %.3f), last training %.3f, validation %.3f: no learning",
			r.FirstTrainLoss, uniform, r.TrainBPC, r.ValBPC)
	}
	keys := map[string]bool{}
	for _, np := range nn.NamedParameters(r.Model) {
		keys[np.Key] = true
	}
	for _, k := range []string{"embedding.weight", "layers.0.in_proj.weight", "layers.0.conv1d.weight", "layers.0.dt_proj.bias",
		"layers.0.A_log", "layers.0.D", "layers.0.out_proj.weight", "norm_f.weight", "lm_head.weight"} {
		if !keys[k] {
			t.Errorf("no parameter %s among %v", k, keys)
		}
	}
	if len(r.Curves.steps) != 2 || r.Curves.steps[1] != o.Steps {
		t.Errorf("evaluations at steps %v, want [40 80]", r.Curves.steps)
	}
	if st, err := os.Stat(o.Plot); err != nil || st.Size() == 0 {
		t.Errorf("plot: %v", err)
	}
	if n := len([]rune(r.Sample)); !strings.HasPrefix(r.Sample, o.Prompt) || n != len([]rune(o.Prompt))+o.Sample {
		t.Errorf("sample %q: want the prompt and %d characters", r.Sample, o.Sample)
	}
}

// TestResume stops a run half-way with a checkpoint and resumes it: the validation loss and the
// sample must be those of the run that never stopped, to the bit.
func TestResume(t *testing.T) {
	d := ops.CPU()
	dir := t.TempDir()
	o := tiny(dir)
	o.Plot = ""
	want, err := run(d, o, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	o.Checkpoint = filepath.Join(dir, "run.safetensors")
	o.StopAfter = 40
	if _, err := run(d, o, io.Discard); err != nil {
		t.Fatal(err)
	}
	o.StopAfter = 0
	var log strings.Builder
	got, err := run(d, o, &log)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "after step 40") || len(got.Curves.steps) != 1 {
		t.Fatalf("the third run did not resume after step 40 (evaluations at %v):\n%s", got.Curves.steps, log.String())
	}
	if math.Float64bits(got.ValBPC) != math.Float64bits(want.ValBPC) || got.Sample != want.Sample {
		t.Errorf("resumed: validation %v, sample %q; uninterrupted: %v, %q", got.ValBPC, got.Sample, want.ValBPC, want.Sample)
	}
}

// TestTrainSmallCUDA runs TestTrainSmall's training on a CUDA device in deterministic mode: the
// losses and the sample must be the CPU's, to the bit.
func TestTrainSmallCUDA(t *testing.T) {
	d, err := ops.Open("cuda")
	testenv.RequireCUDA(t, err == nil, fmt.Sprint(err))
	old := ops.Deterministic()
	ops.SetDeterministic(true) // the embedding's backward scatter-adds in a fixed order
	defer ops.SetDeterministic(old)
	o := tiny(t.TempDir())
	o.Plot = ""
	want, err := run(ops.CPU(), o, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	base := d.Stats().LiveBytes
	got, err := run(d, o, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if live := d.Stats().LiveBytes; live != base {
		t.Errorf("%s: live bytes %d after the run, %d before", d, live, base)
	}
	for _, c := range []struct {
		name      string
		got, want float64
	}{{"first training loss", got.FirstTrainLoss, want.FirstTrainLoss}, {"last training loss", got.TrainBPC, want.TrainBPC},
		{"validation loss", got.ValBPC, want.ValBPC}} {
		if math.Float64bits(c.got) != math.Float64bits(c.want) {
			t.Errorf("%s: %v on %s, %v on the CPU", c.name, c.got, d, c.want)
		}
	}
	if got.Sample != want.Sample {
		t.Errorf("sample %q on %s, %q on the CPU", got.Sample, d, want.Sample)
	}
}

// graphRun runs tiny's training (40 steps, no plot) on d with -graph, or eagerly clipping on
// the device as -graph does (deviceClip), or plainly, and returns the per-step training losses'
// bits, the result and the log.
func graphRun(t *testing.T, d *ops.Device, graph, deviceClip bool) ([]uint64, *result, string) {
	t.Helper()
	o := tiny(t.TempDir())
	o.Plot, o.Steps, o.Graph, o.DeviceClip = "", 40, graph, deviceClip
	var log strings.Builder
	base := d.Stats().LiveBytes
	r, err := run(d, o, &log)
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Stats().LiveBytes; got != base {
		t.Errorf("%s: live bytes %d after the run, %d before", d, got, base)
	}
	var bits []uint64
	for _, xy := range r.Curves.perStep {
		bits = append(bits, math.Float64bits(xy.Y))
	}
	return bits, r, log.String()
}

// TestGraphSteps: -graph (static inputs refilled between steps, the device clipping, the step
// offered to the capture: on the CPU it runs eagerly, with a schedule changing the learning rate
// every step) gives the losses, validation loss and sample of an eager run that clips on the
// device bit for bit. (That clipping is not ClipGradNorm's, but tiny's gradient norms stay under
// 1 in these steps, where both leave the gradients' bits as they are.)
func TestGraphSteps(t *testing.T) {
	want, wr, _ := graphRun(t, ops.CPU(), false, true)
	got, gr, _ := graphRun(t, ops.CPU(), true, false)
	if len(want) != 40 || !slices.Equal(got, want) || math.Float64bits(gr.ValBPC) != math.Float64bits(wr.ValBPC) || gr.Sample != wr.Sample {
		t.Errorf("-graph changed the training: %d steps, same losses %v, validation %v and %v, samples %q and %q",
			len(got), slices.Equal(got, want), gr.ValBPC, wr.ValBPC, gr.Sample, wr.Sample)
	}
}

// TestGPUGraph (GPU): the step is captured, and its replays give the losses of eager steps that
// clip on the device (deterministic mode).
func TestGPUGraph(t *testing.T) {
	d := graphtest.CUDA(t, true)
	want, _, _ := graphRun(t, d, false, true)
	got, _, log := graphRun(t, d, true, false)
	if !slices.Equal(got, want) {
		t.Error("-graph's replays changed the losses")
	}
	graphtest.CheckCaptured(t, log)
}
