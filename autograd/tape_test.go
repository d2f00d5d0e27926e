package autograd_test

import (
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/ops"
)

// TestAccumulation: x + x gives 2, and gradients of values used several times (a DAG) add up,
// exactly on values whose arithmetic is exact.
func TestAccumulation(t *testing.T) {
	forDevices(t, func(t *testing.T, d *ops.Device) {
		xb := upload(t, d, 0.5, -1.5, 3, 0.25)
		defer xb.Release()
		tp := autograd.NewTape(d)
		defer tp.Reset()
		x := tp.Leaf(xb, []int{4}, true)
		if err := tp.Backward(tp.Sum(tp.Add(x, x))); err != nil {
			t.Fatal(err)
		}
		if got := values(t, tp.Grad(x)); !slices.Equal(got, []float64{2, 2, 2, 2}) {
			t.Errorf("d/dx sum(x + x) = %v, want 2s", got)
		}

		// y = sum(x*x + 3x - x): the gradient 2x + 3 - 1 arrives from four uses of x.
		tp.Reset()
		x = tp.Leaf(xb, []int{4}, true)
		y := tp.Sum(tp.Sub(tp.Add(tp.Mul(x, x), tp.Scale(x, 3)), x))
		if err := tp.Backward(y); err != nil {
			t.Fatal(err)
		}
		want := []float64{3, -1, 8, 2.5}
		if got := values(t, tp.Grad(x)); !slices.Equal(got, want) {
			t.Errorf("d/dx sum(x*x + 3x - x) = %v, want %v", got, want)
		}
		if got := values(t, tp.Grad(y)); !slices.Equal(got, []float64{1}) {
			t.Errorf("the loss's own gradient is %v, want the seed 1", got)
		}
		if g := tp.Grad(tp.Sum(x)); g != nil {
			t.Errorf("a node recorded after the backward pass has a gradient")
		}
	})
}

// TestDetach: no gradient flows through a detached value, which shares its parent's buffer.
func TestDetach(t *testing.T) {
	forDevices(t, func(t *testing.T, d *ops.Device) {
		xb := upload(t, d, 1, -2, 4)
		defer xb.Release()
		tp := autograd.NewTape(d)
		defer tp.Reset()
		x := tp.Leaf(xb, []int{3}, true)
		c := tp.Detach(x)
		if tp.Value(c) != xb || tp.RequiresGrad(c) {
			t.Errorf("detach: want a view of x that requires no grad")
		}
		if err := tp.Backward(tp.Sum(tp.Mul(c, x))); err != nil {
			t.Fatal(err)
		}
		if got := values(t, tp.Grad(x)); !slices.Equal(got, []float64{1, -2, 4}) {
			t.Errorf("d/dx sum(detach(x) * x) = %v, want x", got)
		}
		if tp.Grad(c) != nil {
			t.Errorf("a detached value has a gradient")
		}
	})
}

// TestDenseAndParams: the dense pass gives every node that requires grad a gradient (zeros when
// disconnected); the parameter-only pass keeps only the gradients asked for, with the same bits,
// and releases everything else as soon as it is consumed.
func TestDenseAndParams(t *testing.T) {
	forDevices(t, func(t *testing.T, d *ops.Device) {
		xb := upload(t, d, 0.5, -1, 2, 0.25, 1.5, -0.75)
		w1b := upload(t, d, 0.1, -0.2, 0.3, 0.4, -0.5, 0.6)
		w2b := upload(t, d, 1, 2, -1, 0.5)
		tb := upload(t, d, 0.2, -0.4, 0.6, 0.1)
		unused := upload(t, d, 7, 8)
		for _, b := range []*ops.Buffer{xb, w1b, w2b, tb, unused} {
			defer b.Release()
		}
		tp := autograd.NewTape(d)
		defer tp.Reset()
		build := func() (w1, w2, u, h, loss autograd.Var) {
			x := tp.Const(xb, []int{3, 2})
			w1 = tp.Leaf(w1b, []int{2, 3}, true)
			w2 = tp.Leaf(w2b, []int{2, 2}, true)
			u = tp.Leaf(unused, []int{2}, true)
			h = tp.Tanh(tp.MatMul(x, w1))                                 // (3, 3)
			s := tp.MatMul(tp.Transpose2d(tp.Slice(h, 1, 2)), tp.Inv(w2)) // (3, 2) x (2, 2)
			return w1, w2, u, h, tp.MSELoss(tp.Flatten(tp.Slice(s, 0, 2)), tp.Const(tb, []int{4}))
		}
		w1, w2, u, h, loss := build()
		if err := tp.Err(); err != nil {
			t.Fatal(err)
		}
		if err := tp.Backward(loss); err != nil {
			t.Fatal(err)
		}
		dense1, dense2 := values(t, tp.Grad(w1)), values(t, tp.Grad(w2))
		if got := values(t, tp.Grad(u)); !slices.Equal(got, []float64{0, 0}) {
			t.Errorf("disconnected leaf: gradient %v, want zeros", got)
		}
		if tp.Grad(h) == nil || tp.Grad(loss) == nil {
			t.Errorf("dense pass: intermediate nodes lack gradients")
		}
		if err := tp.Backward(loss); err == nil || !strings.Contains(err.Error(), "already differentiated") {
			t.Errorf("second backward pass: %v", err)
		}
		if tp.Grad(w1) == nil {
			t.Errorf("a refused second pass released the gradients of the first")
		}

		tp.Reset()
		w1, w2, u, h, loss = build()
		before := d.Stats().LiveBytes
		if err := tp.BackwardParams(loss, w1); err != nil {
			t.Fatal(err)
		}
		// Kept: w1's gradient (6 floats). Released: every other gradient and the workspace of
		// mse_loss (the difference, 4 floats).
		if got := d.Stats().LiveBytes - before; got != 4*(6-4) {
			t.Errorf("live bytes changed by %d over the parameter-only pass, want %d", got, 4*(6-4))
		}
		if got := values(t, tp.Grad(w1)); !slices.Equal(got, dense1) {
			t.Errorf("parameter-only gradient %v, dense %v", got, dense1)
		}
		for _, v := range []autograd.Var{w2, u, h, loss} {
			if tp.Grad(v) != nil {
				t.Errorf("parameter-only pass kept a gradient not asked for")
			}
		}

		tp.Reset()
		w1, w2, _, _, loss = build()
		if err := tp.BackwardParams(loss, w2, w1); err != nil {
			t.Fatal(err)
		}
		if g1, g2 := values(t, tp.Grad(w1)), values(t, tp.Grad(w2)); !slices.Equal(g1, dense1) || !slices.Equal(g2, dense2) {
			t.Errorf("parameter-only gradients differ from the dense ones")
		}

		// A loss that does not depend on the parameter: a zero gradient, nothing else kept.
		tp.Reset()
		u = tp.Leaf(unused, []int{2}, true)
		loss = tp.Sum(tp.Exp(tp.Leaf(w1b, []int{6}, true)))
		before = d.Stats().LiveBytes
		if err := tp.BackwardParams(loss, u); err != nil {
			t.Fatal(err)
		}
		if got := values(t, tp.Grad(u)); !slices.Equal(got, []float64{0, 0}) || tp.Grad(loss) != nil {
			t.Errorf("independent parameter: gradient %v, loss gradient kept: %v", got, tp.Grad(loss) != nil)
		}
		if got := d.Stats().LiveBytes - before; got != 4*2 {
			t.Errorf("live bytes changed by %d, want 8 (the zero gradient)", got)
		}

		tp.Reset()
		x := tp.Const(xb, []int{6})
		if err := tp.BackwardParams(tp.Sum(tp.Leaf(w1b, []int{6}, true)), x); err == nil || !strings.Contains(err.Error(), "does not require grad") {
			t.Errorf("parameter without grad: %v", err)
		}
	})
}

