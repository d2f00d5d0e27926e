package ops

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

func convUpload(t *testing.T, d *Device, v []float32) *Buffer {
	t.Helper()
	b, err := FromFloat32(d, v)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Release() })
	return b
}

// convGet returns a function that downloads and releases an op's result, failing t on error.
func convGet(t *testing.T) func(b *Buffer, err error) []float32 {
	return func(b *Buffer, err error) []float32 {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		defer b.Release()
		v, err := b.Float32s()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// TestConvSmallExact: a 1-D convolution and its transposed form with dyadic values, exactly,
// and the seeds' 2-D forms against the N-D ones bit for bit.
func TestConvSmallExact(t *testing.T) {
	d, get := CPU(), convGet(t)
	x := convUpload(t, d, []float32{1, 2, 3, 4})
	w := convUpload(t, d, []float32{1, 10, 100})
	b := convUpload(t, d, []float32{0.5})
	dims := ConvDims{Batch: 1, InChannels: 1, OutChannels: 1, Input: []int{4}, Kernel: []int{3}}
	y := get(ConvND(x, w, b, dims, ConvParams{Padding: []int{1}}))
	if want := []float32{210.5, 321.5, 432.5, 43.5}; fmt.Sprint(y) != fmt.Sprint(want) {
		t.Errorf("conv: %v, want %v", y, want)
	}
	// transposed, stride 2: y[2i - 1 + k] += x[i]*w[k]
	yt := get(ConvTransposeND(x, w, nil, dims, ConvParams{Stride: []int{2}, Padding: []int{1}, OutputPadding: []int{1}}))
	if want := []float32{10, 102, 20, 203, 30, 304, 40, 400}; fmt.Sprint(yt) != fmt.Sprint(want) {
		t.Errorf("conv_transpose: %v, want %v", yt, want)
	}
	// the seeds' 2-D form is the N-D form with a batch of one
	xs := make([]float32, 2*5*6)
	for i := range xs {
		xs[i] = float32(math.Sin(float64(i)))
	}
	ws := make([]float32, 3*2*3*3)
	for i := range ws {
		ws[i] = float32(math.Cos(float64(i)))
	}
	bx, bw, bb := convUpload(t, d, xs), convUpload(t, d, ws), convUpload(t, d, []float32{1, 2, 3})
	a := get(Conv2dFwd(bx, bw, bb, 2, 5, 6, 3, 3, 3, 2, 1))
	c := get(ConvND(bx, bw, bb, ConvDims{Batch: 1, InChannels: 2, OutChannels: 3, Input: []int{5, 6}, Kernel: []int{3, 3}},
		ConvParams{Stride: []int{2}, Padding: []int{1}}))
	if fmt.Sprint(a) != fmt.Sprint(c) || len(a) != 3*3*3 {
		t.Errorf("Conv2dFwd %v != ConvND %v", a, c)
	}
	dy := convUpload(t, d, a)
	dK, dB, dX, err := Conv2dBwd(bx, bw, dy, 2, 5, 6, 3, 3, 3, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	if dK.Len() != len(ws) || dB.Len() != 3 || dX.Len() != len(xs) {
		t.Errorf("Conv2dBwd lengths %d %d %d", dK.Len(), dB.Len(), dX.Len())
	}
	dK.Release()
	dB.Release()
	dX.Release()
}

// TestConvGeometryErrors: every bad geometry is an error naming the numbers.
func TestConvGeometryErrors(t *testing.T) {
	d, get := CPU(), convGet(t)
	x := convUpload(t, d, make([]float32, 2*5))
	w := convUpload(t, d, make([]float32, 3*2*3))
	base := ConvDims{Batch: 1, InChannels: 2, OutChannels: 3, Input: []int{5}, Kernel: []int{3}}
	for _, c := range []struct {
		d    ConvDims
		p    ConvParams
		want string
	}{
		{base, ConvParams{Stride: []int{0}}, "stride 0 on axis 0"},
		{base, ConvParams{Dilation: []int{0}}, "dilation 0 on axis 0"},
		{base, ConvParams{Padding: []int{-1}}, "padding -1 on axis 0"},
		{base, ConvParams{Groups: 2}, "2 groups do not divide 2 input and 3 output channels"},
		{base, ConvParams{Stride: []int{1, 1}}, "2 stride entries for 1 spatial axes"},
		{base, ConvParams{OutputPadding: []int{1}}, "transposed only"},
		{ConvDims{Batch: 1, InChannels: 2, OutChannels: 3, Input: nil, Kernel: nil}, ConvParams{}, "spatial rank 0"},
		{ConvDims{Batch: 1, InChannels: 2, OutChannels: 3, Input: make([]int, 9), Kernel: make([]int, 9)}, ConvParams{}, "spatial rank 9"},
		{ConvDims{Batch: 1, InChannels: 2, OutChannels: 3, Input: []int{5}, Kernel: []int{0}}, ConvParams{}, "kernel size 0"},
		{ConvDims{Batch: 2, InChannels: 2, OutChannels: 3, Input: []int{5}, Kernel: []int{3}}, ConvParams{}, "input has 10 elements, want 20"},
	} {
		_, err := ConvND(x, w, nil, c.d, c.p)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v %+v: error %v, want %q", c.d, c.p, err, c.want)
		}
	}
	// a kernel larger than the padded input: an empty output, zero gradients
	big := ConvDims{Batch: 1, InChannels: 2, OutChannels: 3, Input: []int{5}, Kernel: []int{3}}
	wb := convUpload(t, d, make([]float32, 3*2*3))
	big.Input = []int{1}
	x1 := convUpload(t, d, []float32{1, 2})
	y := get(ConvND(x1, wb, nil, big, ConvParams{}))
	if len(y) != 0 {
		t.Errorf("empty output: %v", y)
	}
	dx := get(ConvNDBackwardInput(convUpload(t, d, nil), wb, big, ConvParams{}))
	if fmt.Sprint(dx) != "[0 0]" {
		t.Errorf("input gradient of an empty output: %v", dx)
	}
}

// ExampleConvND: a 2-D convolution of a 3x3 image with a 2x2 kernel of ones and a bias: each
// output is the sum of a 2x2 window plus 0.5.
func ExampleConvND() {
	d := CPU()
	x, _ := FromFloat32(d, []float32{1, 2, 3, 4, 5, 6, 7, 8, 9})
	w, _ := FromFloat32(d, []float32{1, 1, 1, 1})
	b, _ := FromFloat32(d, []float32{0.5})
	defer x.Release()
	defer w.Release()
	defer b.Release()
	dims := ConvDims{Batch: 1, InChannels: 1, OutChannels: 1, Input: []int{3, 3}, Kernel: []int{2, 2}}
	y, err := ConvND(x, w, b, dims, ConvParams{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer y.Release()
	v, _ := y.Float32s()
	fmt.Println(v)
	// Output: [12.5 16.5 24.5 28.5]
}

// ExampleConvTransposeND: a transposed 1-D convolution of stride 2 spreads each input over two
// outputs (kernel [1 2]).
func ExampleConvTransposeND() {
	d := CPU()
	x, _ := FromFloat32(d, []float32{1, 10, 100})
	w, _ := FromFloat32(d, []float32{1, 2})
	defer x.Release()
	defer w.Release()
	dims := ConvDims{Batch: 1, InChannels: 1, OutChannels: 1, Input: []int{3}, Kernel: []int{2}}
	y, err := ConvTransposeND(x, w, nil, dims, ConvParams{Stride: []int{2}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer y.Release()
	v, _ := y.Float32s()
	fmt.Println(v)
	// Output: [1 2 10 20 100 200]
}
