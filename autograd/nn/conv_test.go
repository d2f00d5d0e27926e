package nn_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/autograd/nn"
	"github.com/torchlean-go/torchlean/ops"
)

// A small CNN block: Conv2d (3x3, padding 1), ReLU, a strided Conv2d and a transposed
// convolution back to the input's size, trained one step.
func ExampleNewConv2d() {
	s := autograd.NewSession(autograd.Options{Device: ops.CPU(), Seed: 1})
	defer s.Close()
	c1 := nn.NewConv2d(s, 1, 4, 3, 3, autograd.ConvOptions{Padding: []int{1}}, true)
	c2 := nn.NewConv2d(s, 4, 8, 3, 3, autograd.ConvOptions{Stride: []int{2}, Padding: []int{1}}, true)
	up := nn.NewConvTranspose2d(s, 8, 1, 3, 3, autograd.ConvOptions{Stride: []int{2}, Padding: []int{1}, OutputPadding: []int{1}}, false)
	for _, np := range nn.NamedParameters(c2) {
		fmt.Println(np.Key, np.Param.Shape())
	}
	x := s.Input(make([]float32, 2*1*8*8), 2, 1, 8, 8)
	h := c2.Forward(s.Relu(c1.Forward(x)))
	y := up.Forward(h)
	fmt.Println(s.Shape(h), s.Shape(y))
	s.Backward(s.Mean(y))
	fmt.Println("error:", s.Err())
	// Output:
	// weight [8 4 3 3]
	// bias [8]
	// [2 8 4 4] [2 1 8 8]
	// error: <nil>
}

// TestConvInit: PyTorch's default initialization bounds (1/sqrt(fan_in) for the weight and
// the bias; fan_in from weight.shape[1] for transposed layers too), and the layouts.
func TestConvInit(t *testing.T) {
	s := autograd.NewSession(autograd.Options{Device: ops.CPU(), Seed: 7})
	defer s.Close()
	for _, c := range []struct {
		m     *nn.Conv
		shape string
		fanIn int
	}{
		{nn.NewConv1d(s, 4, 6, 5, autograd.ConvOptions{Groups: 2}, true), "[6 2 5]", 10},
		{nn.NewConv2d(s, 3, 16, 3, 3, autograd.ConvOptions{}, true), "[16 3 3 3]", 27},
		{nn.NewConv3d(s, 2, 4, 3, 3, 3, autograd.ConvOptions{}, true), "[4 2 3 3 3]", 54},
		{nn.NewConvTranspose2d(s, 8, 6, 4, 4, autograd.ConvOptions{Groups: 2}, true), "[8 3 4 4]", 48},
	} {
		if got := fmt.Sprint(c.m.Weight.Shape()); got != c.shape {
			t.Errorf("weight shape %s, want %s", got, c.shape)
		}
		bound := 1 / math.Sqrt(float64(c.fanIn))
		for _, p := range []*autograd.Param{c.m.Weight, c.m.Bias} {
			v, err := p.Host()
			if err != nil {
				t.Fatal(err)
			}
			var maxAbs float64
			for _, x := range v {
				maxAbs = math.Max(maxAbs, math.Abs(float64(x)))
			}
			if maxAbs > bound || maxAbs < bound/2 {
				t.Errorf("%s: max |value| %v for the bound %v", c.shape, maxAbs, bound)
			}
		}
	}
}
