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

// graphRun trains a small FNO on 20 pairs in batches of 8 (the last one of 4: a second batch
// size) for two epochs with the cosine schedule stepped after every batch, with -graph's steps
// or the eager ones, and returns every loss, the parameters' bits after the training, and
// whether the steps were captured.
func graphRun(t *testing.T, d *ops.Device, graph bool) (losses []float64, params []uint32, captured bool) {
	t.Helper()
	base := d.Stats().LiveBytes
	train, _ := generate(dataParams{Nu: 0.1, Grid: 32, Train: 20, Test: 1, Seed: 2})
	sess := autograd.NewSession(autograd.Options{Device: d, Seed: 5})
	model := newFNO(sess, config{Width: 8, Modes: 6, Layers: 2})
	o := autograd.DefaultAdam()
	o.LR = 3e-3
	opt := autograd.NewAdam(nn.Parameters(model), o)
	ld, err := loader(train, train.scale(), 8, true, 1, d)
	if err != nil {
		t.Fatal(err)
	}
	sched, err := nn.NewCosineAnnealingLR(opt, 2*ld.Len(), 0)
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
				if l, err = g.run(b); err != nil {
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
		t.Errorf("%s graph %v: live bytes %d after training, %d before", d, graph, got, base)
	}
	return losses, params, captured
}

// checkGraphSteps compares -graph's training with the eager one on d, bit for bit.
func checkGraphSteps(t *testing.T, d *ops.Device) (captured bool) {
	wantLoss, wantParams, _ := graphRun(t, d, false)
	gotLoss, gotParams, captured := graphRun(t, d, true)
	if len(gotLoss) != 6 || len(wantLoss) != 6 {
		t.Fatalf("%d and %d steps, want 6", len(gotLoss), len(wantLoss))
	}
	for k := range wantLoss {
		if math.Float64bits(gotLoss[k]) != math.Float64bits(wantLoss[k]) {
			t.Errorf("%s: step %d: loss %v with -graph, %v without", d, k, gotLoss[k], wantLoss[k])
		}
	}
	if !slices.Equal(gotParams, wantParams) {
		t.Errorf("%s: the parameters differ with -graph", d)
	}
	if wantLoss[0] == wantLoss[3] {
		t.Errorf("%s: losses %v: the training does not move", d, wantLoss)
	}
	return captured
}

// TestGraphSteps: on the CPU -graph's steps (a static input, an eager Step) give the losses and
// parameters of the eager steps bit for bit, with a learning rate changing every step and a
// short last batch.
func TestGraphSteps(t *testing.T) {
	if checkGraphSteps(t, ops.CPU()) {
		t.Error("captured on the CPU")
	}
}

// TestGPUGraph (GPU): the same with replayed CUDA graphs, in deterministic mode (the eager and
// the captured runs must not differ by the order of atomic additions).
func TestGPUGraph(t *testing.T) {
	d, err := ops.Open("cuda")
	testenv.RequireCUDA(t, err == nil, fmt.Sprint(err))
	if err := d.CanCapture(); err != nil {
		t.Fatalf("CUDA device cannot capture: %v", err)
	}
	old := ops.Deterministic()
	ops.SetDeterministic(true)
	defer ops.SetDeterministic(old)
	if !checkGraphSteps(t, d) {
		t.Error("not captured on the GPU")
	}
}