// TestBackwardWith seeds a non-scalar output with an explicit cotangent (borrowed).
func TestBackwardWith(t *testing.T) {
	forDevices(t, func(t *testing.T, d *ops.Device) {
		xb := upload(t, d, 1, 2, 3, 4, 5, 6)
		seed := upload(t, d, 1, 0, -1, 2, 0.5, 0)
		bad := upload(t, d, 1, 2)
		defer xb.Release()
		defer seed.Release()
		defer bad.Release()
		tp := autograd.NewTape(d)
		defer tp.Reset()
		x := tp.Leaf(xb, []int{2, 3}, true)
		y := tp.Transpose2d(tp.Scale(x, 2)) // (3, 2)
		if err := tp.Backward(y); err == nil || !strings.Contains(err.Error(), "shape [3 2]") {
			t.Errorf("backward of a non-scalar: %v", err)
		}
		tp.Reset()
		x = tp.Leaf(xb, []int{2, 3}, true)
		y = tp.Transpose2d(tp.Scale(x, 2))
		if err := tp.BackwardWith(y, bad); err == nil || !strings.Contains(err.Error(), "seed") {
			t.Errorf("seed of the wrong length: %v", err)
		}
		tp.Reset()
		x = tp.Leaf(xb, []int{2, 3}, true)
		y = tp.Transpose2d(tp.Scale(x, 2))
		if err := tp.BackwardWith(y, seed); err != nil {
			t.Fatal(err)
		}
		// seed as (3, 2) = [[1 0] [-1 2] [0.5 0]]; dx = 2 * seedᵀ.
		if got := values(t, tp.Grad(x)); !slices.Equal(got, []float64{2, -2, 1, 0, 4, 0}) {
			t.Errorf("gradient %v", got)
		}
		if seed.Len() != 6 {
			t.Errorf("the tape released the caller's seed")
		}
	})
}

// TestBackwardFrom seeds several outputs at once: the gradients are the sums of their
// contributions, an output listed twice gets the sum of its seeds, and the counts must match.
func TestBackwardFrom(t *testing.T) {
	forDevices(t, func(t *testing.T, d *ops.Device) {
		xb := upload(t, d, 1, 2, 3)
		s1 := upload(t, d, 1, 1, 1)
		s2 := upload(t, d, 10)
		defer xb.Release()
		defer s1.Release()
		defer s2.Release()
		tp := autograd.NewTape(d)
		defer tp.Reset()
		x := tp.Leaf(xb, []int{3}, true)
		y1 := tp.Scale(x, 3)       // dy1/dx = 3
		y2 := tp.Sum(tp.Mul(x, x)) // dy2/dx = 2x
		if err := tp.BackwardFrom([]autograd.Var{y1, y2, y1}, []*ops.Buffer{s1, s2, s1}); err != nil {
			t.Fatal(err)
		}
		// 3*1 + 3*1 + 10*2x
		if got := values(t, tp.Grad(x)); !slices.Equal(got, []float64{26, 46, 66}) {
			t.Errorf("gradient %v, want [26 46 66]", got)
		}
		tp.Reset()
		x = tp.Leaf(xb, []int{3}, true)
		if err := tp.BackwardFrom([]autograd.Var{tp.Scale(x, 3)}, nil); err == nil || !strings.Contains(err.Error(), "1 outputs and 0 seeds") {
			t.Errorf("seed count: %v", err)
		}
	})
}

