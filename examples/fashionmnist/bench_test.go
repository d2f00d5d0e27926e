package main

import (
	"iter"
	"testing"

	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/autograd/nn"
	"github.com/torchlean-go/torchlean/ops"
)

// benchModel returns the example's default model (784-256-10) and SGD in a CPU session, with
// loaders of the embedded subset on the CPU device.
func benchModel(b *testing.B) (train, test *nn.Loader, sess *autograd.Session, model nn.Layer, opt *autograd.SGD) {
	tr, te, _, err := loadData("embedded", embeddedSubset())
	if err != nil {
		b.Fatal(err)
	}
	d := ops.CPU()
	sess = autograd.NewSession(autograd.Options{Device: d, Seed: 1})
	model = nn.NewMLP(sess, []int{tr.Pixels(), 256, len(Classes)}, nn.MLPOptions{})
	opt = autograd.NewSGD(nn.Parameters(model), autograd.SGDOptions{LR: 0.01})
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
func BenchmarkStep(b *testing.B) {
	train, _, sess, model, opt := benchModel(b)
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
func BenchmarkAccuracy(b *testing.B) {
	_, test, sess, model, _ := benchModel(b)
	for b.Loop() {
		accuracy(sess, model, test)
	}
	if err := sess.Err(); err != nil {
		b.Fatal(err)
	}
}
