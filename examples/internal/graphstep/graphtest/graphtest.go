// Package graphtest holds the test scaffolding of the examples' -graph flag: a training run
// compared eagerly and with graphstep.Steps bit for bit, the CUDA device of the GPU tests, and
// the check of a logged refusal.
package graphtest

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/autograd/nn"
	"github.com/torchlean-go/torchlean/examples/internal/graphstep"
	"github.com/torchlean-go/torchlean/internal/testenv"
	"github.com/torchlean-go/torchlean/ops"
)

// Training is one training run of a test, made by the setup of Compare: its session, model
// (whose parameters are compared) and optimizer, the loader and the schedule (stepped after every
// batch), the example's eager step, and the function making -graph's Steps.
type Training struct {
	Sess   *autograd.Session
	Model  nn.Module
	Opt    interface{ Close() }
	Loader *nn.Loader
	Sched  nn.Scheduler
	Step   func(b *nn.Batch) float64 // the eager step, returning its loss
	Graph  func() *graphstep.Steps   // -graph's steps
}

// train runs tr for epochs epochs, with -graph's steps when graph is set, and returns every
// loss, the parameters' bits after the training, and whether the steps were captured; it closes
// everything and checks that the device's live bytes are back to base.
func train(t *testing.T, d *ops.Device, base int64, label string, epochs int, tr Training, graph bool) (losses []float64, params []uint32, captured bool) {
	t.Helper()
	var g *graphstep.Steps
	if graph {
		g = tr.Graph()
	}
	for epoch := range epochs {
		for b := range tr.Loader.Epoch(epoch) {
			l, err := graphstep.RunStep(g, b, tr.Step)
			if err != nil {
				t.Fatal(err)
			}
			tr.Sched.Step()
			losses = append(losses, l)
		}
	}
	if err := errors.Join(tr.Sess.Err(), tr.Loader.Err()); err != nil {
		t.Fatal(err)
	}
	params = ParamBits(t, nn.Parameters(tr.Model))
	if g != nil {
		captured, _ = g.Captured()
		if err := g.Close(); err != nil {
			t.Fatal(err)
		}
	}
	tr.Opt.Close()
	tr.Loader.Close()
	if err := tr.Sess.Close(); err != nil {
		t.Fatal(err)
	}
	if got := d.Stats().LiveBytes; got != base {
		t.Errorf("%s %s graph %v: live bytes %d after training, %d before", d, label, graph, got, base)
	}
	return losses, params, captured
}

// Compare trains twice on d for epochs epochs, eagerly and with -graph (setup makes each run),
// and checks that -graph's run gives the eager run's losses
// and parameters bit for bit, that both ran steps steps, and that each released every buffer.
// It returns the eager run's losses and whether -graph's steps were captured. label names the
// case in the errors.
func Compare(t *testing.T, d *ops.Device, label string, epochs, steps int, setup func() Training) (eager []float64, captured bool) {
	t.Helper()
	run := func(graph bool) ([]float64, []uint32, bool) {
		base := d.Stats().LiveBytes
		return train(t, d, base, label, epochs, setup(), graph)
	}
	wantLoss, wantParams, _ := run(false)
	gotLoss, gotParams, captured := run(true)
	if len(gotLoss) != steps || len(wantLoss) != steps {
		t.Fatalf("%s %s: %d and %d steps, want %d", d, label, len(gotLoss), len(wantLoss), steps)
	}
	for k := range wantLoss {
		if math.Float64bits(gotLoss[k]) != math.Float64bits(wantLoss[k]) {
			t.Errorf("%s %s: step %d: loss %v with -graph, %v without", d, label, k, gotLoss[k], wantLoss[k])
		}
	}
	if !slices.Equal(gotParams, wantParams) {
		t.Errorf("%s %s: the parameters differ with -graph", d, label)
	}
	return wantLoss, captured
}

// ParamBits returns the bits of the parameters' values, in order.
func ParamBits(t testing.TB, params []*autograd.Param) []uint32 {
	t.Helper()
	var bits []uint32
	for _, p := range params {
		h, err := p.Host()
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range h {
			bits = append(bits, math.Float32bits(v))
		}
	}
	return bits
}

// CUDA returns the CUDA device of a GPU test (skipping the test without one, failing it under
// TORCHLEAN_REQUIRE_CUDA=1) in deterministic mode until the test ends, so that eager and
// captured or refused runs do not differ by the order of atomic additions. With capture the
// device must be able to capture.
func CUDA(t testing.TB, capture bool) *ops.Device {
	t.Helper()
	d, err := ops.Open("cuda")
	testenv.RequireCUDA(t, err == nil, fmt.Sprint(err))
	if capture {
		if err := d.CanCapture(); err != nil {
			t.Fatalf("CUDA device cannot capture: %v", err)
		}
	}
	old := ops.Deterministic()
	ops.SetDeterministic(true)
	t.Cleanup(func() { ops.SetDeterministic(old) })
	return d
}

// CheckRefused checks that log holds the line of graphstep.Offered's refusal, naming a call
// that a capture cannot make.
func CheckRefused(t testing.TB, log string) {
	t.Helper()
	if !strings.Contains(log, graphstep.RefusedPrefix) || !strings.Contains(log, "CUDA graph capture") {
		t.Errorf("no refusal naming the call in the log:\n%s", log)
	}
}

// CheckCaptured checks that log holds graphstep.Offered's line of a captured step, and no
// refusal.
func CheckCaptured(t testing.TB, log string) {
	t.Helper()
	if !strings.Contains(log, graphstep.CapturedLine) || strings.Contains(log, graphstep.RefusedPrefix) {
		t.Errorf("the step was not captured; log:\n%s", log)
	}
}