// TestStickyErrors: the first error is kept and names the op and the shapes; later ops are
// no-ops returning the invalid Var; Backward reports the error; Reset clears it.
func TestStickyErrors(t *testing.T) {
	forDevices(t, func(t *testing.T, d *ops.Device) {
		ab := upload(t, d, 1, 2, 3, 4, 5, 6)
		defer ab.Release()
		tp := autograd.NewTape(d)
		defer tp.Reset()
		a := tp.Leaf(ab, []int{2, 3}, true)
		b := tp.Leaf(ab, []int{3, 2}, true)
		n := tp.Len()
		y := tp.Add(a, b)
		const want = "autograd: add: shapes [2 3] and [3 2] do not broadcast"
		if err := tp.Err(); err == nil || err.Error() != want {
			t.Fatalf("error %v, want %q", err, want)
		}
		if y.Valid() || y != (autograd.Var{}) {
			t.Errorf("failed op returned a valid handle")
		}
		z := tp.MatMul(a, a) // a second error: not recorded
		if z.Valid() || tp.Len() != n || tp.Err().Error() != want {
			t.Errorf("ops after an error must be no-ops keeping the first error: %v", tp.Err())
		}
		if err := tp.Backward(tp.Sum(a)); err == nil || err.Error() != want {
			t.Errorf("Backward returned %v, want the sticky error", err)
		}
		tp.Reset()
		if tp.Err() != nil || tp.Len() != 0 || a.Valid() {
			t.Errorf("Reset must clear the error and the nodes and invalidate handles")
		}
		if tp.Exp(a); tp.Err() == nil || !strings.Contains(tp.Err().Error(), "stale") {
			t.Errorf("stale handle: %v", tp.Err())
		}

		for _, c := range []struct {
			name string
			op   func(tp *autograd.Tape, x autograd.Var) autograd.Var
			want string
		}{
			{"matmul", func(tp *autograd.Tape, x autograd.Var) autograd.Var { return tp.MatMul(x, x) }, "matmul: shapes [2 3] and [2 3] do not multiply"},
			{"reshape", func(tp *autograd.Tape, x autograd.Var) autograd.Var { return tp.Reshape(x, 4, 2) }, "reshape: cannot view shape [2 3] as [4 2]"},
			{"slice", func(tp *autograd.Tape, x autograd.Var) autograd.Var { return tp.Slice(x, 1, 2) }, "slice: [1, 1+2) is outside dim 0 of shape [2 3]"},
			{"axis", func(tp *autograd.Tape, x autograd.Var) autograd.Var { return tp.ReduceSum(x, 2) }, "reduce_sum: axis 2 of shape [2 3]"},
			{"label", func(tp *autograd.Tape, x autograd.Var) autograd.Var { return tp.CrossEntropy(x, []int{1, 3}) }, "cross_entropy: label 3 at position 1 is outside [0, 3)"},
			{"labels", func(tp *autograd.Tape, x autograd.Var) autograd.Var { return tp.CrossEntropy(x, []int{1}) }, "cross_entropy: 1 labels for logits of shape [2 3]"},
			{"label -100", func(tp *autograd.Tape, x autograd.Var) autograd.Var { return tp.CrossEntropy(x, []int{1, -100}) }, "cross_entropy: label -100 at position 1 is outside [0, 3) (to leave such rows out, use CrossEntropyWith with Ignore: true, IgnoreIndex: -100)"},
			{"gather", func(tp *autograd.Tape, x autograd.Var) autograd.Var { return tp.Gather(x, []int{0, -1}) }, "autograd: gather: indices: negative index -1 at position 1"},
			{"dropout", func(tp *autograd.Tape, x autograd.Var) autograd.Var { return tp.Dropout(x, 1.5, 7) }, "dropout: probability 1.5 is outside [0, 1]"},
			{"permute", func(tp *autograd.Tape, x autograd.Var) autograd.Var { return tp.Permute(x, 0, 0) }, "permute: [0 0] is not a permutation"},
			{"broadcast", func(tp *autograd.Tape, x autograd.Var) autograd.Var { return tp.BroadcastTo(x, 4, 3) }, "autograd: broadcast_to: input axis 0 of size 2 cannot broadcast to 4"},
			{"linear", func(tp *autograd.Tape, x autograd.Var) autograd.Var { return tp.Linear(x, x, x) }, "linear: input [2 3], weight [2 3] and bias [2 3] do not fit"},
			{"batchnorm", func(tp *autograd.Tape, x autograd.Var) autograd.Var {
				return tp.BatchNormChannelFirst(x, tp.Slice(x, 0, 1), x)
			},
				"batchnorm_channel_first: input [2 3], gamma [1 3] and beta [2 3] do not fit"},
			{"invalid", func(tp *autograd.Tape, x autograd.Var) autograd.Var { return tp.Relu(autograd.Var{}) }, "relu: operand 0: invalid Var"},
		} {
			tp.Reset()
			tp.Relu(tp.Leaf(ab, []int{2, 3}, true))
			c.op(tp, tp.Leaf(ab, []int{2, 3}, true))
			if err := tp.Err(); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
			}
			if err := tp.Err(); c.name == "invalid" && !errors.Is(err, autograd.ErrInvalidVar) {
				t.Errorf("invalid: %v is not ErrInvalidVar", err)
			}
		}
	})
}

// TestBuffers: user buffers are borrowed (never released by the tape), views share buffers, a
// released user buffer is an error, and Reset returns the live bytes to the baseline.
func TestBuffers(t *testing.T) {
	forDevices(t, func(t *testing.T, d *ops.Device) {
		xb := upload(t, d, 1, 2, 3, 4)
		defer xb.Release()
		tp := autograd.NewTape(d)
		base := d.Stats().LiveBytes
		x := tp.Leaf(xb, []int{2, 2}, true)
		r := tp.Reshape(x, 4)
		if tp.Value(r) != xb || !slices.Equal(tp.Shape(r), []int{4}) {
			t.Errorf("reshape must be a view of the same buffer")
		}
		loss := tp.CrossEntropy(tp.Softmax(tp.Gelu(tp.LayerNorm(x, tp.Reshape(tp.Slice(r, 0, 2), 2), tp.Slice(r, 2, 2)))), []int{1, 0})
		loss = tp.Add(loss, tp.MSELoss(tp.Dropout(r, 0.5, 1), tp.Gather(r, []int{3, 2, 1, 0})))
		if err := tp.Backward(loss); err != nil {
			t.Fatal(err)
		}
		if d.Stats().LiveBytes == base {
			t.Errorf("no live bytes for the tape's values and gradients?")
		}
		tp.Reset()
		if got := d.Stats().LiveBytes; got != base {
			t.Errorf("live bytes %d after Reset, %d before recording", got, base)
		}
		if xb.Len() != 4 {
			t.Errorf("Reset released the caller's buffer")
		}

		// A released buffer: as a leaf, and when an op reads it.
		yb := upload(t, d, 1, 2)
		yb.Release()
		tp.Leaf(yb, []int{2}, true)
		if err := tp.Err(); !errors.Is(err, ops.ErrReleased) || !strings.HasPrefix(err.Error(), "autograd: leaf: ") {
			t.Errorf("leaf of a released buffer: %v", err)
		}
		tp.Reset()
		zb := upload(t, d, 1, 2)
		z := tp.Leaf(zb, []int{2}, true)
		zb.Release()
		tp.Exp(z)
		if err := tp.Err(); !errors.Is(err, ops.ErrReleased) || !strings.HasPrefix(err.Error(), "autograd: exp: ") {
			t.Errorf("op on a released buffer: %v", err)
		}
		tp.Reset()
		tp.Leaf(xb, []int{3}, true)
		if err := tp.Err(); err == nil || err.Error() != "autograd: leaf: buffer of 4 elements for shape [3]" {
			t.Errorf("leaf of the wrong length: %v", err)
		}
		tp.Reset()
	})
}

// TestPermuteIdentity: the identity permutation and a SwapAdjacent depth past the last pair of
// axes (the seeds' rule) return x itself, recording nothing; a negative depth (PyTorch's
// transpose(-2, -1) habit) is an error, never a silent identity.
func TestPermuteIdentity(t *testing.T) {
	forDevices(t, func(t *testing.T, d *ops.Device) {
		xb := upload(t, d, 1, 2, 3, 4, 5, 6)
		defer xb.Release()
		tp := autograd.NewTape(d)
		defer tp.Reset()
		x := tp.Leaf(xb, []int{1, 2, 3}, true)
		if tp.Permute(x, 0, 1, 2) != x || tp.SwapAdjacent(x, 2) != x || tp.SwapAdjacent(x, 5) != x || tp.SwapAdjacent(x, math.MaxInt) != x || tp.Len() != 1 {
			t.Errorf("identity permutations must return x")
		}
		// One copy (the 2 x 3 block transposed) and a view placing the size-1 axis.
		if y := tp.Permute(x, 2, 1, 0); !slices.Equal(tp.Shape(y), []int{3, 2, 1}) || tp.Len() != 3 {
			t.Errorf("permute (2, 1, 0): shape %v with %d nodes", tp.Shape(y), tp.Len())
		}
		if y := tp.SwapAdjacent(x, -1); y.Valid() || tp.Err() == nil ||
			tp.Err().Error() != "autograd: swap_adjacent: negative depth -1 (depth 1 swaps the last two axes of shape [1 2 3])" {
			t.Errorf("negative depth: %v", tp.Err())
		}
	})
}

