package autograd_test

import (
	"fmt"
	"testing"

	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/ops"
)

// cumsumRef is the cumulative sum of x (shape) along axis, in float64.
func cumsumRef(x []float64, shape []int, axis int) []float64 {
	y := make([]float64, len(x))
	inner := 1
	for _, d := range shape[axis+1:] {
		inner *= d
	}
	n := shape[axis]
	for i := range x {
		j := i / inner % n
		if j == 0 {
			y[i] = x[i]
		} else {
			y[i] = y[i-inner] + x[i]
		}
	}
	return y
}

func TestGradientsCumsum(t *testing.T) {
	var cs []gradCase
	for _, s := range [][]int{{1}, {6}, {3, 4}, {2, 3, 4}, {4, 1, 5}} {
		for axis := -1; axis < len(s); axis++ {
			a := axis
			if a < 0 {
				a += len(s)
			}
			cs = append(cs, gradCase{name: fmt.Sprintf("cumsum_axis%d%v", axis, s), in: [][]int{s},
				op:  func(tp *autograd.Tape, x []autograd.Var) autograd.Var { return tp.Cumsum(x[0], axis) },
				ref: func(x [][]float64) []float64 { return cumsumRef(x[0], s, a) }})
		}
	}
	cs = append(cs, gradCase{name: "cumsum_scalar", in: [][]int{{}},
		op:  func(tp *autograd.Tape, x []autograd.Var) autograd.Var { return tp.Mul(tp.Cumsum(x[0], 0), x[0]) },
		ref: func(x [][]float64) []float64 { return []float64{x[0][0] * x[0][0]} }})
	forDevices(t, func(t *testing.T, d *ops.Device) {
		for _, c := range cs {
			t.Run(c.name, func(t *testing.T) { checkGrad(t, d, c) })
		}
	})
}

// TestCumsumOrder: each line is summed one float32 addition at a time in ascending order, and
// its gradient in descending order, along any axis (values whose float32 sums depend on the
// order: 1, then 2^-24 repeatedly).
func TestCumsumOrder(t *testing.T) {
	forDevices(t, func(t *testing.T, d *ops.Device) {
		const n = 5
		line := []float32{1, 0x1p-24, 0x1p-24, 0x1p-24, 0x1p-24}
		fwd, bwd := make([]float64, n), make([]float64, n)
		var acc float32
		for j, v := range line {
			if j == 0 {
				acc = v
			} else {
				acc += v
			}
			fwd[j] = float64(acc)
		}
		for j := n - 1; j >= 0; j-- {
			if j == n-1 {
				acc = line[j]
			} else {
				acc += line[j]
			}
			bwd[j] = float64(acc)
		}
		// x is (n, 2): both columns hold the line; the sums run along axis 0.
		xs, gs := make([]float64, 2*n), make([]float64, 2*n)
		for j, v := range line {
			xs[2*j], xs[2*j+1] = float64(v), float64(v)
			gs[2*j], gs[2*j+1] = float64(v), float64(v)
		}
		xb, gb := upload(t, d, xs...), upload(t, d, gs...)
		defer xb.Release()
		defer gb.Release()
		tp := autograd.NewTape(d)
		defer tp.Reset()
		x := tp.Leaf(xb, []int{n, 2}, true)
		y := tp.Cumsum(x, 0)
		if err := tp.BackwardWith(y, gb); err != nil {
			t.Fatal(err)
		}
		yv, gv := values(t, tp.Value(y)), values(t, tp.Grad(x))
		for j := range n {
			for c := range 2 {
				if yv[2*j+c] != fwd[j] || gv[2*j+c] != bwd[j] {
					t.Fatalf("element (%d, %d): sum %v, gradient %v; want %v, %v", j, c, yv[2*j+c], gv[2*j+c], fwd[j], bwd[j])
				}
			}
		}
		if fwd[n-1] != 1 || bwd[0] != 1+4*0x1p-24 {
			t.Fatalf("the reference lost its order: %v %v", fwd, bwd)
		}
	})
}

func TestCumsumErrors(t *testing.T) {
	d := ops.CPU()
	b := upload(t, d, 1, 2, 3, 4)
	defer b.Release()
	tp := autograd.NewTape(d)
	defer tp.Reset()
	if y := tp.Cumsum(tp.Const(b, []int{2, 2}), 2); y.Valid() {
		t.Error("axis 2 of a matrix: a valid result")
	}
	if err := tp.Err(); err == nil || err.Error() != "autograd: cumsum: axis 2 of shape [2 2]" {
		t.Errorf("error %v", err)
	}
}

// Cumsum along rows (axis -1) and down columns (axis 0); the gradient of a sum of the cumulative
// sums counts how many sums each element enters.
func ExampleTape_Cumsum() {
	d := ops.CPU()
	xb, _ := ops.FromFloat32(d, []float32{1, 2, 3, 4, 5, 6})
	defer xb.Release()
	tp := autograd.NewTape(d)
	defer tp.Reset()
	x := tp.Leaf(xb, []int{2, 3}, true)
	rows, cols := tp.Cumsum(x, -1), tp.Cumsum(x, 0)
	_ = tp.Backward(tp.Sum(rows))
	r, _ := tp.Value(rows).Float32s()
	c, _ := tp.Value(cols).Float32s()
	g, _ := tp.Grad(x).Float32s()
	fmt.Println(r, c, g)
	// Output: [1 3 6 4 9 15] [1 2 3 5 7 9] [3 2 1 3 2 1]
}
