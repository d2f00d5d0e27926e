package main

import (
	"math/rand/v2"
	"testing"

	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/autograd/nn"
	"github.com/torchlean-go/torchlean/examples/internal/stepbench"
	"github.com/torchlean-go/torchlean/ops"
)

// BenchmarkModelStep is the model benchmark suite's row of this example (issue 27, item 5;
// examples/internal/stepbench), eager and captured, against internal/bench/torch_models.py:
// fno, the example's defaults: 4 Fourier layers of width 64 with 16 modes, a grid of 256
// points, a batch of 20, relative L2 loss, Adam at 1e-3 annealed along a cosine over 20 epochs
// of 50 steps. The eager step is the example's step; the captured one is -graph's (the (batch,
// grid, 3) features in a static input). The batch is random, resident on the device.
func BenchmarkModelStep(b *testing.B) {
	stepbench.Run(b, []stepbench.Case{{Name: "fno", Build: fnoStep}})
}

// fnoStep builds the fno row's training step on d.
func fnoStep(d *ops.Device) (*stepbench.Step, error) {
	const batch, grid = 20, 256
	sess := autograd.NewSession(autograd.Options{Device: d, Seed: 1})
	model := newFNO(sess, config{Width: 64, Modes: 16, Layers: 4})
	o := autograd.DefaultAdam()
	o.LR = 1e-3
	opt := autograd.NewAdam(nn.Parameters(model), o)
	sched, err := nn.NewCosineAnnealingLR(opt, 20*50, 0)
	rng := rand.New(rand.NewPCG(1, 2))
	features := make([]float32, batch*grid*3) // u0, x, u1 at each point, as the loader's
	for i := range batch * grid {
		features[3*i] = float32(rng.NormFloat64())
		features[3*i+1] = float32(i%grid) / grid
		features[3*i+2] = float32(rng.NormFloat64())
	}
	var xb *ops.Buffer
	var in *autograd.StaticInput
	closeAll := func() {
		if in != nil {
			in.Release()
		}
		if xb != nil {
			xb.Release()
		}
		opt.Close()
		sess.Close()
	}
	if err == nil {
		err = sess.Err()
	}
	if err == nil {
		xb, err = stepbench.Upload(d, "features", features)
	}
	if err == nil {
		in, err = sess.NewStaticInput(batch, grid, 3)
	}
	if err != nil {
		closeAll()
		return nil, err
	}
	b := &nn.Batch{X: xb, XShape: []int{batch, grid, 3}}
	return &stepbench.Step{
		Sess: sess,
		Eager: func() error { // step's, without reading the loss
			sess.Reset()
			x, y := split(sess.Tape, b)
			loss := sess.Mean(relativeL2(sess.Tape, model.Forward(x), y))
			sess.Backward(loss)
			if err := opt.Step(); err != nil {
				return err
			}
			opt.ZeroGrad()
			return sess.Err()
		},
		Load: func() error { return in.CopyFrom(xb) },
		Body: func() error { // newGraphSteps's Body
			sess.Reset()
			xy := in.Var()
			x, y := sess.Narrow(xy, 2, 0, 2), sess.Narrow(xy, 2, 2, 1)
			loss := sess.Mean(relativeL2(sess.Tape, model.Forward(x), y))
			sess.Backward(loss)
			if err := opt.Step(); err != nil {
				return err
			}
			opt.ZeroGrad()
			return sess.Err()
		},
		Sched: sched,
		Close: closeAll,
	}, nil
}