// TestPreparedIndices: GatherIdx and ScatterAddIdx borrow the caller's indices (one upload for
// the forward and the backward pass, kept after Reset).
func TestPreparedIndices(t *testing.T) {
	forDevices(t, func(t *testing.T, d *ops.Device) {
		xb := upload(t, d, 1, 2, 3, 4, 5, 6)
		vb := upload(t, d, 10, 20, 30, 40)
		defer xb.Release()
		defer vb.Release()
		ix, err := ops.NewIndices(d, []int{2, 0})
		if err != nil {
			t.Fatal(err)
		}
		defer ix.Release()
		tp := autograd.NewTape(d)
		defer tp.Reset()
		x := tp.Leaf(xb, []int{3, 2}, true)
		v := tp.Leaf(vb, []int{2, 2}, true)
		g := tp.GatherIdx(x, ix)                   // rows 2, 0: [[5 6] [1 2]]
		s := tp.ScatterAddIdx(x, tp.Mul(g, v), ix) // x + rows of g*v at 2, 0
		if got := values(t, tp.Value(s)); !slices.Equal(got, []float64{1 + 30, 2 + 80, 3, 4, 5 + 50, 6 + 120}) {
			t.Errorf("scatter-add of gathered rows: %v", got)
		}
		if err := tp.Backward(tp.Sum(s)); err != nil {
			t.Fatal(err)
		}
		// d/dx: 1 everywhere, plus v at the gathered rows (row 0 from v's row 1, row 2 from row 0).
		if got := values(t, tp.Grad(x)); !slices.Equal(got, []float64{31, 41, 1, 1, 11, 21}) {
			t.Errorf("gradient of x: %v", got)
		}
		if got := values(t, tp.Grad(v)); !slices.Equal(got, []float64{5, 6, 1, 2}) {
			t.Errorf("gradient of v: %v", got)
		}
		tp.Reset()
		if ix.Len() != 2 || !tp.GatherIdx(tp.Leaf(xb, []int{3, 2}, true), ix).Valid() {
			t.Errorf("Reset released the caller's indices: %v", tp.Err())
		}
	})
}

// TestNegativeAxesAndInferredDims: PyTorch's conventions for axes counted from the end and a -1
// dimension in Reshape, and a nil device meaning the default one.
func TestNegativeAxesAndInferredDims(t *testing.T) {
	forDevices(t, func(t *testing.T, d *ops.Device) {
		xb := upload(t, d, 1, 2, 3, 4, 5, 6)
		defer xb.Release()
		tp := autograd.NewTape(d)
		defer tp.Reset()
		x := tp.Leaf(xb, []int{2, 3}, true)
		if got := values(t, tp.Value(tp.ReduceSum(x, -1))); !slices.Equal(got, []float64{6, 15}) {
			t.Errorf("ReduceSum(x, -1) = %v", got)
		}
		if got := values(t, tp.Value(tp.ReduceMean(x, -2))); !slices.Equal(got, []float64{2.5, 3.5, 4.5}) {
			t.Errorf("ReduceMean(x, -2) = %v", got)
		}
		for _, c := range []struct{ in, want []int }{{[]int{-1}, []int{6}}, {[]int{3, -1}, []int{3, 2}}, {[]int{-1, 1, 2}, []int{3, 1, 2}}} {
			if got := tp.Shape(tp.Reshape(x, c.in...)); !slices.Equal(got, c.want) {
				t.Errorf("Reshape(x, %v): shape %v, want %v", c.in, got, c.want)
			}
		}
		if got := tp.Shape(tp.Permute(x, -1, 0)); !slices.Equal(got, []int{3, 2}) {
			t.Errorf("Permute(x, -1, 0): shape %v", got)
		}
		total := tp.Sum(x) // a scalar: axis 0 or -1 gives itself, as in PyTorch
		for _, axis := range []int{0, -1} {
			if y := tp.ReduceSum(total, axis); y != total || tp.ReduceMean(total, axis) != total {
				t.Errorf("ReduceSum/ReduceMean of a scalar along %d is not the scalar", axis)
			}
		}
		if err := tp.Err(); err != nil {
			t.Fatal(err)
		}
		for name, f := range map[string]func() autograd.Var{
			"ReduceSum(x, -3)":   func() autograd.Var { return tp.ReduceSum(x, -3) },
			"ReduceSum(s, 1)":    func() autograd.Var { return tp.ReduceSum(tp.Sum(x), 1) },
			"Reshape(x, -1, -1)": func() autograd.Var { return tp.Reshape(x, -1, -1) },
			"Reshape(x, 4, -1)":  func() autograd.Var { return tp.Reshape(x, 4, -1) },
			"Reshape(x, 0, -1)":  func() autograd.Var { return tp.Reshape(x, 0, -1) },
			"Permute(x, -1, 1)":  func() autograd.Var { return tp.Permute(x, -1, 1) },
		} {
			f()
			if tp.Err() == nil {
				t.Errorf("%s: no error", name)
			}
			tp.Reset()
			x = tp.Leaf(xb, []int{2, 3}, true)
		}
	})
	if autograd.NewTape(nil).Device() != ops.Default() {
		t.Error("NewTape(nil) is not on the default device")
	}
}

// TestDropoutAll: p = 1 gives x * 0 (zeros, NaN stays NaN, as PyTorch) and a zero gradient.
func TestDropoutAll(t *testing.T) {
	forDevices(t, func(t *testing.T, d *ops.Device) {
		xb := upload(t, d, 1, -2, 3, 4)
		defer xb.Release()
		tp := autograd.NewTape(d)
		defer tp.Reset()
		x := tp.Leaf(xb, []int{4}, true)
		y := tp.Dropout(x, 1, 9)
		if got := values(t, tp.Value(y)); !slices.Equal(got, []float64{0, 0, 0, 0}) {
			t.Errorf("Dropout(x, 1) = %v", got)
		}
		if err := tp.Backward(tp.Sum(y)); err != nil {
			t.Fatal(err)
		}
		if got := values(t, tp.Grad(x)); !slices.Equal(got, []float64{0, 0, 0, 0}) {
			t.Errorf("gradient %v, want zeros", got)
		}
	})
}

