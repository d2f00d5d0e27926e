package main

import (
	"testing"

	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/autograd/nn"
	"github.com/torchlean-go/torchlean/examples/internal/graphstep"
	"github.com/torchlean-go/torchlean/examples/internal/graphstep/graphtest"
	"github.com/torchlean-go/torchlean/ops"
)

// checkGraphSteps trains the MLP or the CNN (kind) on d on 200 images in batches of 64 (the
// last one of 8: a second batch size) for two epochs with a learning rate decaying every step,
// with -graph's steps and with the eager ones, and compares them bit for bit
// (graphtest.Compare). It returns whether -graph's steps were captured.
func checkGraphSteps(t *testing.T, d *ops.Device, kind string) (captured bool) {
	tr, _, _, err := loadData("embedded", embeddedSubset())
	if err != nil {
		t.Fatal(err)
	}
	small := &Dataset{Rows: tr.Rows, Cols: tr.Cols, Images: tr.Images[:200*tr.Pixels()], Labels: tr.Labels[:200]}
	losses, captured := graphtest.Compare(t, d, kind, 2, 8, func() graphtest.Training {
		sess := autograd.NewSession(autograd.Options{Device: d, Seed: 3})
		var model nn.Layer
		if kind == "cnn" {
			model = newCNN(sess, tr.Rows, tr.Cols, []int{4, 8}, []int{32}, 0.25, len(Classes))
		} else {
			model = nn.NewMLP(sess, []int{784, 32, 10}, nn.MLPOptions{})
		}
		opt := autograd.NewSGD(nn.Parameters(model), autograd.SGDOptions{LR: 0.1, Momentum: 0.5})
		ld, err := loader(small, 64, true, 1, d)
		if err != nil {
			t.Fatal(err)
		}
		sched, err := nn.NewLinearLR(opt, 1, 0, 2*ld.Len())
		if err != nil {
			t.Fatal(err)
		}
		return graphtest.Training{Sess: sess, Model: model, Opt: opt, Loader: ld, Sched: sched,
			Step:  func(b *nn.Batch) float64 { return step(sess, model, opt, b) },
			Graph: func() *graphstep.Steps { return newGraphSteps(sess, model, opt, len(Classes)) }}
	})
	if kind == "mlp" && !(losses[6] < losses[0]) || losses[6] == losses[2] {
		t.Errorf("%s %s: losses %v: the training does not move", d, kind, losses)
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
	d := graphtest.CUDA(t, true)
	for _, kind := range []string{"mlp", "cnn"} {
		t.Run(kind, func(t *testing.T) {
			if !checkGraphSteps(t, d, kind) {
				t.Error("not captured on the GPU")
			}
		})
	}
}
