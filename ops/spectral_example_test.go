package ops_test

import (
	"fmt"

	"github.com/torchlean-go/torchlean/ops"
)

// The kept bins of the real DFT: rfft([1, 2, 3, 4]) = [(10, 0), (-2, 2), (-2, 0)], the known
// spectrum of the reference's section 3.9, as real parts then imaginary parts.
func ExampleRfftModes() {
	d := ops.CPU()
	x, _ := ops.FromFloat32(d, []float32{1, 2, 3, 4}) // (batch 1, grid 4, width 1)
	spec, err := ops.RfftModes(x, 1, 4, 1, 3)
	if err != nil {
		fmt.Println(err)
		return
	}
	v, _ := spec.Float32s()
	fmt.Println("re", v[:3])
	fmt.Println("im", v[3:])
	x.Release()
	spec.Release()
	// Output:
	// re [10 -2 -2]
	// im [0 2 0]
}

// A spectral convolution keeping one bin (the mean) with weight 1 is a low-pass filter to the
// mean; keeping all grid/2+1 bins with identity weights gives x back. Two samples of one channel.
func ExampleSpectralConv1dBatched() {
	d := ops.CPU()
	x, _ := ops.FromFloat32(d, []float32{1, 2, 3, 4, 0, 4, 0, 0}) // (batch 2, grid 4, width 1)
	for _, modes := range []int{1, 3} {
		wRe, _ := ops.Full(d, modes, 1) // (modes, width 1, width 1): 1 on every kept bin
		wIm, _ := ops.Zeros(d, modes)
		y, err := ops.SpectralConv1dBatched(x, wRe, wIm, 2, 4, 1, modes)
		if err != nil {
			fmt.Println(err)
			return
		}
		v, _ := y.Float32s()
		fmt.Println("modes", modes, v)
		for _, b := range []*ops.Buffer{y, wRe, wIm} {
			b.Release()
		}
	}
	x.Release()
	// Output:
	// modes 1 [2.5 2.5 2.5 2.5 1 1 1 1]
	// modes 3 [1 2 3 4 0 4 0 0]
}
