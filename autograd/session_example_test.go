package autograd_test

import (
	"fmt"

	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/ops"
)

// Train a 2-8-1 tanh network on XOR with AdamW. The session holds the parameters on its device;
// each step records the forward pass on a fresh tape (Reset), accumulates the parameters'
// gradients (Backward) and updates them in place with one fused kernel per tensor (Step). The
// initial weights come from the session's seed, so the run prints the same numbers on every
// machine and on the CPU or a GPU.
func ExampleSession() {
	sess := autograd.NewSession(autograd.Options{Device: ops.CPU(), Seed: 7}) // or Device: nil for the default device
	defer sess.Close()
	w1 := sess.ParamUniform("w1", []int{8, 2}, -1, 1)
	b1 := sess.Param("b1", []int{8}, nil)
	w2 := sess.ParamUniform("w2", []int{1, 8}, -1, 1)
	b2 := sess.Param("b2", []int{1}, nil)
	o := autograd.DefaultAdamW()
	o.LR = 0.05
	opt := autograd.NewAdamW(sess.Params(), o)

	x := []float32{0, 0, 0, 1, 1, 0, 1, 1}
	y := []float32{0, 1, 1, 0}
	for step := range 301 {
		sess.Reset()
		h := sess.Tanh(sess.Linear(sess.Input(x, 4, 2), sess.Use(w1), sess.Use(b1)))
		loss := sess.MSELoss(sess.Linear(h, sess.Use(w2), sess.Use(b2)), sess.Input(y, 4, 1))
		sess.Backward(loss)
		opt.Step()
		opt.ZeroGrad()
		if step%100 == 0 {
			fmt.Printf("step %3d: loss %.6f\n", step, sess.Item(loss))
		}
	}
	if err := sess.Err(); err != nil { // the first error of the whole loop, if any
		fmt.Println(err)
		return
	}
	out, _ := b2.Host() // downloads the updated bias
	fmt.Printf("b2 = %.4f\n", out[0])
	// Output:
	// step   0: loss 0.594824
	// step 100: loss 0.000031
	// step 200: loss 0.000004
	// step 300: loss 0.000003
	// b2 = 0.1030
}

// Clip the gradients between the backward pass and the optimizer step, as
// torch.nn.utils.clip_grad_norm_ does: here the loss sum(3*w) gives w the gradient [3 3 3 3],
// of norm 6, scaled to norm 1.
func ExampleClipGradNorm() {
	sess := autograd.NewSession(autograd.Options{Device: ops.CPU()})
	defer sess.Close()
	w := sess.Param("w", []int{4}, []float32{1, 2, 3, 4})
	opt := autograd.NewSGD(sess.Params(), autograd.SGDOptions{LR: 0.5})
	sess.Backward(sess.Sum(sess.Scale(sess.Use(w), 3)))
	norm, err := autograd.ClipGradNorm(sess.Params(), 1)
	if err != nil {
		fmt.Println(err)
		return
	}
	g, _ := w.Grad().Float32s()
	fmt.Printf("norm before %.1f, gradient now %.4f\n", norm, g)
	opt.Step()
	v, _ := w.Host()
	fmt.Printf("w = %.4f\n", v)
	// Output:
	// norm before 6.0, gradient now [0.5000 0.5000 0.5000 0.5000]
	// w = [0.7500 1.7500 2.7500 3.7500]
}

// A batch norm over two channels of a batch of four: a training-mode call normalizes each
// channel with the batch's statistics and moves the running statistics a tenth of the way toward
// them (momentum 0.1, the unbiased variance); an evaluation-mode call uses the running ones.
func ExampleSession_BatchNorm() {
	sess := autograd.NewSession(autograd.Options{Device: ops.CPU()})
	defer sess.Close()
	bn := sess.NewBatchNorm("bn", 2)
	x := []float32{ // (4, 2): channel 0 holds 1..4, channel 1 holds 10, 20, 30, 40
		1, 10,
		2, 20,
		3, 30,
		4, 40,
	}
	y := sess.BatchNorm(bn, sess.Input(x, 4, 2), true)
	out, _ := sess.Value(y).Float32s()
	mean, _ := bn.RunningMean.Host()
	variance, _ := bn.RunningVar.Host()
	fmt.Printf("train: %.3f\nrunning mean %.2f, running var %.4f\n", out, mean, variance)

	sess.Reset()
	y = sess.BatchNorm(bn, sess.Input(x, 4, 2), false)
	out, _ = sess.Value(y).Float32s()
	fmt.Printf("eval: %.3f\n", out)
	// Output:
	// train: [-1.342 -1.342 -0.447 -0.447 0.447 0.447 1.342 1.342]
	// running mean [0.25 2.50], running var [1.0667 17.5667]
	// eval: [0.726 1.789 1.694 4.175 2.663 6.561 3.631 8.947]
}

// A bad batch (here a label out of range) fails its step; ClearErr reports it and lets the loop
// go on from the same parameters, as a PyTorch loop that catches the exception would.
func ExampleSession_ClearErr() {
	s := autograd.NewSession(autograd.Options{Device: ops.CPU(), Seed: 1})
	defer s.Close()
	w := s.ParamUniform("w", []int{3, 2}, -1, 1)
	opt := autograd.NewSGD([]*autograd.Param{w}, autograd.SGDOptions{LR: 0.5})
	x := []float32{1, -1, 0.5, 2}
	for step, labels := range [][]int{{0, 2}, {0, 7}, {0, 2}} {
		s.Reset()
		loss := s.CrossEntropy(s.Linear(s.Input(x, 2, 2), s.Use(w), autograd.Var{}), labels)
		s.Backward(loss)
		opt.Step()
		opt.ZeroGrad()
		if err := s.ClearErr(); err != nil {
			fmt.Printf("step %d skipped: %v\n", step, err)
			continue
		}
		fmt.Printf("step %d trained\n", step)
	}
	// Output:
	// step 0 trained
	// step 1 skipped: autograd: cross_entropy: label 7 at position 1 is outside [0, 3)
	// step 2 trained
}
