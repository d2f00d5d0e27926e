package dist_test

import (
	"fmt"

	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/autograd/dist"
	"github.com/torchlean-go/torchlean/ops"
)

// Two in-process CPU ranks: each starts from its own parameter value (New broadcasts rank 0's),
// computes the gradient of its own loss, and DDP averages the gradients.
func ExampleRunLocal() {
	devs := []*ops.Device{ops.CPU(), ops.CPU()}
	grads := make([]float32, 2)
	err := dist.RunLocal(devs, dist.RunOptions{}, func(w *dist.Worker) error {
		s := autograd.NewSession(autograd.Options{Device: w.Device})
		defer s.Close()
		p := s.Param("w", []int{1}, []float32{float32(10 * (w.Rank + 1))})
		ddp, err := dist.New(s, w.Comm, dist.Options{})
		if err != nil {
			return err
		}
		// loss = (rank+1) * w: gradient rank+1, averaged over the ranks: 1.5.
		x := s.Input([]float32{float32(w.Rank + 1)}, 1)
		if err := ddp.Backward(s.Sum(s.Mul(s.Use(p), x))); err != nil {
			return err
		}
		g, _ := p.Grad().Float32s()
		v, _ := p.Host()
		grads[w.Rank] = g[0]
		if w.Rank == 1 {
			fmt.Println("rank 1 starts from rank 0's value:", v[0])
		}
		return nil
	})
	fmt.Println(grads, err)
	// Output:
	// rank 1 starts from rank 0's value: 10
	// [1.5 1.5] <nil>
}

// Gradient accumulation: each rank runs two micro-batches, the first without communication; the
// second Backward averages the accumulated sums.
func ExampleDDP_BackwardNoSync() {
	grads := make([]float32, 2)
	err := dist.RunLocal([]*ops.Device{ops.CPU(), ops.CPU()}, dist.RunOptions{}, func(w *dist.Worker) error {
		s := autograd.NewSession(autograd.Options{Device: w.Device})
		defer s.Close()
		p := s.Param("w", []int{1}, []float32{1})
		ddp, err := dist.New(s, w.Comm, dist.Options{})
		if err != nil {
			return err
		}
		// Micro-batch 1: loss = (rank+1) * w; micro-batch 2: loss = 10 * w.
		if err := ddp.BackwardNoSync(s.Sum(s.Mul(s.Use(p), s.Input([]float32{float32(w.Rank + 1)}, 1)))); err != nil {
			return err
		}
		s.Reset()
		if err := ddp.Backward(s.Sum(s.Mul(s.Use(p), s.Input([]float32{10}, 1)))); err != nil {
			return err
		}
		g, err := p.Grad().Float32s()
		grads[w.Rank] = g[0] // (11 + 12) / 2
		return err
	})
	fmt.Println(grads, err)
	// Output:
	// [11.5 11.5] <nil>
}
