package autograd_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/ops"
)

// scanRef is the diagonal selective scan in float64: x is (batch, seqLen, state), h0 (batch,
// state), a and b (state) or, varying, shaped like x.
func scanRef(varying bool, a, b, x, h0 []float64, batch, seqLen, state int) []float64 {
	y := make([]float64, len(x))
	for bi := range batch {
		for j := range state {
			h := h0[bi*state+j]
			for t := range seqLen {
				i := (bi*seqLen+t)*state + j
				c := j
				if varying {
					c = i
				}
				h = a[c]*h + b[c]*x[i]
				y[i] = h
			}
		}
	}
	return y
}

// decay draws coefficients with 0.2 <= |a| <= 0.95 (either sign), so that the states stay of
// the inputs' size.
func decay(r *rand.Rand) float64 {
	v := 0.2 + 0.75*r.Float64()
	if r.IntN(2) == 0 {
		return -v
	}
	return v
}

func TestGradientsSelectiveScan(t *testing.T) {
	var cs []gradCase
	for _, s := range [][3]int{{1, 1, 1}, {1, 5, 4}, {2, 6, 3}, {3, 9, 2}} {
		batch, seqLen, state := s[0], s[1], s[2]
		x := []int{batch, seqLen, state}
		h := []int{batch, state}
		if batch == 1 { // the seeds' layout: one sequence
			x, h = []int{seqLen, state}, []int{state}
		}
		cs = append(cs,
			gradCase{name: fmt.Sprintf("selective_scan%v", x), in: [][]int{{state}, {state}, x, h},
				gen: []func(*rand.Rand) float64{decay, normal, normal, normal},
				op: func(tp *autograd.Tape, v []autograd.Var) autograd.Var {
					return tp.SelectiveScan(v[0], v[1], v[2], v[3])
				},
				ref: func(v [][]float64) []float64 { return scanRef(false, v[0], v[1], v[2], v[3], batch, seqLen, state) }},
			gradCase{name: fmt.Sprintf("selective_scan_var%v", x), in: [][]int{x, x, x, h},
				gen: []func(*rand.Rand) float64{decay, normal, normal, normal},
				op: func(tp *autograd.Tape, v []autograd.Var) autograd.Var {
					return tp.SelectiveScanVar(v[0], v[1], v[2], v[3])
				},
				ref: func(v [][]float64) []float64 { return scanRef(true, v[0], v[1], v[2], v[3], batch, seqLen, state) }},
			// Mamba-style: the transition exp(z) and the input term formed by tape ops upstream.
			gradCase{name: fmt.Sprintf("selective_scan_var_exp%v", x), in: [][]int{x, x, x, h},
				gen: []func(*rand.Rand) float64{func(r *rand.Rand) float64 { return -0.05 - r.Float64() }, normal, normal, normal},
				op: func(tp *autograd.Tape, v []autograd.Var) autograd.Var {
					return tp.SelectiveScanVar(tp.Exp(v[0]), v[1], tp.Mul(v[2], v[1]), v[3])
				},
				ref: func(v [][]float64) []float64 {
					ea, bx := make([]float64, len(v[0])), make([]float64, len(v[0]))
					for i := range ea {
						ea[i], bx[i] = math.Exp(v[0][i]), v[2][i]*v[1][i]
					}
					return scanRef(true, ea, v[1], bx, v[3], batch, seqLen, state)
				}})
	}
	forDevices(t, func(t *testing.T, d *ops.Device) {
		for _, c := range cs {
			t.Run(c.name, func(t *testing.T) { checkGrad(t, d, c) })
		}
	})
}

// TestSelectiveScanReferenceTape: the reference suite's vectors (runtime reference, section 5.1)
// through the tape: the states and, for the loss sum(h), the gradients of all four operands,
// exactly (every value is dyadic).
func TestSelectiveScanReferenceTape(t *testing.T) {
	forDevices(t, func(t *testing.T, d *ops.Device) {
		tp := autograd.NewTape(d)
		defer tp.Reset()
		bufs := []*ops.Buffer{upload(t, d, 0.5, 0.25), upload(t, d, 1, 2), upload(t, d, 2, 1, 4, -2, 0, 3), upload(t, d, 1, -1)}
		for _, b := range bufs {
			defer b.Release()
		}
		a, b := tp.Leaf(bufs[0], []int{2}, true), tp.Leaf(bufs[1], []int{2}, true)
		x, h0 := tp.Leaf(bufs[2], []int{3, 2}, true), tp.Leaf(bufs[3], []int{2}, true)
		h := tp.SelectiveScan(a, b, x, h0)
		if err := tp.Backward(tp.Sum(h)); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			name string
			got  *ops.Buffer
			want []float64
		}{
			{"h", tp.Value(h), []float64{2.5, 1.75, 5.25, -3.5625, 2.625, 5.109375}},
			{"dA", tp.Grad(a), []float64{10.75, -2.6875}},
			{"dB", tp.Grad(b), []float64{9.5, 1.8125}},
			{"dX", tp.Grad(x), []float64{1.75, 2.625, 1.5, 2.5, 1, 2}},
			{"dH0", tp.Grad(h0), []float64{0.875, 0.328125}},
		} {
			if got := values(t, c.got); !slices.Equal(got, c.want) {
				t.Errorf("%s = %v, want %v", c.name, got, c.want)
			}
		}
	})
}

