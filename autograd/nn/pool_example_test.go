package nn_test

import (
	"fmt"

	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/autograd/nn"
	"github.com/torchlean-go/torchlean/ops"
)

// Pooling layers in a Sequential, as nn.MaxPool2d(2) and nn.AvgPool2d(2) in PyTorch: a batch of
// two 1x4x4 images pooled to 1x2x2, then to 1x1x1, then flattened.
func ExampleMaxPool2d() {
	s := autograd.NewSession(autograd.Options{Device: ops.CPU(), Seed: 1})
	defer s.Close()
	model := nn.NewSequential(nn.MaxPool2d(2, 0, 0), nn.AvgPool2d(2, 0, 0), nn.Flatten())
	v := make([]float32, 32)
	for i := range v {
		v[i] = float32(i)
	}
	y := model.Forward(s.Input(v, 2, 1, 4, 4))
	vals, _ := s.Value(y).Float32s()
	fmt.Println(s.Shape(y), vals, s.Err())
	// Output:
	// [2 1] [10 26] <nil>
}
