package ops_test

import (
	"fmt"

	"github.com/torchlean-go/torchlean/ops"
)

// Buffers live on a device; every op returns a fresh buffer and borrows its inputs.
func Example() {
	d := ops.CPU() // or ops.Default(): the GPU when one is usable; results are bit-identical
	x, _ := ops.FromFloat32(d, []float32{-1, 0, 2})
	defer x.Release()
	y, _ := ops.Relu(x)
	defer y.Release()
	s, _ := ops.Sum(y)
	defer s.Release()
	v, _ := s.Float32s()
	fmt.Println(v[0])
	// Output: 2
}

// Counter-based random numbers: the same key gives the same values on every device.
func ExampleRandUniform() {
	u, _ := ops.RandUniform(ops.CPU(), 4, 0x0123456789abcdef)
	defer u.Release()
	v, _ := u.Float32s()
	fmt.Println(v)
	// Output: [0.6428172 0.7635008 0.23408191 0.56710523]
}

// Release frees a buffer at once and reports whether it did; telemetry shows the effect.
func ExampleBuffer_Release() {
	d := ops.CPU()
	before := d.Stats().LiveBytes
	b, _ := ops.Zeros(d, 1024)
	fmt.Println(d.Stats().LiveBytes-before, b.Release(), b.Release(), d.Stats().LiveBytes-before)
	// Output: 4096 true false 0
}

// A matrix product with the second operand read transposed, as a backward pass uses it: every
// output is one fma chain over k ascending, the same bits on the CPU and on a GPU.
func ExampleBmmWithTranspose() {
	d := ops.CPU()
	a, _ := ops.FromFloat32(d, []float32{1, 2, 3, 4, 5, 6})  // A: 2 x 3
	bt, _ := ops.FromFloat32(d, []float32{1, 0, 1, 0, 1, 1}) // B stored transposed: 2 x 3 (B is 3 x 2)
	defer a.Release()
	defer bt.Release()
	c, err := ops.BmmWithTranspose(a, bt, 1, 2, 3, 2, false, true) // C = A · B, 2 x 2
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Release()
	v, _ := c.Float32s()
	fmt.Println(v)
	// Output: [4 5 10 11]
}
