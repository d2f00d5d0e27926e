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

// TestConvPoolLayerErrors: the layers fail where PyTorch's raise (a constructor's negative
// channels, groups or kernel; an output with no positions, whatever the batch), with the
// numbers in the message, and keep PyTorch's results for an empty batch.
func TestConvPoolLayerErrors(t *testing.T) {
	checkSessionErrors(t, []sessionCase{
		{"groups not dividing in", func(s *autograd.Session) {
			nn.NewConv2d(s, 3, 4, 3, 3, autograd.ConvOptions{Groups: 2}, true)
		}, "in_channels 3 and out_channels 4 must both be divisible by groups 2"},
		{"zero kernel", func(s *autograd.Session) { nn.NewConv2d(s, 3, 4, 0, 3, autograd.ConvOptions{}, true) }, "kernel sizes [0 3] must be positive"},
		{"negative channels", func(s *autograd.Session) { nn.NewConv1d(s, -1, 4, 3, autograd.ConvOptions{}, false) }, "in_channels -1 and out_channels 4 must be positive"},
		{"zero channels", func(s *autograd.Session) { nn.NewConv1d(s, 0, 4, 3, autograd.ConvOptions{}, false) }, "zero channels are not supported"},
		{"conv kernel larger than the input", func(s *autograd.Session) {
			c := nn.NewConv2d(s, 1, 1, 5, 5, autograd.ConvOptions{}, true)
			c.Forward(s.Input(make([]float32, 9), 1, 1, 3, 3))
		}, "nn: Conv2d: input [1 1 3 3] gives the empty output [1 1 0 0]: the kernel [5 5] (dilation 1) does not fit the input padded by 0"},
		{"conv kernel larger than the input, empty batch", func(s *autograd.Session) {
			c := nn.NewConv2d(s, 1, 1, 5, 5, autograd.ConvOptions{}, true)
			c.Forward(s.Input(nil, 0, 1, 3, 3))
		}, "nn: Conv2d: input [0 1 3 3] gives the empty output [0 1 0 0]"},
		{"transposed conv with too much padding", func(s *autograd.Session) {
			c := nn.NewConvTranspose2d(s, 1, 1, 1, 1, autograd.ConvOptions{Stride: []int{2}, Padding: []int{2}, OutputPadding: []int{1}}, false)
			c.Forward(s.Input(make([]float32, 4), 1, 1, 2, 2))
		}, "nn: ConvTranspose2d: input [1 1 2 2] gives the empty output"},
		{"pool padding above half the window", func(s *autograd.Session) {
			nn.MaxPool2d(3, 1, 2).Forward(s.Input(make([]float32, 2*3*4*5), 2, 3, 4, 5))
		}, "nn: MaxPool2d: input [2 3 4 5] gives the empty output [2 3 0 0]: the padding 2 of spatial axis 0 is more than half the kernel 3"},
		{"pool on an empty spatial axis", func(s *autograd.Session) {
			nn.MaxPool2d(2, 2, 1).Forward(s.Input(nil, 1, 1, 0, 4))
		}, "nn: MaxPool2d: input [1 1 0 4] gives the empty output [1 1 0 3]: spatial axis 0 of the input is empty"},
		{"pool padding above half the window, empty batch", func(s *autograd.Session) {
			nn.MaxPool2d(2, 2, 2).Forward(s.Input(nil, 0, 1, 4, 4))
		}, "nn: MaxPool2d: input [0 1 4 4]"},
		{"pool window larger than the input", func(s *autograd.Session) {
			nn.AvgPool2d(5, 0, 0).Forward(s.Input(make([]float32, 9), 1, 1, 3, 3))
		}, "nn: AvgPool2d: input [1 1 3 3] gives the empty output [1 1 0 0]: the kernel 5 of spatial axis 0 is larger than its padded input 3"},
		{"empty batch", func(s *autograd.Session) {
			x := s.Input(nil, 0, 1, 6, 6)
			nn.MaxPool2d(2, 0, 0).Forward(nn.NewConv2d(s, 1, 2, 3, 3, autograd.ConvOptions{}, true).Forward(x))
		}, ""},
	})
}