func TestSelectiveScanShapeErrors(t *testing.T) {
	d := ops.CPU()
	for _, c := range []struct {
		name    string
		varying bool
		a, x, h []int
		want    string
	}{
		{"rank", false, []int{2}, []int{6}, []int{2}, "want (seqLen, state) or (batch, seqLen, state)"},
		{"coefficients", false, []int{3}, []int{3, 2}, []int{2}, "a [3] and b [3]: want [2]"},
		{"h0", false, []int{2}, []int{4, 3, 2}, []int{2}, "h0 [2]: want [4 2]"},
		{"var coefficients", true, []int{2}, []int{3, 2}, []int{2}, "want [3 2]"},
	} {
		tp := autograd.NewTape(d)
		leaf := func(s []int) autograd.Var {
			b, err := ops.Zeros(d, numel(s))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { b.Release() })
			return tp.Leaf(b, s, true)
		}
		a, x, h := leaf(c.a), leaf(c.x), leaf(c.h)
		if c.varying {
			tp.SelectiveScanVar(a, a, x, h)
		} else {
			tp.SelectiveScan(a, a, x, h)
		}
		if err := tp.Err(); err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "autograd: selective_scan") {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
		tp.Reset()
	}
}

// A diagonal state-space layer: the transition a = exp(z) and the input term
// are tape ops upstream of the time-varying scan, and the gradient reaches the decay.
func ExampleTape_SelectiveScanVar() {
	d := ops.CPU()
	tp := autograd.NewTape(d)
	defer tp.Reset()
	logA, _ := ops.FromFloat32(d, []float32{-0.5, -0.5, -0.5}) // (seqLen 3, state 1)
	x, _ := ops.FromFloat32(d, []float32{1, 0, 0})
	ones, _ := ops.Full(d, 3, 1)
	h0, _ := ops.Zeros(d, 1)
	defer ops.ReleaseThen(nil, logA, x, ones, h0)
	z := tp.Leaf(logA, []int{3, 1}, true)
	h := tp.SelectiveScanVar(tp.Exp(z), tp.Const(ones, []int{3, 1}), tp.Const(x, []int{3, 1}), tp.Const(h0, []int{1}))
	_ = tp.Backward(tp.Sum(h)) // h = [1, e^-0.5, e^-1]: sum(h) = 1 + e^z1 + e^(z1+z2)
	hv, _ := tp.Value(h).Float32s()
	g, _ := tp.Grad(z).Float32s()
	fmt.Printf("h = %.4f\ndL/dz = %.4f\n", hv, g)
	// Output:
	// h = [1.0000 0.6065 0.3679]
	// dL/dz = [0.0000 0.9744 0.3679]
}

// ExampleTape_SelectiveScan: a batch of two sequences through one shared decay per channel.
func ExampleTape_SelectiveScan() {
	d := ops.CPU()
	tp := autograd.NewTape(d)
	defer tp.Reset()
	bufs := make([]*ops.Buffer, 4)
	for k, v := range [][]float32{{0.5}, {1}, {1, 1, 1, 2, 0, 0}, {0, 8}} {
		bufs[k], _ = ops.FromFloat32(d, v)
	}
	defer ops.ReleaseThen(nil, bufs...)
	a := tp.Leaf(bufs[0], []int{1}, true) // (state 1)
	h := tp.SelectiveScan(a, tp.Const(bufs[1], []int{1}), tp.Const(bufs[2], []int{2, 3, 1}), tp.Const(bufs[3], []int{2, 1}))
	_ = tp.Backward(tp.Sum(h))
	hv, _ := tp.Value(h).Float32s()
	g, _ := tp.Grad(a).Float32s()
	fmt.Println(hv, g)
	// Output: [1 1.5 1.75 6 3 1.5] [29]
}
