package nn_test

import (
	"fmt"
	"log"

	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/autograd/nn"
	"github.com/torchlean-go/torchlean/ops"
)

// A linear warm-up over 3 steps from a tenth of the learning rate, then cosine annealing to
// zero over 4 steps; the state a checkpoint stores, and a resumed copy.
func ExampleNewLinearWarmup() {
	s := autograd.NewSession(autograd.Options{Device: ops.CPU()})
	defer s.Close()
	w := s.Param("w", []int{2}, []float32{1, -1})
	opt := autograd.NewSGD([]*autograd.Param{w}, autograd.SGDOptions{LR: 0.1})

	cosine, err := nn.NewCosineAnnealingLR(opt, 4, 0)
	if err != nil {
		log.Fatal(err)
	}
	sched, err := nn.NewLinearWarmup(opt, 3, 0.1, cosine)
	if err != nil {
		log.Fatal(err)
	}
	for step := range 5 {
		fmt.Printf("step %d: lr %.4f\n", step, opt.LR())
		// ... forward, backward, opt.Step() ...
		sched.Step()
	}
	text, _ := sched.State().MarshalText()
	fmt.Printf("%s\n", text)

	// Resume: the same constructors, then the stored state.
	var st nn.SchedulerState
	if err := st.UnmarshalText(text); err != nil {
		log.Fatal(err)
	}
	resumed, _ := nn.NewLinearWarmup(opt, 3, 0.1, mustSched(nn.NewCosineAnnealingLR(opt, 4, 0)))
	if err := resumed.LoadState(st); err != nil {
		log.Fatal(err)
	}
	for step := 5; step < 8; step++ {
		fmt.Printf("step %d: lr %.4f\n", step, opt.LR())
		resumed.Step()
	}
	// Output:
	// step 0: lr 0.0100
	// step 1: lr 0.0400
	// step 2: lr 0.0700
	// step 3: lr 0.1000
	// step 4: lr 0.0854
	// {"kind":"LinearWarmup","steps":5,"base_lr":0.1,"inner":{"kind":"CosineAnnealingLR","steps":2,"base_lr":0.1}}
	// step 5: lr 0.0500
	// step 6: lr 0.0146
	// step 7: lr 0.0000
}

// One-cycle over 10 steps: up to MaxLR in the first 30%, then down to MaxLR/25/1e4 (the same
// learning rates as PyTorch's OneCycleLR(opt, max_lr=0.01, total_steps=10)).
func ExampleNewOneCycleLR() {
	s := autograd.NewSession(autograd.Options{Device: ops.CPU()})
	defer s.Close()
	w := s.Param("w", []int{1}, []float32{0})
	opt := autograd.NewAdam([]*autograd.Param{w}, autograd.DefaultAdam())
	sched, err := nn.NewOneCycleLR(opt, nn.OneCycleOptions{MaxLR: 0.01, TotalSteps: 10})
	if err != nil {
		log.Fatal(err)
	}
	for range 10 {
		fmt.Printf("%.2e ", opt.LR())
		sched.Step()
	}
	fmt.Println()
	// Output:
	// 4.00e-04 5.20e-03 1.00e-02 9.50e-03 8.12e-03 6.11e-03 3.89e-03 1.88e-03 4.95e-04 4.00e-08
}

func mustSched(s nn.Scheduler, err error) nn.Scheduler {
	if err != nil {
		log.Fatal(err)
	}
	return s
}
