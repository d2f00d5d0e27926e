package autograd_test

import (
	"fmt"

	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/ops"
)

// Max pooling on the tape, PyTorch's F.max_pool2d(x, 2): a batch of one 1x4x4 image, and the
// gradient of the sum of the pooled values (one per window, at its first maximum).
func ExampleTape_MaxPool2d() {
	tp := autograd.NewTape(ops.CPU())
	defer tp.Reset()
	x, _ := ops.FromFloat32(ops.CPU(), []float32{
		1, 2, 2, 0,
		5, 5, 5, 5,
		0, -1, 3, 3,
		0, 1, 3, 4,
	})
	defer x.Release()
	xv := tp.Leaf(x, []int{1, 1, 4, 4}, true) // (N, C, H, W)
	y := tp.MaxPool2d(xv, 2, 2, 2)
	if err := tp.Backward(tp.Sum(y)); err != nil {
		fmt.Println(err)
		return
	}
	vals, _ := tp.Value(y).Float32s()
	grad, _ := tp.Grad(xv).Float32s()
	fmt.Println(tp.Shape(y), vals)
	fmt.Println(grad)
	// Output:
	// [1 1 2 2] [5 5 1 4]
	// [0 0 0 0 1 0 1 0 0 0 0 0 0 1 0 1]
}

// Average pooling with padding, as PyTorch's F.avg_pool2d(x, 3, stride=2, padding=1): the
// padding counts in the divisor (count_include_pad).
func ExampleTape_AvgPool() {
	tp := autograd.NewTape(ops.CPU())
	defer tp.Reset()
	x, _ := ops.Full(ops.CPU(), 16, 9)
	defer x.Release()
	xv := tp.Leaf(x, []int{1, 4, 4}, false) // one sample (C, H, W)
	y := tp.AvgPool(xv, autograd.PoolParams{Kernel: []int{3, 3}, Stride: []int{2, 2}, Padding: []int{1, 1},
		CountIncludePad: true})
	vals, _ := tp.Value(y).Float32s()
	fmt.Println(tp.Shape(y), vals)
	// Output:
	// [1 2 2] [4 6 6 9]
}
