package main

import (
	"math/rand/v2"
	"testing"

	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/autograd/nn"
	"github.com/torchlean-go/torchlean/ops"
)

// BenchmarkFNOStep is one training step of an FNO-1D at the size of issue 24's benchmark and
// internal/bench/torch_fno.py's PyTorch step: 4 Fourier layers of width 64 with 16 modes, a grid
// of 1024 points, a batch of 64, Adam; forward, relative L2 loss, backward, optimizer step and
// the loss read back. The batch (random values) is on the device and two steps have run before
// the timing starts.
// internal/bench/cpu-torch-fno.sh runs both and prints the ratio.
func BenchmarkFNOStep(b *testing.B) {
	const batch, grid = 64, 1024
	d := ops.Default()
	sess := autograd.NewSession(autograd.Options{Device: d, Seed: 1})
	model := newFNO(sess, config{Width: 64, Modes: 16, Layers: 4})
	opt := autograd.NewAdam(nn.Parameters(model), autograd.DefaultAdam())
	rng := rand.New(rand.NewPCG(1, 2))
	features := make([]float32, batch*grid*3) // u0, x, u1 at each point
	for i := range batch * grid {
		features[3*i] = float32(rng.NormFloat64())
		features[3*i+1] = float32(i%grid) / grid
		features[3*i+2] = float32(rng.NormFloat64())
	}
	x, err := ops.FromFloat32(d, features)
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		x.Release()
		opt.Close()
		sess.Close()
	}()
	batchOf := &nn.Batch{X: x, XShape: []int{batch, grid, 3}}
	for range 2 { // warm-up, untimed: Adam's state, the allocator's cache, the spectral tables
		step(sess, model, opt, batchOf)
	}
	for b.Loop() {
		step(sess, model, opt, batchOf)
	}
	if err := sess.Err(); err != nil {
		b.Fatal(err)
	}
}
