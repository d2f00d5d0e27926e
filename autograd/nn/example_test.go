package nn_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/autograd/nn"
	"github.com/torchlean-go/torchlean/ops"
)

// A model, its parameters under PyTorch's keys, and one training step: the parameters take
// part through Forward, with no list to keep by hand.
func ExampleNewMLP() {
	s := autograd.NewSession(autograd.Options{Device: ops.CPU(), Seed: 1})
	defer s.Close()
	model := nn.NewMLP(s, []int{4, 8, 3}, nn.MLPOptions{Dropout: 0.1})
	for _, np := range nn.NamedParameters(model) {
		fmt.Println(np.Key, np.Param.Shape())
	}
	opt := autograd.NewSGD(nn.Parameters(model), autograd.SGDOptions{LR: 0.1})
	defer opt.Close()
	x := s.Input([]float32{1, 2, 3, 4, -1, 0, 1, 0}, 2, 4)
	loss := s.CrossEntropy(model.Forward(x), []int{0, 2})
	s.Backward(loss)
	opt.Step()
	fmt.Println("parameters:", nn.NumParameters(model), "error:", s.Err())
	// Output:
	// 0.weight [8 4]
	// 0.bias [8]
	// 3.weight [3 8]
	// 3.bias [3]
	// parameters: 67 error: <nil>
}

// A module of one's own: embed nn.Base, register the parts, write Forward.
func ExampleBase() {
	s := autograd.NewSession(autograd.Options{Device: ops.CPU(), Seed: 1})
	defer s.Close()
	block := newResidual(s, 4)
	model := nn.NewSequential(block, nn.NewLayerNorm(s, 4))
	for _, np := range nn.NamedState(model) {
		fmt.Println(np.Key)
	}
	y := model.Forward(s.Input([]float32{1, 2, 3, 4}, 1, 4))
	fmt.Println(s.Shape(y))
	// Output:
	// 0.fc.weight
	// 0.fc.bias
	// 1.weight
	// 1.bias
	// [1 4]
}

// residual computes x + relu(fc(x)).
type residual struct {
	nn.Base
	fc *nn.Linear
}

func newResidual(s *autograd.Session, d int) *residual {
	r := &residual{fc: nn.NewLinear(s, d, d, true)}
	r.RegisterModule("fc", r.fc)
	return r
}

func (r *residual) Forward(x autograd.Var) autograd.Var {
	t := x.Tape()
	return t.Add(x, t.Relu(r.fc.Forward(x)))
}

// Initializers carry torch.nn.init's names and formulas and draw from the session's generator.
func ExampleKaimingNormal() {
	s := autograd.NewSession(autograd.Options{Device: ops.CPU(), Seed: 1})
	defer s.Close()
	w := s.Param("w", []int{256, 128}, nil)
	if err := nn.KaimingNormal(0, nn.FanIn, "relu").Apply(s, w); err != nil {
		fmt.Println(err)
	}
	gain, _ := nn.Gain("relu", 0)
	fanIn, fanOut, _ := nn.Fans(w.Shape())
	fmt.Printf("gain %.4f, fan_in %d, fan_out %d\n", gain, fanIn, fanOut)
	// Output: gain 1.4142, fan_in 128, fan_out 256
}

// Save a checkpoint and resume from it: parameters, optimizer state, the schedule, the random
// state and the step come back.
func ExampleCheckpoint() {
	dir, _ := os.MkdirTemp("", "ck")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "run.safetensors")
	build := func(seed uint64) (*autograd.Session, *nn.Sequential, *autograd.Adam, nn.Scheduler) {
		s := autograd.NewSession(autograd.Options{Device: ops.CPU(), Seed: seed})
		model := nn.NewMLP(s, []int{2, 4, 1}, nn.MLPOptions{})
		opt := autograd.NewAdam(nn.Parameters(model), autograd.DefaultAdam())
		sched, _ := nn.NewExponentialLR(opt, 0.9)
		return s, model, opt, sched
	}
	s, model, opt, sched := build(1)
	for range 3 {
		s.Reset()
		loss := s.MSELoss(model.Forward(s.Input([]float32{1, 2}, 1, 2)), s.Input([]float32{3}, 1, 1))
		s.Backward(loss)
		opt.Step()
		opt.ZeroGrad()
		sched.Step()
	}
	ck := nn.Checkpoint{Model: model, Optimizer: opt, Scheduler: sched, Session: s, Step: 3}
	if err := ck.Save(path); err != nil {
		fmt.Println(err)
	}

	s2, model2, opt2, sched2 := build(2) // a fresh process would build the same objects
	resumed := nn.Checkpoint{Model: model2, Optimizer: opt2, Scheduler: sched2, Session: s2}
	if err := resumed.Load(path); err != nil {
		fmt.Println(err)
	}
	fmt.Printf("step %d, lr %.6f\n", resumed.Step, opt2.LR())
	// Output: step 3, lr 0.000729
}
