package main

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/autograd/nn"
	"github.com/torchlean-go/torchlean/internal/testenv"
	"github.com/torchlean-go/torchlean/ops"
)

// graphRun trains the MLP or the CNN (kind) on 200 images in batches of 64 (the last one of 8:
// a second batch size) for two epochs with a learning rate decaying every step, with -graph's
// steps or the eager ones, and returns every loss and the parameters' bits after the training,
// and whether the steps were captured.
func graphRun(t *testing.T, d *ops.Device, kind string, graph bool) (losses []float64, params []uint32, captured bool) {
	t.Helper()
	tr, _, _, err := loadData("embedded", embeddedSubset())
	if err != nil {
		t.Fatal(err)
	}
	base := d.Stats().LiveBytes
	sess := autograd.NewSession(autograd.Options{Device: d, Seed: 3})
	var model nn.Layer
	if kind == "cnn" {
		model = newCNN(sess, tr.Rows, tr.Cols, []int{4, 8}, []int{32}, 0.25, len(Classes))
	} else {
		model = nn.NewMLP(sess, []int{784, 32, 10}, nn.MLPOptions{})
	}
	opt := autograd.NewSGD(nn.Parameters(model), autograd.SGDOptions{LR: 0.1, Momentum: 0.5})
	small := &Dataset{Rows: tr.Rows, Cols: tr.Cols, Images: tr.Images[:200*tr.Pixels()], Labels: tr.Labels[:200]}
	ld, err := loader(small, 64, true, 1, d)
	if err != nil {
		t.Fatal(err)
	}
	sched, err := nn.NewLinearLR(opt, 1, 0, 2*ld.Len())
	if err != nil {
		t.Fatal(err)
	}
	var g *graphSteps
	if graph {
		g = newGraphSteps(sess, model, opt)
	}
	for epoch := range 2 {
		for b := range ld.Epoch(epoch) {
			var l float64
			if g != nil {
				if l, err = g.run(b, len(Classes)); err != nil {
					t.Fatal(err)
				}
			} else {
				l = step(sess, model, opt, b)
			}
			sched.Step()
			losses = append(losses, l)
		}
	}
	if err := errors.Join(sess.Err(), ld.Err()); err != nil {
		t.Fatal(err)
	}
	for _, p := range nn.Parameters(model) {
		h, err := p.Host()
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range h {
			params = append(params, math.Float32bits(v))
		}
	}
	if g != nil {
		captured, _ = g.captured()
		if err := g.close(); err != nil {
			t.Fatal(err)
		}
	}
	opt.Close()
	ld.Close()
	if err := sess.Close(); err != nil {
		t.Fatal(err)
	}
	if got := d.Stats().LiveBytes; got != base {
		t.Errorf("%s %s graph %v: live bytes %d after training, %d before", d, kind, graph, got, base)
	}
	return losses, params, captured
}

// checkGraphSteps compares -graph's training with the eager one on d, bit for bit.
func checkGraphSteps(t *testing.T, d *ops.Device, kind string) (captured bool) {
	wantLoss, wantParams, _ := graphRun(t, d, kind, false)
	gotLoss, gotParams, captured := graphRun(t, d, kind, true)
	if len(gotLoss) != 8 || len(wantLoss) != 8 {
		t.Fatalf("%d and %d steps, want 8", len(gotLoss), len(wantLoss))
	}
	for k := range wantLoss {
		if math.Float64bits(gotLoss[k]) != math.Float64bits(wantLoss[k]) {
			t.Errorf("%s %s: step %d: loss %v with -graph, %v without", d, kind, k, gotLoss[k], wantLoss[k])
		}
	}
	if !slices.Equal(gotParams, wantParams) {
		t.Errorf("%s %s: the parameters differ with -graph", d, kind)
	}
	if kind == "mlp" && !(wantLoss[6] < wantLoss[0]) || wantLoss[6] == wantLoss[2] {
		t.Errorf("%s %s: losses %v: the training does not move", d, kind, wantLoss)
	}
	return captured
}

// TestGraphSteps: on the CPU -graph's steps (static inputs, one-hot targets, an eager Step)
// give the losses and parameters of the eager steps bit for bit, for both models, with a
// schedule that changes the learning rate every step and a short last batch.
func TestGraphSteps(t *testing.T) {
	for _, kind := range []string{"mlp", "cnn"} {
		t.Run(kind, func(t *testing.T) {
			if checkGraphSteps(t, ops.CPU(), kind) {
				t.Error("captured on the CPU")
			}
		})
	}
}

// TestGPUGraph (GPU): the same with replayed CUDA graphs: captured steps give the eager steps'
// bits on the GPU (deterministic mode: the eager and the captured runs must not differ by the
// order of atomic additions).
func TestGPUGraph(t *testing.T) {
	d, err := ops.Open("cuda")
	testenv.RequireCUDA(t, err == nil, fmt.Sprint(err))
	if err := d.CanCapture(); err != nil {
		t.Fatalf("CUDA device cannot capture: %v", err)
	}
	old := ops.Deterministic()
	ops.SetDeterministic(true)
	defer ops.SetDeterministic(old)
	for _, kind := range []string{"mlp", "cnn"} {
		t.Run(kind, func(t *testing.T) {
			if !checkGraphSteps(t, d, kind) {
				t.Error("not captured on the GPU")
			}
		})
	}
}
