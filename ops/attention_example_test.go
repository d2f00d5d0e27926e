package ops_test

import (
	"fmt"

	"github.com/torchlean-go/torchlean/ops"
)

// One query against two keys (scale 1): the scores are q·k = [1, 0], the weights
// softmax([1, 0]) = [0.7311, 0.2689], and the output their mix of the value rows. With a hard
// mask that blocks the second key the output is the first value row; a fully blocked query row
// gives zeros.
func ExampleFlashAttention() {
	d := ops.CPU()                                    // or ops.Default(): a GPU computes the same bits
	q, _ := ops.FromFloat32(d, []float32{1, 0, 1, 0}) // two identical queries
	k, _ := ops.FromFloat32(d, []float32{1, 0, 0, 1})
	v, _ := ops.FromFloat32(d, []float32{1, 2, 3, 4})
	dims := ops.AttentionDims{Batch: 1, NQ: 2, NK: 2, D: 2}
	out, lse, _ := ops.FlashAttention(q, k, v, dims, 1, ops.AttentionOptions{})
	o, _ := out.Float32s()
	l, _ := lse.Float32s()
	fmt.Printf("out %.4f, log-sum-exp %.4f\n", o[:2], l[0])
	mask, _ := ops.FromFloat32(d, []float32{1, 0, 0, 0}) // query 0: key 0 only; query 1: nothing
	masked, mlse, _ := ops.FlashAttention(q, k, v, dims, 1, ops.AttentionOptions{Mask: mask, HardMask: true})
	m, _ := masked.Float32s()
	fmt.Printf("hard mask: %.4f\n", m)
	for _, b := range []*ops.Buffer{q, k, v, out, lse, mask, masked, mlse} {
		b.Release()
	}
	// Output:
	// out [1.5379 2.5379], log-sum-exp 1.3133
	// hard mask: [1.0000 2.0000 0.0000 0.0000]
}
