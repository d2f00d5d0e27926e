package autograd_test

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/ops"
)

// sortRef sorts each row (the last axis of cols) of x and keeps the first k values (k < 0: all).
func sortRef(x []float64, cols, k int, desc bool) []float64 {
	if k < 0 {
		k = cols
	}
	var out []float64
	for r := 0; r*cols < len(x); r++ {
		row := slices.Clone(x[r*cols : (r+1)*cols])
		slices.Sort(row)
		if desc {
			slices.Reverse(row)
		}
		out = append(out, row[:k]...)
	}
	return out
}

// TestSelectGradients checks the gradients of Sort and TopK in float64 by central differences
// of the reference (rows short enough that the random values stay further apart than the step).
func TestSelectGradients(t *testing.T) {
	var cases []gradCase
	for _, shape := range [][]int{{1}, {7}, {4, 9}, {2, 3, 5}, {3, 40}} {
		cols := shape[len(shape)-1]
		for _, desc := range []bool{false, true} {
			cases = append(cases, gradCase{name: fmt.Sprintf("sort%v/desc=%v", shape, desc), in: [][]int{shape},
				op: func(tp *autograd.Tape, x []autograd.Var) autograd.Var {
					v, _ := tp.Sort(x[0], desc)
					return v
				},
				ref: func(x [][]float64) []float64 { return sortRef(x[0], cols, -1, desc) }})
			for _, k := range []int{0, 1, cols / 2, cols} {
				cases = append(cases, gradCase{name: fmt.Sprintf("topk%v/k=%d/largest=%v", shape, k, desc), in: [][]int{shape},
					op: func(tp *autograd.Tape, x []autograd.Var) autograd.Var {
						v, _ := tp.TopK(x[0], k, desc)
						return v
					},
					ref: func(x [][]float64) []float64 { return sortRef(x[0], cols, k, desc) }})
			}
		}
	}
	forDevices(t, func(t *testing.T, d *ops.Device) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) { checkGrad(t, d, c) })
		}
	})
}

// TestSortIndices checks the indices of Sort, Argsort and TopK against the values and each
// other (ties included), the result shapes, and that on a long row (the tile and merge path) every gradient lands, exactly, where
// its value came from.
func TestSortIndices(t *testing.T) {
	forDevices(t, func(t *testing.T, d *ops.Device) {
		const rows, cols = 3, 5000
		x := make([]float64, rows*cols)
		for i := range x {
			x[i] = float64(i*7919%1013) - 500 // ties: each value about 15 times per row
		}
		tp := autograd.NewTape(d)
		defer tp.Reset()
		xb := upload(t, d, x...)
		defer xb.Release()
		xv := tp.Leaf(xb, []int{rows, cols}, true)
		y, idx := tp.Sort(xv, true)
		top, tidx := tp.TopK(xv, 9, false)
		arg := tp.Argsort(xv, true)
		asc := tp.Argsort(xv, false)
		if err := tp.Err(); err != nil {
			t.Fatal(err)
		}
		if got := tp.Shape(top); !slices.Equal(got, []int{rows, 9}) {
			t.Errorf("TopK shape %v", got)
		}
		if !slices.Equal(arg, idx) {
			t.Errorf("Argsort differs from Sort's indices")
		}
		yv, tv := values(t, tp.Value(y)), values(t, tp.Value(top))
		for r := range rows {
			for j := range cols {
				c := idx[r*cols+j]
				if yv[r*cols+j] != x[r*cols+c] {
					t.Fatalf("row %d position %d: value %v, x[%d] = %v", r, j, yv[r*cols+j], c, x[r*cols+c])
				}
				if j > 0 && (yv[r*cols+j] > yv[r*cols+j-1] || yv[r*cols+j] == yv[r*cols+j-1] && c < idx[r*cols+j-1]) {
					t.Fatalf("row %d position %d: not descending and stable", r, j)
				}
			}
			for j := range 9 {
				if c := tidx[r*9+j]; tv[r*9+j] != x[r*cols+c] || c != asc[r*cols+j] {
					t.Fatalf("TopK row %d position %d: column %d value %v", r, j, c, tv[r*9+j])
				}
			}
		}
		w := make([]float64, rows*cols)
		for i := range w {
			w[i] = float64(i) + 0.5
		}
		wb := upload(t, d, w...)
		defer wb.Release()
		if err := tp.BackwardWith(y, wb); err != nil {
			t.Fatal(err)
		}
		g := values(t, tp.Grad(xv))
		for r := range rows {
			for j := range cols {
				if c := idx[r*cols+j]; g[r*cols+c] != w[r*cols+j] {
					t.Fatalf("row %d: gradient at column %d is %v, want %v", r, c, g[r*cols+c], w[r*cols+j])
				}
			}
		}
	})
}

