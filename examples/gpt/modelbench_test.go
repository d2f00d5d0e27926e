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
//   - gpt: the size, 6 layers, d 512, 8 heads of 64 channels, context 256, batch 32,
//     peak learning rate 1e-3 with the GPU defaults' schedule (100 warm-up steps of 3000);
//   - gpt_small: the CPU defaults, 2 layers, d 128, 4 heads, context 32, batch 64, 5e-3 (30
//     warm-up steps of 1000).
//
// The step is runRank's: cross-entropy over the 91 characters, backward, ClipGradNorm to 1,
// AdamW (betas 0.9 and 0.99, weight decay 0.1), the warm-up and cosine schedule stepped after
// it. The eager row uploads the []int batch each step and clips on the host, as the example
// without -graph does; the graph row is -graph's step (the batch refilled into the static
// index buffers before each replay, the clipping on the device). The tokens and labels are
// random ids, the same every step. gpt is Large.
func BenchmarkModelStep(b *testing.B) {
	stepbench.Run(b, []stepbench.Case{
		{Name: "gpt", Large: true, Build: func(d *ops.Device) (*stepbench.Step, error) {
			return gptStep(d, options{Batch: 32, Seq: 256, Width: 512, Heads: 8, Layers: 6, LR: 1e-3, Steps: 3000, Warmup: 100})
		}},
		{Name: "gpt_small", Build: func(d *ops.Device) (*stepbench.Step, error) {
			return gptStep(d, options{Batch: 64, Seq: 32, Width: 128, Heads: 4, Layers: 2, LR: 5e-3, Steps: 1000, Warmup: 30})
		}},
	})
}

// gptStep builds the training step of a model of o's shape on d.
func gptStep(d *ops.Device, o options) (*stepbench.Step, error) {
	cfg := config{Vocab: text.OpticksCorpus().Vocab.Size(), Seq: o.Seq, Width: o.Width, Heads: o.Heads, Layers: o.Layers}
	if err := cfg.check(); err != nil {
		return nil, err
	}
	s := autograd.NewSession(autograd.Options{Device: d, Seed: 1})
	m := newGPT(s, cfg)
	params := nn.Parameters(m)
	ao := autograd.DefaultAdamW()
	ao.LR, ao.Beta2, ao.WeightDecay = o.LR, 0.99, 0.1
	opt := autograd.NewAdamW(params, ao)
	sched, err := schedule(opt, o.Steps, o.Warmup, o.LR/10)
	if err == nil {
		err = s.Err()
	}
	if err != nil {
		opt.Close()
		s.Close()
		return nil, err
	}
	b := &nn.Batch{Tokens: stepbench.Tokens(1, o.Batch*o.Seq, cfg.Vocab), TokensShape: []int{o.Batch, o.Seq},
		Labels: stepbench.Tokens(2, o.Batch*o.Seq, cfg.Vocab)}
	// runRank's stepFn: on the host batch b (on nil), or -graph's on the static inputs
	return stepbench.TextStep(s, params, opt, sched,
		func(on *static) autograd.Var { return m.stepLoss(on, b) },
		func() (*static, error) { return newStatic(m, o.Batch, o.Seq) },
		func(st *static) error { return st.load(b) },
		func(st *static) { st.release() }), nil
}