// TestDropoutNone: p = 0 returns x itself, and the session takes no key for p = 0 or 1.
func TestDropoutNone(t *testing.T) {
	forDevices(t, func(t *testing.T, d *ops.Device) {
		s := autograd.NewSession(autograd.Options{Device: d, Seed: 3})
		defer s.Close()
		x := s.Input([]float32{1, -2, 3}, 3)
		if y := s.Dropout(x, 0); y != x {
			t.Errorf("Dropout(x, 0) is not x")
		}
		s.Dropout(x, 1)
		if _, draws := s.RandomState(); draws != 0 || s.Err() != nil {
			t.Errorf("after Dropout with p = 0 and 1: %d draws, error %v", draws, s.Err())
		}
		s.Dropout(x, 0.5)
		if _, draws := s.RandomState(); draws != 1 {
			t.Errorf("after Dropout(x, 0.5): %d draws, want 1", draws)
		}
	})
}

// TestPermuteCopies: Permute copies once per block move: once for the attention layout change
// (b, t, h, d) -> (b, h, d, t), at most rank-1 times for a reversal, never for moves of size-1
// axes only.
func TestPermuteCopies(t *testing.T) {
	d := ops.CPU()
	for _, c := range []struct {
		shape, perm []int
		copies      int
	}{
		{[]int{2, 3, 4, 5}, []int{0, 2, 3, 1}, 1},
		{[]int{2, 3, 4, 5}, []int{0, 2, 1, 3}, 1},
		{[]int{2, 3, 4, 5}, []int{3, 0, 1, 2}, 1},
		{[]int{2, 2, 2, 2, 2, 2, 2, 2}, []int{7, 6, 5, 4, 3, 2, 1, 0}, 7},
		{[]int{1, 4, 1, 5}, []int{2, 1, 0, 3}, 0},
	} {
		xb, err := ops.Zeros(d, numel(c.shape))
		if err != nil {
			t.Fatal(err)
		}
		tp := autograd.NewTape(d)
		base := d.Stats().LiveBytes
		y := tp.Permute(tp.Leaf(xb, c.shape, true), c.perm...)
		copies := int(d.Stats().LiveBytes-base) / (4 * numel(c.shape))
		if want := permuteShape(c.shape, c.perm); !slices.Equal(tp.Shape(y), want) {
			t.Errorf("permute %v of %v: shape %v, want %v", c.perm, c.shape, tp.Shape(y), want)
		}
		if err := tp.Err(); err != nil || copies != c.copies {
			t.Errorf("permute %v of %v: %d copies (err %v), want %d", c.perm, c.shape, copies, err, c.copies)
		}
		tp.Reset()
		xb.Release()
	}
}

func permuteShape(shape, perm []int) []int {
	out := make([]int, len(perm))
	for j, p := range perm {
		out[j] = shape[p]
	}
	return out
}

// TestPermuteRankLimit: Permute names itself when the rank is above ops.MaxRank.
func TestPermuteRankLimit(t *testing.T) {
	shape := []int{1, 1, 1, 1, 1, 1, 1, 1, 1}
	xb, err := ops.Zeros(ops.CPU(), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer xb.Release()
	tp := autograd.NewTape(ops.CPU())
	defer tp.Reset()
	tp.Permute(tp.Leaf(xb, shape, true), 8, 7, 6, 5, 4, 3, 2, 1, 0)
	if err := tp.Err(); err == nil || !strings.Contains(err.Error(), "permute: rank 9") {
		t.Errorf("Permute of rank 9: error %v", err)
	}
}

// TestLinearLeadingAxes: Linear keeps the leading axes of a (..., in) input: (..., out).
func TestLinearLeadingAxes(t *testing.T) {
	tp := autograd.NewTape(ops.CPU())
	defer tp.Reset()
	leaf := func(shape ...int) autograd.Var {
		n := 1
		for _, d := range shape {
			n *= d
		}
		b, err := ops.Zeros(ops.CPU(), n)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Release() })
		return tp.Leaf(b, shape, true)
	}
	y := tp.Linear(leaf(2, 3, 4), leaf(5, 4), leaf(5))
	if got := tp.Shape(y); tp.Err() != nil || !slices.Equal(got, []int{2, 3, 5}) {
		t.Errorf("Linear of (2, 3, 4) by (5, 4): shape %v, error %v", got, tp.Err())
	}
}

// TestMaskedSoftmax: the causal (lower-triangular) hard mask plus one fully blocked row, the
// forward values and the gradient y ⊙ (w - Σ w·y) of Σ w ⊙ softmax against float64; blocked
// entries are 0 and get no gradient, and the mask's gradient (it is a leaf that requires grad
// here) is zero.
func TestMaskedSoftmax(t *testing.T) {
	forDevices(t, func(t *testing.T, d *ops.Device) {
		const rows, cols = 8, 4 // two (4, 4) score matrices
		xs, ws, ms := make([]float64, rows*cols), make([]float64, rows*cols), make([]float64, rows*cols)
		for i := range xs {
			r, c := i/cols, i%cols
			xs[i], ws[i] = math.Sin(float64(3*i+1)), math.Cos(float64(5*i+2))
			if c <= r%4 && r != 6 { // causal; row 6 fully blocked
				ms[i] = 1
			}
		}
		xb, wb, mb := upload(t, d, xs...), upload(t, d, ws...), upload(t, d, ms...)
		defer ops.ReleaseThen(nil, xb, wb, mb)
		tp := autograd.NewTape(d)
		defer tp.Reset()
		x, m := tp.Leaf(xb, []int{2, 4, 4}, true), tp.Leaf(mb, []int{2, 4, 4}, true)
		y := tp.MaskedSoftmax(x, m)
		if err := tp.Backward(tp.Sum(tp.Mul(y, tp.Const(wb, []int{2, 4, 4})))); err != nil {
			t.Fatal(err)
		}
		got, _ := tp.Value(y).Float64s()
		dx, _ := tp.Grad(x).Float64s()
		dm, _ := tp.Grad(m).Float64s()
		for r := range rows {
			mx := math.Inf(-1)
			for c := range cols {
				if ms[r*cols+c] == 1 {
					mx = max(mx, xs[r*cols+c])
				}
			}
			var s, sw float64
			want := make([]float64, cols)
			for c := range cols {
				if ms[r*cols+c] == 1 {
					want[c] = math.Exp(xs[r*cols+c] - mx)
					s += want[c]
				}
			}
			for c := range cols {
				if s > 0 {
					want[c] /= s
				}
				sw += ws[r*cols+c] * want[c]
			}
			for c := range cols {
				i := r*cols + c
				wantDx := want[c] * (ws[i] - sw)
				if math.Abs(got[i]-want[c]) > 1e-6 || math.Abs(dx[i]-wantDx) > 1e-6 || dm[i] != 0 {
					t.Errorf("(%d, %d): y %v dx %v dmask %v, want %v, %v, 0", r, c, got[i], dx[i], dm[i], want[c], wantDx)
				}
				if ms[i] == 0 && (got[i] != 0 || dx[i] != 0) {
					t.Errorf("(%d, %d) is blocked: y %v, dx %v; want 0, 0", r, c, got[i], dx[i])
				}
			}
		}
		tp.Reset()
		tp.MaskedSoftmax(tp.Leaf(xb, []int{2, 4, 4}, true), tp.Leaf(mb, []int{8, 4}, false))
		if err := tp.Err(); err == nil || !strings.Contains(err.Error(), "masked_softmax: mask [8 4] for input [2 4 4]") {
			t.Errorf("mask of another shape: %v", err)
		}
	})
}

