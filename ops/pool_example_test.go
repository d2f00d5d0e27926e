package ops_test

import (
	"fmt"

	"github.com/torchlean-go/torchlean/ops"
)

// Max pooling of one 4x4 channel with 2x2 windows, and its gradient: each window's gradient goes
// to its first maximum (the tie of 5s in the top-left window goes to the first).
func ExampleMaxPoolND() {
	d := ops.CPU()
	x, _ := ops.FromFloat32(d, []float32{
		1, 2, 2, 0,
		5, 5, 5, 5,
		0, -1, 3, 3,
		0, 1, 3, 4,
	})
	defer x.Release()
	shape := []int{1, 4, 4} // (C, H, W); (N, C, H, W) works alike
	p := ops.PoolParams{Kernel: []int{2, 2}}
	y, _ := ops.MaxPoolND(x, shape, p)
	out, _ := ops.PoolOutShape(shape, p)
	vals, _ := y.Float32s()
	fmt.Println(out, vals)
	ones, _ := ops.Full(d, 4, 1)
	dx, _ := ops.MaxPoolNDBackward(x, ones, shape, p)
	g, _ := dx.Float32s()
	fmt.Println(g)
	// Output:
	// [1 2 2] [5 5 1 4]
	// [0 0 0 0 1 0 1 0 0 0 0 0 0 1 0 1]
}

// Average pooling with padding: count_include_pad divides by the whole window, as PyTorch's
// default; without it, by the in-bounds cells. Smooth max pooling with a large β approaches the
// maximum, with a negative β the minimum.
func ExampleAvgPoolND() {
	d := ops.CPU()
	x, _ := ops.FromFloat32(d, []float32{3, 6, 9})
	defer x.Release()
	shape := []int{1, 3}
	p := ops.PoolParams{Kernel: []int{3}, Stride: []int{1}, Padding: []int{1}, CountIncludePad: true}
	y, _ := ops.AvgPoolND(x, shape, p)
	a, _ := y.Float32s()
	p.CountIncludePad = false
	y, _ = ops.AvgPoolND(x, shape, p)
	b, _ := y.Float32s()
	fmt.Println(a, b)
	p = ops.PoolParams{Kernel: []int{3}, Beta: 50}
	y, _ = ops.SmoothMaxPoolND(x, shape, p)
	c, _ := y.Float32s()
	p.Beta = -50
	y, _ = ops.SmoothMaxPoolND(x, shape, p)
	e, _ := y.Float32s()
	fmt.Printf("%.4f %.4f\n", c[0], e[0])
	// Output:
	// [3 6 5] [4.5 6 7.5]
	// 9.0000 3.0000
}
