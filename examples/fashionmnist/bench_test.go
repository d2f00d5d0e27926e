package main

import (
	"math/rand/v2"
	"testing"

	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/ops"
)

// benchModel returns the example's default model (784-256-10) and SGD in a CPU session, with the
// embedded subset on the CPU device.
func benchModel(b *testing.B) (train, test *deviceSet, sess *autograd.Session, m *mlp, opt *autograd.SGD) {
	tr, te, _, err := loadData("embedded", embeddedSubset())
	if err != nil {
		b.Fatal(err)
	}
	d := ops.CPU()
	sess = autograd.NewSession(autograd.Options{Device: d, Seed: 1})
	if m, err = newMLP(sess, []int{tr.Pixels(), 256, len(Classes)}, 1); err != nil {
		b.Fatal(err)
	}
	opt = autograd.NewSGD(sess.Params(), autograd.SGDOptions{LR: 0.01})
	if train, err = onDevice(d, tr); err != nil {
		b.Fatal(err)
	}
	if test, err = onDevice(d, te); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		opt.Close()
		train.Release()
		test.Release()
		sess.Close()
	})
	return train, test, sess, m, opt
}

// BenchmarkStep is one training step of the example (batch 64 of a shuffled epoch, the loss read
// back): the time of 20 epochs is about 3140 of these plus 20 BenchmarkAccuracy.
func BenchmarkStep(b *testing.B) {
	train, _, sess, m, opt := benchModel(b)
	perm := rand.New(rand.NewPCG(1, 0)).Perm(train.Len())
	const batch = 64
	s := 0
	for b.Loop() {
		if (s+1)*batch > len(perm) {
			s = 0
		}
		m.step(sess, opt, train, perm[s*batch:(s+1)*batch])
		s++
	}
	if err := sess.Err(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkAccuracy is the evaluation after each epoch (the 2,000 test images of the subset).
func BenchmarkAccuracy(b *testing.B) {
	_, test, sess, m, _ := benchModel(b)
	for b.Loop() {
		m.accuracy(sess, test)
	}
	if err := sess.Err(); err != nil {
		b.Fatal(err)
	}
}
