package autograd_test

import (
	"fmt"

	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/ops"
)

// Causal attention, as torch.nn.functional.scaled_dot_product_attention(q, k, v,
// is_causal=True): with all-zero queries and keys every allowed key weighs the same, so position
// i outputs the mean of v[0..i], and the gradient of the summed output reaches v[j] with weight
// Σ_{i >= j} 1/(i+1).
func ExampleTape_ScaledDotProductAttention() {
	d := ops.CPU()
	zeros, _ := ops.Zeros(d, 3)
	vals, _ := ops.FromFloat32(d, []float32{1, 2, 3})
	tp := autograd.NewTape(d)
	q := tp.Const(zeros, []int{1, 3, 1}) // (batch, n, d)
	k := tp.Const(zeros, []int{1, 3, 1})
	v := tp.Leaf(vals, []int{1, 3, 1}, true)
	y := tp.ScaledDotProductAttention(q, k, v, autograd.SDPAOptions{Causal: true})
	if err := tp.Backward(tp.Sum(y)); err != nil {
		fmt.Println(err)
		return
	}
	out, _ := tp.Value(y).Float32s()
	dv, _ := tp.Grad(v).Float32s()
	fmt.Printf("y %.4f\ndv %.4f\n", out, dv)
	tp.Reset()
	zeros.Release()
	vals.Release()
	// Output:
	// y [1.0000 1.5000 2.0000]
	// dv [1.8333 0.8333 0.3333]
}
