package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/autograd/nn"
	"github.com/torchlean-go/torchlean/ops"
)

// The CNN has PyTorch's keys and shapes, learns on a slice of the embedded subset (the loss of
// the last steps 40% below that of the first), classifies most test images after two epochs of 1,600
// images, and gives every byte back.
func TestCNNTrain(t *testing.T) {
	tr, te, _, err := loadData("embedded", embeddedSubset())
	if err != nil {
		t.Fatal(err)
	}
	d := ops.CPU()
	base := d.Stats().LiveBytes
	sess := autograd.NewSession(autograd.Options{Device: d, Seed: 1})
	model := newCNN(sess, tr.Rows, tr.Cols, []int{8, 16}, []int{64}, 0.25, len(Classes))
	var keys []string
	for _, p := range nn.NamedParameters(model) {
		keys = append(keys, fmt.Sprint(p.Key, p.Param.Shape()))
	}
	want := []string{"1.weight[8 1 3 3]", "1.bias[8]", "4.weight[16 8 3 3]", "4.bias[16]", "8.weight[64 784]", "8.bias[64]", "11.weight[10 64]", "11.bias[10]"}
	if !slices.Equal(keys, want) {
		t.Errorf("keys and shapes %q, want %q", keys, want)
	}
	opt := autograd.NewSGD(nn.Parameters(model), autograd.SGDOptions{LR: 0.05, Momentum: 0.9})
	small := &Dataset{Rows: tr.Rows, Cols: tr.Cols, Images: tr.Images[:1600*tr.Pixels()], Labels: tr.Labels[:1600]}
	trLoader, err := loader(small, 32, true, 1, d)
	if err != nil {
		t.Fatal(err)
	}
	teLoader, err := loader(&Dataset{Rows: te.Rows, Cols: te.Cols, Images: te.Images[:500*te.Pixels()], Labels: te.Labels[:500]}, 250, false, 0, d)
	if err != nil {
		t.Fatal(err)
	}
	var losses []float64
	for epoch := range 2 {
		for b := range trLoader.Epoch(epoch) {
			losses = append(losses, step(sess, model, opt, b))
		}
	}
	acc := accuracy(sess, model, teLoader)
	if err := errors.Join(sess.Err(), trLoader.Err(), teLoader.Err()); err != nil {
		t.Fatal(err)
	}
	if len(losses) != 100 {
		t.Fatalf("%d steps, want 100", len(losses))
	}
	first, last := mean(losses[:5]), mean(losses[90:])
	t.Logf("mean loss %.3f over the first 5 steps, %.3f over the last 10; test accuracy %.3f", first, last, acc)
	if !(first > 2 && last < 0.6*first) {
		t.Errorf("mean loss %.3f over the first 5 steps, %.3f over the last 10: want it to start near ln 10 and fall by 40%%", first, last)
	}
	if acc < 0.6 {
		t.Errorf("test accuracy %.3f after 100 steps", acc)
	}
	opt.Close()
	trLoader.Close()
	teLoader.Close()
	if err := sess.Close(); err != nil {
		t.Fatal(err)
	}
	if got := d.Stats().LiveBytes; got != base {
		t.Errorf("live bytes %d after training, %d before", got, base)
	}
}

// Images too small for the poolings are an error in the session, not a panic.
func TestCNNTooSmall(t *testing.T) {
	sess := autograd.NewSession(autograd.Options{Device: ops.CPU(), Seed: 1})
	defer sess.Close()
	newCNN(sess, 3, 3, []int{2, 2}, nil, 0, 10)
	if err := sess.Err(); err == nil || !strings.Contains(err.Error(), "3x3 images are too small for 2 poolings") {
		t.Errorf("got %v", err)
	}
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}
