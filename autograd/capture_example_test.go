package autograd_test

import (
	"fmt"

	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/ops"
)

// A training step captured once and run many times. The inputs are static: each step copies its
// batch into them before Run. On a GPU each Run replays a CUDA graph; on the CPU (as here) Run
// calls the step function, with the same results.
func ExampleSession_Capture() {
	sess := autograd.NewSession(autograd.Options{Device: ops.CPU(), Seed: 1})
	defer sess.Close()
	w := sess.Param("w", []int{1, 2}, nil)
	opt := autograd.NewSGD(sess.Params(), autograd.SGDOptions{LR: 0.1})
	x, _ := sess.NewStaticInput(4, 2)
	y, _ := sess.NewStaticInput(4, 1)
	defer x.Release()
	defer y.Release()

	var loss autograd.Var
	step := func() error {
		sess.Reset()
		loss = sess.MSELoss(sess.Linear(x.Var(), sess.Use(w), autograd.Var{}), y.Var())
		sess.Backward(loss)
		opt.Step()
		opt.ZeroGrad()
		return sess.Err()
	}
	feed := func() {
		x.Set([]float32{1, 0, 0, 1, 1, 1, 2, 1}) // y = 2*x0 - x1
		y.Set([]float32{2, -1, 1, 3})
	}
	feed()
	step() // one eager step first (optimizer state)
	graphed, err := sess.Capture(step)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer graphed.Close()
	for range 200 {
		feed()
		graphed.Run()
	}
	fmt.Printf("captured %v, loss %.4f\n", graphed.Captured(), sess.Item(loss))
	// Output: captured false, loss 0.0000
}
