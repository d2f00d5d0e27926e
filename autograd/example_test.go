package autograd_test

import (
	"fmt"

	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/ops"
)

// Fit y = 2x + 1 with a linear layer and plain SGD: record the forward pass, differentiate the
// loss with respect to the parameters, step with ops.Axpy, Reset the tape, repeat.
func Example() {
	d := ops.CPU() // or ops.Default(): the GPU computes the same bits
	x, _ := ops.FromFloat32(d, []float32{-1, -0.5, 0, 0.5, 1, 1.5})
	y, _ := ops.FromFloat32(d, []float32{-1, 0, 1, 2, 3, 4})
	w, _ := ops.Zeros(d, 1) // weight (1 output, 1 input)
	b, _ := ops.Zeros(d, 1) // bias
	tp := autograd.NewTape(d)
	for step := range 121 {
		wv, bv := tp.Leaf(w, []int{1, 1}, true), tp.Leaf(b, []int{1}, true)
		pred := tp.Linear(tp.Const(x, []int{6, 1}), wv, bv) // (6, 1) batch of x·wᵀ + b
		loss := tp.MSELoss(pred, tp.Const(y, []int{6, 1}))
		if err := tp.BackwardParams(loss, wv, bv); err != nil {
			fmt.Println(err)
			return
		}
		if step%30 == 0 {
			l, _ := tp.Value(loss).Float32s()
			fmt.Printf("step %3d: loss %.6f\n", step, l[0])
		}
		nw, _ := ops.Axpy(w, tp.Grad(wv), -0.05) // w - 0.05 dL/dw
		nb, _ := ops.Axpy(b, tp.Grad(bv), -0.05)
		tp.Reset() // releases the tape's values and gradients
		w.Release()
		b.Release()
		w, b = nw, nb
	}
	wf, _ := w.Float32s()
	bf, _ := b.Float32s()
	fmt.Printf("y = %.4fx + %.4f\n", wf[0], bf[0])
	for _, buf := range []*ops.Buffer{x, y, w, b} {
		buf.Release()
	}
	// Output:
	// step   0: loss 5.166667
	// step  30: loss 0.018582
	// step  60: loss 0.000335
	// step  90: loss 0.000007
	// step 120: loss 0.000000
	// y = 1.9996x + 1.0002
}

// A custom op (PyTorch's torch.autograd.Function): the square x², written from ops kernels, with
// x itself as the only thing its backward pass needs.
func ExampleTape_Apply() {
	square := autograd.Function{
		Name: "square",
		Forward: func(in []*ops.Buffer, shapes [][]int) (*ops.Buffer, []int, []*ops.Buffer, error) {
			y, err := ops.Mul(in[0], in[0])
			return y, shapes[0], nil, err // Backward reads the input itself: nothing to save
		},
		Backward: func(g *ops.Buffer, in, _ []*ops.Buffer, need []bool) ([]*ops.Buffer, error) {
			gx, err := ops.Mul(g, in[0]) // g·x, then doubled
			if err != nil {
				return nil, err
			}
			defer gx.Release()
			d, err := ops.Scale(gx, 2)
			return []*ops.Buffer{d}, err
		},
	}
	d := ops.CPU()
	x, _ := ops.FromFloat32(d, []float32{-1.5, 0, 2})
	defer x.Release()
	tp := autograd.NewTape(d)
	defer tp.Reset()
	xv := tp.Leaf(x, []int{3}, true)
	y := tp.Apply(square, xv)
	if err := tp.Backward(tp.Sum(y)); err != nil {
		fmt.Println(err)
		return
	}
	yv, _ := tp.Value(y).Float32s()
	gv, _ := tp.Grad(xv).Float32s()
	fmt.Println(yv, gv)
	// Output: [2.25 0 4] [-3 0 4]
}

// MatMul follows torch.matmul and the binary ops broadcast by NumPy's rule: a batch of
// sequences (2, 3, 4) times a weight (4, 2) is one product with the rows folded, and a bias of
// shape (2) adds to every row. The bias's gradient sums over the rows it was repeated along.
func ExampleTape_MatMul() {
	d := ops.CPU()
	xb, _ := ops.Full(d, 2*3*4, 0.5)
	wb, _ := ops.FromFloat32(d, []float32{1, 0, 0, 1, 1, 0, 0, 1})
	bb, _ := ops.FromFloat32(d, []float32{10, 20})
	tp := autograd.NewTape(d)
	x := tp.Const(xb, []int{2, 3, 4})
	w, b := tp.Leaf(wb, []int{4, 2}, true), tp.Leaf(bb, []int{2}, true)
	y := tp.Add(tp.MatMul(x, w), b)
	v, _ := tp.Value(y).Float32s()
	fmt.Println(tp.Shape(y), v[:2])
	if err := tp.Backward(tp.Sum(y)); err != nil {
		fmt.Println(err)
	}
	g, _ := tp.Grad(b).Float32s()
	fmt.Println("bias gradient", g)
	tp.Reset()
	for _, buf := range []*ops.Buffer{xb, wb, bb} {
		buf.Release()
	}
	// Output:
	// [2 3 2] [11 21]
	// bias gradient [6 6]
}
