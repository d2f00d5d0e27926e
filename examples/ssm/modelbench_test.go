package main

import (
	"testing"

	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/autograd/nn"
	"github.com/torchlean-go/torchlean/examples/internal/stepbench"
	"github.com/torchlean-go/torchlean/examples/internal/text"
	"github.com/torchlean-go/torchlean/ops"
)

// BenchmarkModelStep is the model benchmark suite's rows of this example (issue 27, item 5;
// examples/internal/stepbench), eager and offered to the capture, against
// internal/bench/torch_models.py:
//
//   - ssm: the GPU defaults, 6 blocks of width 384 (768 scan channels, 4 convolution taps), 64
//     windows of 256 characters, peak learning rate 2e-3 (schedule of 3000 steps);
//   - ssm_small: the CPU defaults, 3 blocks of width 96, 32 windows of 128 characters, 4e-3
//     (500 steps).
//
// The step is run's: cross-entropy over the 91 characters, backward, ClipGradNorm to 1, AdamW
// (betas 0.9 and 0.99, weight decay 0.1), the warm-up and cosine schedule stepped after it. The
// eager row uploads the []int batch each step and clips on the host, as the example without
// -graph does; the graph row is -graph's step (the batch refilled into the static index buffers
// before each replay, the zero states made once, the clipping on the device). The tokens and
// labels are random ids, the same every step. ssm is Large.
func BenchmarkModelStep(b *testing.B) {
	stepbench.Run(b, []stepbench.Case{
		{Name: "ssm", Large: true, Build: func(d *ops.Device) (*stepbench.Step, error) {
			return ssmStep(d, options{Steps: 3000, Batch: 64, Seq: 256, Width: 384, Layers: 6, LR: 2e-3})
		}},
		{Name: "ssm_small", Build: func(d *ops.Device) (*stepbench.Step, error) {
			return ssmStep(d, options{Steps: 500, Batch: 32, Seq: 128, Width: 96, Layers: 3, LR: 4e-3})
		}},
	})
}

// ssmStep builds the training step of a model of o's shape on d.
func ssmStep(d *ops.Device, o options) (*stepbench.Step, error) {
	cfg := config{Vocab: text.OpticksCorpus().Vocab.Size(), D: o.Width, Inner: 2 * o.Width, Layers: o.Layers, Conv: 4}
	if err := cfg.check(); err != nil {
		return nil, err
	}
	s := autograd.NewSession(autograd.Options{Device: d, Seed: 1})
	m := newModel(s, cfg)
	ao := autograd.DefaultAdamW()
	ao.LR, ao.Beta2, ao.WeightDecay = o.LR, 0.99, 0.1
	params := nn.Parameters(m)
	opt := autograd.NewAdamW(params, ao)
	sched, err := schedule(opt, o.Steps)
	if err == nil {
		err = s.Err()
	}
	if err != nil {
		opt.Close()
		s.Close()
		return nil, err
	}
	b := &nn.Batch{Tokens: stepbench.Tokens(1, o.Batch*o.Seq, cfg.Vocab), Labels: stepbench.Tokens(2, o.Batch*o.Seq, cfg.Vocab)}
	// run's stepFn: on the host batch b (on nil), or -graph's on the static inputs
	return stepbench.TextStep(s, params, opt, sched,
		func(on *static) autograd.Var { return m.stepLoss(on, b, o.Batch, o.Seq) },
		func() (*static, error) { return newStatic(m, o.Batch, o.Seq) },
		func(st *static) error { return st.load(b, o.Batch, o.Seq) },
		func(st *static) { st.release() }), nil
}
