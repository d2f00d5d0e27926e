package main

import (
	"testing"

	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/autograd/nn"
	"github.com/torchlean-go/torchlean/examples/internal/graphstep"
	"github.com/torchlean-go/torchlean/examples/internal/graphstep/graphtest"
	"github.com/torchlean-go/torchlean/ops"
)

// checkGraphSteps trains a small FNO on d on 20 pairs in batches of 8 (the last one of 4: a
// second batch size) for two epochs with the cosine schedule stepped after every batch, with
// -graph's steps and with the eager ones, and compares them bit for bit (graphtest.Compare).
// It returns whether -graph's steps were captured.
func checkGraphSteps(t *testing.T, d *ops.Device) (captured bool) {
	train, _ := generate(dataParams{Nu: 0.1, Grid: 32, Train: 20, Test: 1, Seed: 2})
	losses, captured := graphtest.Compare(t, d, "fno", 2, 6, func() graphtest.Training {
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
		return graphtest.Training{Sess: sess, Model: model, Opt: opt, Loader: ld, Sched: sched,
			Step:  func(b *nn.Batch) float64 { return step(sess, model, opt, b) },
			Graph: func() *graphstep.Steps { return newGraphSteps(sess, model, opt) }}
	})
	if losses[0] == losses[3] {
		t.Errorf("%s: losses %v: the training does not move", d, losses)
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
	if !checkGraphSteps(t, graphtest.CUDA(t, true)) {
		t.Error("not captured on the GPU")
	}
}
