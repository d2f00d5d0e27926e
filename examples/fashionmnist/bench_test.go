package main

import (
	"iter"
	"strconv"
	"strings"
	"testing"

	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/autograd/nn"
	"github.com/torchlean-go/torchlean/ops"
)

// benchSetup returns the example's default model of the kind ("mlp": 784-256-10 with SGD of
// learning rate 0.01; "cnn": -model cnn's defaults) in a session on d, with loaders of the
// embedded subset on d.
func benchSetup(b *testing.B, kind string, d *ops.Device) (train, test *nn.Loader, sess *autograd.Session, model nn.Layer, opt *autograd.SGD) {
	tr, te, _, err := loadData("embedded", embeddedSubset())
	if err != nil {
		b.Fatal(err)
	}
	sess = autograd.NewSession(autograd.Options{Device: d, Seed: 1})
	if kind == "cnn" {
		hidden, _ := strconv.Atoi(cnnDefaults.hidden)
		var channels []int
		for _, f := range strings.Split(cnnDefaults.channels, ",") {
			c, _ := strconv.Atoi(f)
			channels = append(channels, c)
		}
		model = newCNN(sess, tr.Rows, tr.Cols, channels, []int{hidden}, cnnDefaults.dropout, len(Classes))
		opt = autograd.NewSGD(nn.Parameters(model), autograd.SGDOptions{LR: cnnDefaults.lr, Momentum: cnnDefaults.momentum})
	} else {
		model = nn.NewMLP(sess, []int{tr.Pixels(), 256, len(Classes)}, nn.MLPOptions{})
		opt = autograd.NewSGD(nn.Parameters(model), autograd.SGDOptions{LR: 0.01})
	}
	if train, err = loader(tr, 64, true, 1, d); err != nil {
		b.Fatal(err)
	}
	if test, err = loader(te, 1000, false, 0, d); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		opt.Close()
		train.Close()
		test.Close()
		sess.Close()
	})
	return train, test, sess, model, opt
}

// BenchmarkStep is one training step of the example (batch 64 of a shuffled epoch from the
// loader, the loss read back): the time of 20 epochs is about 3140 of these plus 20
// BenchmarkAccuracy.
func BenchmarkStep(b *testing.B) { benchStep(b, "mlp", ops.CPU()) }

// BenchmarkCNNStep is one training step of -model cnn with its defaults (batch 64): 10 epochs of
// the embedded subset are 1570 of these plus 10 BenchmarkCNNAccuracy.
func BenchmarkCNNStep(b *testing.B) { benchStep(b, "cnn", ops.CPU()) }

// BenchmarkCNNStepCUDA is BenchmarkCNNStep on CUDA device 0 (skips without one): issue 26's CNN
// training step, against internal/bench/torch_bench.py's PyTorch eager step of the same model.
func BenchmarkCNNStepCUDA(b *testing.B) {
	d, err := ops.Open("cuda")
	if err != nil {
		b.Skipf("no CUDA device: %v", err)
	}
	benchStep(b, "cnn", d)
}

func benchStep(b *testing.B, kind string, d *ops.Device) {
	train, _, sess, model, opt := benchSetup(b, kind, d)
	epoch := 0
	next, stop := iter.Pull(train.Epoch(epoch))
	defer func() { stop() }()
	for b.Loop() {
		batch, ok := next()
		if !ok {
			stop()
			epoch++
			next, stop = iter.Pull(train.Epoch(epoch))
			batch, _ = next()
		}
		step(sess, model, opt, batch)
	}
	if err := sess.Err(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkAccuracy is the evaluation after each epoch (the 2,000 test images of the subset).
func BenchmarkAccuracy(b *testing.B) { benchAccuracy(b, "mlp") }

// BenchmarkCNNAccuracy is BenchmarkAccuracy for -model cnn.
func BenchmarkCNNAccuracy(b *testing.B) { benchAccuracy(b, "cnn") }

func benchAccuracy(b *testing.B, kind string) {
	_, test, sess, model, _ := benchSetup(b, kind, ops.CPU())
	for b.Loop() {
		accuracy(sess, model, test)
	}
	if err := sess.Err(); err != nil {
		b.Fatal(err)
	}
}