// TestCrossEntropyIgnore: the rows labelled with the ignored index drop out of the mean and get
// zero gradients; the other rows' loss and gradients are bit for bit those of CrossEntropy on
// them alone. Every row ignored: NaN, zero gradients.
func TestCrossEntropyIgnore(t *testing.T) {
	forDevices(t, func(t *testing.T, d *ops.Device) {
		const rows, cols = 5, 3
		xs := make([]float64, rows*cols)
		for i := range xs {
			xs[i] = math.Sin(float64(7*i + 3))
		}
		labels := []int{2, -100, 0, -100, 1}
		kept := []int{0, 2, 4}
		var keptXs []float64
		for _, r := range kept {
			keptXs = append(keptXs, xs[r*cols:(r+1)*cols]...)
		}
		xb, kb := upload(t, d, xs...), upload(t, d, keptXs...)
		defer ops.ReleaseThen(nil, xb, kb)
		run := func(b *ops.Buffer, n int, f func(tp *autograd.Tape, x autograd.Var) autograd.Var) (loss, grad []float32) {
			tp := autograd.NewTape(d)
			defer tp.Reset()
			x := tp.Leaf(b, []int{n, cols}, true)
			l := f(tp, x)
			if err := tp.Backward(l); err != nil {
				t.Fatal(err)
			}
			loss, _ = tp.Value(l).Float32s()
			grad, _ = tp.Grad(x).Float32s()
			return loss, grad
		}
		l1, g1 := run(xb, rows, func(tp *autograd.Tape, x autograd.Var) autograd.Var { return tp.CrossEntropyIgnore(x, labels, -100) })
		l2, g2 := run(kb, len(kept), func(tp *autograd.Tape, x autograd.Var) autograd.Var {
			return tp.CrossEntropy(x, []int{labels[0], labels[2], labels[4]})
		})
		if !sameBits(l1, l2) {
			t.Errorf("loss %v, want %v (CrossEntropy of the kept rows)", l1, l2)
		}
		for r := range rows {
			want := make([]float32, cols)
			if k := slices.Index(kept, r); k >= 0 {
				want = g2[k*cols : (k+1)*cols]
			}
			if got := g1[r*cols : (r+1)*cols]; !sameBits(got, want) {
				t.Errorf("row %d: gradient %v, want %v", r, got, want)
			}
		}
		l3, g3 := run(xb, rows, func(tp *autograd.Tape, x autograd.Var) autograd.Var {
			return tp.CrossEntropyIgnore(x, []int{7, 7, 7, 7, 7}, 7)
		})
		if !math.IsNaN(float64(l3[0])) || slices.ContainsFunc(g3, func(v float32) bool { return v != 0 }) {
			t.Errorf("every row ignored: loss %v, gradient %v; want NaN and zeros", l3, g3)
		}
		tp := autograd.NewTape(d)
		defer tp.Reset()
		tp.CrossEntropyIgnore(tp.Leaf(xb, []int{rows, cols}, true), []int{2, -100, 3, 0, 0}, -100)
		if err := tp.Err(); err == nil || !strings.Contains(err.Error(), "label 3 at position 2 is outside [0, 3)") {
			t.Errorf("a label out of range that is not the ignored one: %v", err)
		}
	})
}

// sameBits reports whether a and b hold the same float32 bit patterns.
func sameBits(a, b []float32) bool {
	return slices.EqualFunc(a, b, func(x, y float32) bool { return math.Float32bits(x) == math.Float32bits(y) })
}