func TestSelectErrors(t *testing.T) {
	tp := autograd.NewTape(ops.CPU())
	buf := upload(t, ops.CPU(), 1, 2, 3, 4, 5, 6) // borrowed by the leaves: released last
	defer buf.Release()
	x := tp.Leaf(buf, []int{2, 3}, true)
	defer tp.Reset()
	for _, c := range []struct {
		f    func()
		want string
	}{
		{func() { tp.TopK(x, 4, true) }, "autograd: topk: k = 4 is larger than the last axis of x (shape [2 3])"},
		{func() { tp.TopK(x, -2, true) }, "autograd: topk: k = -2 is negative (x of shape [2 3])"},
		{func() { tp.Sort(autograd.Var{}, true) }, "autograd: sort: operand 0: invalid Var"},
	} {
		c.f()
		if err := tp.Err(); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("error %v, want %q", err, c.want)
		}
		tp.Reset()
		x = tp.Leaf(buf, []int{2, 3}, true)
	}
}

// TestSessionMultinomial: draws follow the session's keys (the same seed draws the same,
// another draw differs), a failed call takes no key, and bad weights name the row.
func TestSessionMultinomial(t *testing.T) {
	forDevices(t, func(t *testing.T, d *ops.Device) {
		draw := func(s *autograd.Session, w []float32, shape ...int) []int {
			return s.Multinomial(s.Input(w, shape...), 4, true).Values()
		}
		w := []float32{0, 1, 2, 3, 4, 0, 0, 5}
		a := autograd.NewSession(autograd.Options{Device: d, Seed: 3})
		defer a.Close()
		b := autograd.NewSession(autograd.Options{Device: d, Seed: 3})
		defer b.Close()
		first := draw(a, w, 2, 4)
		if len(first) != 8 {
			t.Fatalf("%d draws for 2 rows of 4", len(first))
		}
		for i, c := range first {
			if w[i/4*4+c] == 0 {
				t.Errorf("draw %d took column %d of zero weight", i, c)
			}
		}
		// b fails once (a negative weight), then draws as a did: the failure took no key.
		bad := b.Multinomial(b.Input([]float32{1, -1, 1, 1}, 2, 2), 1, true)
		if err := b.ClearErr(); err == nil || err.Error() != "autograd: multinomial: row 0 has a negative, infinite or NaN weight (column 1)" {
			t.Errorf("negative weight: %v", err)
		}
		if bad.Values() != nil {
			t.Errorf("a failed draw returned values")
		}
		if got := draw(b, w, 2, 4); !slices.Equal(got, first) {
			t.Errorf("after a failed call: %v, want %v", got, first)
		}
		ix := a.Multinomial(a.Input(w, 8), 3, false)
		vals := ix.Values()
		if ix.Indices() == nil || ix.Indices().Len() != 3 || len(vals) != 3 {
			t.Fatalf("without replacement: %v (indices %v)", vals, ix.Indices())
		}
		if err := a.Err(); err != nil {
			t.Fatal(err)
		}
		slices.Sort(vals)
		if vals[0] == vals[1] || vals[1] == vals[2] {
			t.Errorf("without replacement: %v repeats", vals)
		}
		a.Multinomial(a.Input(w, 8), 6, false)
		if err := a.Err(); err == nil || err.Error() !=
			"autograd: multinomial: row 0 has 5 positive weights, fewer than the 6 samples drawn without replacement" {
			t.Errorf("too many samples: %v", err)
		}
	})
}

// Sort and TopK record differentiable values and return the indices on the host; the gradient
// goes back to where each value came from.
func ExampleTape_TopK() {
	tp := autograd.NewTape(ops.CPU())
	defer tp.Reset()
	xb, _ := ops.FromFloat32(ops.CPU(), []float32{0.5, 3, -1, 3, 2, float32(math.Inf(-1))})
	defer xb.Release()
	x := tp.Leaf(xb, []int{2, 3}, true)
	top, idx := tp.TopK(x, 2, true)
	tp.Backward(tp.Sum(top))
	v, _ := tp.Value(top).Float32s()
	g, _ := tp.Grad(x).Float32s()
	fmt.Println(v, idx)
	fmt.Println(g)
	// Output:
	// [3 0.5 3 2] [1 0 0 1]
	// [1 1 0 1 1 0]
}

// Sampling class indices from unnormalized weights with the session's keys: the same seed
// draws the same indices on every device.
func ExampleSession_Multinomial() {
	sess := autograd.NewSession(autograd.Options{Device: ops.CPU(), Seed: 1})
	defer sess.Close()
	w := sess.Input([]float32{0, 1, 0, 3}, 4)
	draws := sess.Multinomial(w, 2, false).Values()
	slices.Sort(draws)
	fmt.Println(draws, sess.Err())
	// Output: [1 3] <nil>
}