// TestReduceMaxTies: the gradient of a maximum goes to the entries equal to it, split evenly
// among ties (+Inf ties with +Inf); a NaN maximum spreads it over its row; an empty axis gives
// zeros and no gradient.
func TestReduceMaxTies(t *testing.T) {
	forDevices(t, func(t *testing.T, d *ops.Device) {
		inf, nan := math.Inf(1), math.NaN()
		xb := upload(t, d, 1, 3, 3, 0, // two tied maxima
			inf, 2, inf, inf, // three tied infinities
			-1, nan, 5, 0) // a NaN: the maximum is NaN
		defer xb.Release()
		tp := autograd.NewTape(d)
		defer tp.Reset()
		x := tp.Leaf(xb, []int{3, 4}, true)
		y := tp.ReduceMax(x, -1)
		if err := tp.Backward(tp.Sum(y)); err != nil {
			t.Fatal(err)
		}
		got, _ := tp.Value(y).Float32s()
		if got[0] != 3 || !math.IsInf(float64(got[1]), 1) || !math.IsNaN(float64(got[2])) {
			t.Errorf("maxima %v, want [3 +Inf NaN]", got)
		}
		third := float32(1) / 3
		want := []float32{0, 0.5, 0.5, 0, third, 0, third, third, 0.25, 0.25, 0.25, 0.25}
		if g, _ := tp.Grad(x).Float32s(); !sameBits(g, want) {
			t.Errorf("gradient %v, want %v", g, want)
		}
		tp.Reset()
		e, err := ops.Zeros(d, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer e.Release()
		ex := tp.Leaf(e, []int{2, 0}, true)
		ey := tp.ReduceMax(ex, 1)
		if err := tp.Backward(tp.Sum(ey)); err != nil {
			t.Fatal(err)
		}
		if v, _ := tp.Value(ey).Float32s(); !slices.Equal(v, []float32{0, 0}) || tp.Grad(ex).Len() != 0 {
			t.Errorf("empty axis: maxima %v, gradient of %d elements", v, tp.Grad(ex).Len())
		}
		tp.ReduceMax(ex, 2)
		if err := tp.Err(); err == nil || !strings.Contains(err.Error(), "reduce_max: axis 2 of shape [2 0]") {
			t.Errorf("bad axis: %v", err)
		}
	})
}

// TestBroadcastShapes checks the result shapes of the broadcasting binary ops and of MatMul
// (torch.matmul's rules), and their errors.
func TestBroadcastShapes(t *testing.T) {
	forDevices(t, func(t *testing.T, d *ops.Device) {
		for _, c := range []struct {
			op     string
			a, b   []int
			want   []int
			errMsg string
		}{
			{"add", []int{4, 3}, []int{3}, []int{4, 3}, ""},
			{"add", []int{}, []int{2, 2}, []int{2, 2}, ""},
			{"add", []int{3, 1}, []int{1, 4}, []int{3, 4}, ""},
			{"add", []int{0, 3}, []int{3}, []int{0, 3}, ""},
			{"add", []int{2, 1}, []int{0}, []int{2, 0}, ""},
			{"add", []int{2, 3}, []int{2}, nil, "autograd: add: shapes [2 3] and [2] do not broadcast"},
			{"add", []int{1, 1, 1, 1, 1, 1, 1, 1, 2}, []int{2}, []int{1, 1, 1, 1, 1, 1, 1, 1, 2}, ""}, // a view
			{"add", []int{2, 1, 1, 1, 1, 1, 1, 1, 1}, []int{3}, nil,
				"autograd: add: broadcasting shape [2 1 1 1 1 1 1 1 1] to [2 1 1 1 1 1 1 1 3] takes rank 9, above ops.MaxRank (8)"},
			{"matmul", []int{3}, []int{3}, []int{}, ""},
			{"matmul", []int{3}, []int{3, 2}, []int{2}, ""},
			{"matmul", []int{2, 3}, []int{3}, []int{2}, ""},
			{"matmul", []int{5, 2, 3}, []int{3, 4}, []int{5, 2, 4}, ""},
			{"matmul", []int{2, 3}, []int{5, 3, 4}, []int{5, 2, 4}, ""},
			{"matmul", []int{6, 1, 2, 3}, []int{5, 3, 4}, []int{6, 5, 2, 4}, ""},
			{"matmul", []int{3}, []int{5, 3, 4}, []int{5, 4}, ""},
			{"matmul", []int{0, 2, 3}, []int{3, 4}, []int{0, 2, 4}, ""},
			{"matmul", []int{3}, []int{1, 1, 1, 1, 1, 1, 1, 3, 2}, []int{1, 1, 1, 1, 1, 1, 1, 2}, ""},
			{"matmul", []int{2, 3}, []int{1, 1, 1, 1, 1, 1, 1, 3, 2}, []int{1, 1, 1, 1, 1, 1, 1, 2, 2}, ""},
			{"matmul", []int{2, 3}, []int{2, 1, 1, 1, 1, 1, 1, 3, 2}, nil,
				"autograd: matmul: broadcasting shape [2 3] to [2 1 1 1 1 1 1 2 3] takes rank 9, above ops.MaxRank (8)"},
			{"matmul", []int{2, 3}, []int{2, 3}, nil, "autograd: matmul: shapes [2 3] and [2 3] do not multiply"},
			{"matmul", []int{3}, []int{}, nil, "autograd: matmul: shapes [3] and [] do not multiply"},
			{"matmul", []int{2, 2, 3}, []int{3, 3, 4}, nil,
				"autograd: matmul: shapes [2 2 3] and [3 3 4] do not multiply (batch axes do not broadcast)"},
		} {
			tp := autograd.NewTape(d)
			var bufs []*ops.Buffer
			leaf := func(shape []int) autograd.Var {
				b, err := ops.Zeros(d, numel(shape))
				if err != nil {
					t.Fatal(err)
				}
				bufs = append(bufs, b)
				return tp.Leaf(b, shape, true)
			}
			a, b := leaf(c.a), leaf(c.b)
			var y autograd.Var
			if c.op == "add" {
				y = tp.Add(a, b)
			} else {
				y = tp.MatMul(a, b)
			}
			switch err := tp.Err(); {
			case c.errMsg != "":
				if err == nil || err.Error() != c.errMsg {
					t.Errorf("%s %v %v: error %v, want %q", c.op, c.a, c.b, err, c.errMsg)
				}
			case err != nil:
				t.Errorf("%s %v %v: %v", c.op, c.a, c.b, err)
			case !slices.Equal(tp.Shape(y), c.want):
				t.Errorf("%s %v %v: shape %v, want %v", c.op, c.a, c.b, tp.Shape(y), c.want)
			case tp.Backward(tp.Sum(y)) != nil || !slices.Equal(tp.Shape(a), c.a):
				t.Errorf("%s %v %v: backward: %v", c.op, c.a, c.b, tp.Err())
			}
			tp.Reset()
			for _, b := range bufs {
				b.Release()
			}
		}
	})
}

// TestAxisOpErrors: Cat, Stack and Narrow check their axes, shapes and ranges, return a single
// value or a whole axis as it is, and record one error naming the op.
func TestAxisOpErrors(t *testing.T) {
	forDevices(t, func(t *testing.T, d *ops.Device) {
		b := upload(t, d, 1, 2, 3, 4, 5, 6)
		defer b.Release()
		for _, c := range []struct {
			name string
			run  func(tp *autograd.Tape, x, y autograd.Var) autograd.Var
			want string
		}{
			{"cat none", func(tp *autograd.Tape, x, y autograd.Var) autograd.Var { return tp.Cat(0) }, "autograd: cat: no values to join"},
			{"cat axis", func(tp *autograd.Tape, x, y autograd.Var) autograd.Var { return tp.Cat(2, x, x) }, "autograd: cat: axis 2 is outside [-2, 1] for shape [2 3]"},
			{"cat shapes", func(tp *autograd.Tape, x, y autograd.Var) autograd.Var { return tp.Cat(0, x, y) }, "autograd: cat: shapes [2 3] and [3 2] differ off axis 0"},
			{"stack shapes", func(tp *autograd.Tape, x, y autograd.Var) autograd.Var { return tp.Stack(0, x, y) }, "autograd: stack: shapes [2 3] and [3 2] differ"},
			{"stack axis", func(tp *autograd.Tape, x, y autograd.Var) autograd.Var { return tp.Stack(-4, x) }, "autograd: stack: axis -4 is outside [-3, 2] for stacking values of shape [2 3]"},
			{"narrow range", func(tp *autograd.Tape, x, y autograd.Var) autograd.Var { return tp.Narrow(x, 1, 2, math.MaxInt) },
				"autograd: narrow: [2, 2+" + strconv.Itoa(math.MaxInt) + ") is outside axis 1 of shape [2 3]"},
			{"narrow axis", func(tp *autograd.Tape, x, y autograd.Var) autograd.Var { return tp.Narrow(x, math.MinInt, 0, 1) },
				"autograd: narrow: axis " + strconv.Itoa(math.MinInt) + " is outside [-2, 1] for shape [2 3]"},
			{"cat ranks", func(tp *autograd.Tape, x, y autograd.Var) autograd.Var { return tp.Cat(0, x, tp.Reshape(y, 6)) },
				"autograd: cat: shapes [2 3] and [6] have different ranks"},
		} {
			tp := autograd.NewTape(d)
			x, y := tp.Leaf(b, []int{2, 3}, true), tp.Leaf(b, []int{3, 2}, true)
			if v := c.run(tp, x, y); v.Valid() || tp.Err() == nil || tp.Err().Error() != c.want {
				t.Errorf("%s: error %v, want %q", c.name, tp.Err(), c.want)
			}
			tp.Reset()
		}
		// A released operand is an error of the op called, not of the ops it is composed of.
		for op, f := range map[string]func(tp *autograd.Tape, x autograd.Var) autograd.Var{
			"cat":    func(tp *autograd.Tape, x autograd.Var) autograd.Var { return tp.Cat(1, x, x) },
			"narrow": func(tp *autograd.Tape, x autograd.Var) autograd.Var { return tp.Narrow(x, 1, 0, 2) },
			"stack":  func(tp *autograd.Tape, x autograd.Var) autograd.Var { return tp.Stack(0, x, x) },
			"add":    func(tp *autograd.Tape, x autograd.Var) autograd.Var { return tp.Add(x, tp.Reshape(x, 1, 2, 3)) },
			"matmul": func(tp *autograd.Tape, x autograd.Var) autograd.Var { return tp.MatMul(tp.Reshape(x, 1, 2, 3), x) },
		} {
			tp := autograd.NewTape(d)
			gone := upload(t, d, 1, 2, 3, 4, 5, 6)
			x := tp.Leaf(gone, []int{2, 3}, true)
			gone.Release()
			f(tp, x)
			if err := tp.Err(); !errors.Is(err, ops.ErrReleased) || !strings.HasPrefix(err.Error(), "autograd: "+op+": ") {
				t.Errorf("%s of a released operand: %v, want ops.ErrReleased named by %s", op, err, op)
			}
			tp.Reset()
		}
		tp := autograd.NewTape(d)
		defer tp.Reset()
		x := tp.Leaf(b, []int{2, 3}, true)
		if tp.Cat(1, x) != x || tp.Narrow(x, -1, 0, 3) != x || tp.Err() != nil {
			t.Errorf("Cat of one value or Narrow of a whole axis is not the value itself: %v", tp.Err())
		}
		s := tp.Stack(1, x, x)
		if got := tp.Shape(s); !slices.Equal(got, []int{2, 2, 3}) {
			t.Errorf("Stack(1) of two [2 3]: shape %v", got)
		}
		for _, c := range []struct {
			v    autograd.Var
			want []int
		}{
			{tp.Unsqueeze(x, 0), []int{1, 2, 3}}, {tp.Unsqueeze(x, -1), []int{2, 3, 1}}, {tp.Unsqueeze(x, 1), []int{2, 1, 3}},
			{tp.Squeeze(tp.Unsqueeze(x, 1), 1), []int{2, 3}}, {tp.Squeeze(tp.Unsqueeze(x, -1), -1), []int{2, 3}},
		} {
			if got := tp.Shape(c.v); !slices.Equal(got, c.want) {
				t.Errorf("unsqueeze/squeeze: shape %v, want %v", got, c.want)
			}
		}
		if tp.Squeeze(x, 0) != x || tp.Err() != nil {
			t.Errorf("Squeeze of an axis of size 2 is not x itself: %v", tp.Err())
		}
		scalar := tp.Reshape(tp.Narrow(tp.Reshape(x, 6), 0, 0, 1))
		if tp.Squeeze(scalar, 0) != scalar || tp.Squeeze(scalar, -1) != scalar || tp.Err() != nil {
			t.Errorf("Squeeze of a scalar is not the scalar itself: %v", tp.Err())
		}
		// keepdim: x - mean over the last axis, broadcast back.
		centered := tp.Sub(x, tp.Unsqueeze(tp.ReduceMean(x, -1), -1))
		if got, _ := tp.Value(centered).Float32s(); !slices.Equal(got, []float32{-1, 0, 1, -1, 0, 1}) {
			t.Errorf("x - mean(x, -1, keepdim): %v", got)
		}
		if tp.Unsqueeze(x, 3); tp.Err() == nil || tp.Err().Error() != "autograd: unsqueeze: axis 3 is outside [-3, 2] for inserting into shape [2 3]" {
			t.Errorf("Unsqueeze(x, 3): %v", tp.Err())
		}
	})
}

// TestArgmax: the first largest value of each row along the last axis, NaN counting as largest
// (PyTorch's argmax(-1)); a scalar gives [0], no rows give [], an empty last axis is an error.
func TestArgmax(t *testing.T) {
	forDevices(t, func(t *testing.T, d *ops.Device) {
		nan, inf, negZero := math.NaN(), math.Inf(1), math.Copysign(0, -1)
		b := upload(t, d, 1, 3, 3, 2, nan, 1, -inf, -inf, -5, negZero, 0, negZero)
		defer b.Release()
		tp := autograd.NewTape(d)
		defer tp.Reset()
		x := tp.Leaf(b, []int{2, 2, 3}, false)
		if got := tp.Argmax(x); !slices.Equal(got, []int{1, 1, 2, 0}) {
			t.Errorf("Argmax: %v, want [1 1 2 0]", got)
		}
		if got := tp.Argmax(tp.Reshape(tp.Narrow(tp.Reshape(x, 12), 0, 1, 1))); !slices.Equal(got, []int{0}) {
			t.Errorf("Argmax of a scalar: %v", got)
		}
		if got := tp.Argmax(tp.Narrow(x, 0, 0, 0)); got == nil || len(got) != 0 {
			t.Errorf("Argmax of no rows: %v, want []", got)
		}
		if tp.Err() != nil {
			t.Fatal(tp.Err())
		}
		if got := tp.Argmax(tp.Narrow(x, -1, 0, 0)); got != nil || tp.Err() == nil {
			t.Errorf("Argmax of an empty last axis: %v, error %v", got, tp.Err())
		}
	})
}

// TestResultShapeOverflow: an op on a value with no elements whose result shape has more
// elements than an int counts (Gather of one row of a (0, huge) value) is an error, not a value
// whose shape and buffer disagree.
func TestResultShapeOverflow(t *testing.T) {
	forDevices(t, func(t *testing.T, d *ops.Device) {
		empty, err := ops.Zeros(d, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer empty.Release()
		tp := autograd.NewTape(d)
		defer tp.Reset()
		huge := math.MaxInt/4 + 1
		x := tp.Leaf(empty, []int{0, huge}, true)
		if err := tp.Err(); err != nil {
			t.Fatalf("a (0, %d) leaf: %v", huge, err)
		}
		y := tp.Gather(x, []int{0})
		if err := tp.Err(); err == nil || !strings.Contains(err.Error(), "too many elements") {
			t.Errorf("Gather of row 0 of a (0, %d) value: shape %v, error %v; want too many elements", huge, tp.Shape(y), err)
		}
	})
}
