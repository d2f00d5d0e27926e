package autograd_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/ops"
)

// selector draws a condition or mask value: 0 half of the time, otherwise ±(1 + |N(0,1)|). The
// references read |c| > 0.5 as true, so that finite-difference steps never flip a selection.
func selector(r *rand.Rand) float64 {
	if r.IntN(2) == 0 {
		return 0
	}
	v := 1 + math.Abs(r.NormFloat64())
	if r.IntN(2) == 0 {
		v = -v
	}
	return v
}

func truth(c float64) bool { return math.Abs(c) > 0.5 }

// extraGradCases are the gradient checks of Pow, Where and MaskedFill.
func extraGradCases() []gradCase {
	var cs []gradCase
	add := func(c gradCase) {
		c.name = fmt.Sprintf("%s%v", c.name, c.in)
		cs = append(cs, c)
	}
	for _, pc := range []struct {
		p   float64
		gen func(r *rand.Rand) float64
	}{
		{0, normal}, {1, normal}, {2, normal}, {3, normal}, {7, normal}, {-2, awayFrom(0)}, {-1, positive},
		{0.5, positive}, {-0.5, positive}, {2.5, positive}, {-1.7, positive}, {1.0 / 3, positive},
	} {
		for _, s := range elementwiseShapes {
			add(gradCase{name: fmt.Sprintf("pow%g", pc.p), in: [][]int{s}, gen: []func(*rand.Rand) float64{pc.gen},
				op: func(tp *autograd.Tape, x []autograd.Var) autograd.Var { return tp.Pow(x[0], pc.p) },
				ref: func(x [][]float64) []float64 {
					return mapRef(x[0], func(v float64) float64 { return math.Pow(v, pc.p) })
				}})
		}
	}
	where := func(c, a, b float64) float64 {
		if truth(c) {
			return a
		}
		return b
	}
	for _, s := range elementwiseShapes {
		add(gradCase{name: "where", in: [][]int{s, s, s}, gen: []func(*rand.Rand) float64{selector, normal, normal},
			op: func(tp *autograd.Tape, x []autograd.Var) autograd.Var { return tp.Where(x[0], x[1], x[2]) },
			ref: func(x [][]float64) []float64 {
				return mapIdx(len(x[0]), func(i int) float64 { return where(x[0][i], x[1][i], x[2][i]) })
			}})
		add(gradCase{name: "masked_fill", in: [][]int{s, s}, gen: []func(*rand.Rand) float64{normal, selector},
			op: func(tp *autograd.Tape, x []autograd.Var) autograd.Var { return tp.MaskedFill(x[0], x[1], 2.5) },
			ref: func(x [][]float64) []float64 {
				return mapIdx(len(x[0]), func(i int) float64 { return where(x[1][i], 2.5, x[0][i]) })
			}})
	}
	// Broadcasting: every operand of Where grows; a row mask over a matrix.
	for _, sh := range [][4][]int{{{3, 1}, {1, 4}, {}, {3, 4}}, {{4}, {2, 4}, {2, 1}, {2, 4}}} {
		add(gradCase{name: "where_broadcast", in: [][]int{sh[0], sh[1], sh[2]}, gen: []func(*rand.Rand) float64{selector, normal, normal},
			op: func(tp *autograd.Tape, x []autograd.Var) autograd.Var { return tp.Where(x[0], x[1], x[2]) },
			ref: func(x [][]float64) []float64 {
				c, a, b := broadcastRef(x[0], sh[0], sh[3]), broadcastRef(x[1], sh[1], sh[3]), broadcastRef(x[2], sh[2], sh[3])
				return mapIdx(len(c), func(i int) float64 { return where(c[i], a[i], b[i]) })
			}})
	}
	add(gradCase{name: "masked_fill_broadcast", in: [][]int{{3, 4}, {4}}, gen: []func(*rand.Rand) float64{normal, selector},
		op: func(tp *autograd.Tape, x []autograd.Var) autograd.Var { return tp.MaskedFill(x[0], x[1], -1) },
		ref: func(x [][]float64) []float64 {
			m := broadcastRef(x[1], []int{4}, []int{3, 4})
			return mapIdx(12, func(i int) float64 { return where(m[i], -1, x[0][i]) })
		}})
	return cs
}

func TestGradientsElementwiseExtra(t *testing.T) {
	forDevices(t, func(t *testing.T, d *ops.Device) {
		for _, c := range extraGradCases() {
			t.Run(c.name, func(t *testing.T) { checkGrad(t, d, c) })
		}
	})
}

// TestSelectionGradientsExact checks that the gradients of Where and MaskedFill select the
// cotangent's bits: an infinite or NaN cotangent reaches its side unchanged and leaves exact
// zeros on the other (a product with a 0/1 mask would give NaN there).
func TestSelectionGradientsExact(t *testing.T) {
	forDevices(t, func(t *testing.T, d *ops.Device) {
		inf, nan := math.Inf(1), math.NaN()
		cb := upload(t, d, 1, 0, math.NaN(), math.Copysign(0, -1))
		ab := upload(t, d, 1, 2, 3, 4)
		bb := upload(t, d, 5, 6, 7, 8)
		gb := upload(t, d, inf, -inf, nan, inf)
		defer func() {
			for _, b := range []*ops.Buffer{cb, ab, bb, gb} {
				b.Release()
			}
		}()
		tp := autograd.NewTape(d)
		defer tp.Reset()
		c, a, b := tp.Const(cb, []int{4}), tp.Leaf(ab, []int{4}, true), tp.Leaf(bb, []int{4}, true)
		y := tp.Where(c, a, b)
		z := tp.MaskedFill(a, c, 9)
		if err := tp.Err(); err != nil {
			t.Fatal(err)
		}
		if got := values(t, tp.Value(y)); fmt.Sprint(got) != "[1 6 3 8]" {
			t.Errorf("Where = %v, want [1 6 3 8] (NaN true, -0 false)", got)
		}
		if got := values(t, tp.Value(z)); fmt.Sprint(got) != "[9 2 9 4]" {
			t.Errorf("MaskedFill = %v, want [9 2 9 4]", got)
		}
		if err := tp.BackwardFrom([]autograd.Var{y}, []*ops.Buffer{gb}); err != nil {
			t.Fatal(err)
		}
		ga, gbb := values(t, tp.Grad(a)), values(t, tp.Grad(b))
		if fmt.Sprint(ga) != "[+Inf 0 NaN 0]" || fmt.Sprint(gbb) != "[0 -Inf 0 +Inf]" {
			t.Errorf("Where's gradients %v and %v, want [+Inf 0 NaN 0] and [0 -Inf 0 +Inf]", ga, gbb)
		}
		for i, v := range append(ga, gbb...) {
			if v == 0 && math.Signbit(v) {
				t.Errorf("gradient %d is -0, want +0", i)
			}
		}
	})
}

// TestSelectionErrors: operands that do not broadcast are recorded errors naming the op.
func TestSelectionErrors(t *testing.T) {
	d := ops.CPU()
	b3, b4 := upload(t, d, 1, 2, 3), upload(t, d, 1, 2, 3, 4)
	defer b3.Release()
	defer b4.Release()
	for _, c := range []struct {
		name string
		f    func(tp *autograd.Tape) autograd.Var
		want string
	}{
		{"where", func(tp *autograd.Tape) autograd.Var {
			return tp.Where(tp.Const(b3, []int{3}), tp.Const(b4, []int{4}), tp.Const(b4, []int{4}))
		}, "autograd: where: shapes [3], [4] and [4] do not broadcast"},
		{"masked_fill", func(tp *autograd.Tape) autograd.Var {
			return tp.MaskedFill(tp.Const(b3, []int{3, 1}), tp.Const(b3, []int{3}), 0)
		}, "autograd: masked_fill: mask of shape [3] does not broadcast to the input's shape [3 1]"},
		{"masked_fill_invalid", func(tp *autograd.Tape) autograd.Var {
			return tp.MaskedFill(autograd.Var{}, tp.Const(b3, []int{3}), 0)
		}, "autograd: masked_fill: operand 0"},
	} {
		tp := autograd.NewTape(d)
		if y := c.f(tp); y.Valid() {
			t.Errorf("%s: a valid result", c.name)
		}
		if err := tp.Err(); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
		tp.Reset()
	}
}

// Pow with PyTorch's semantics: a negative base needs an integer exponent.
func ExampleTape_Pow() {
	d := ops.CPU()
	xb, _ := ops.FromFloat32(d, []float32{-2, 0, 0.5, 3})
	defer xb.Release()
	tp := autograd.NewTape(d)
	defer tp.Reset()
	x := tp.Leaf(xb, []int{4}, true)
	y := tp.Pow(x, 3)
	_ = tp.Backward(tp.Sum(y))
	v, _ := tp.Value(y).Float32s()
	g, _ := tp.Grad(x).Float32s()
	h, _ := tp.Value(tp.Pow(x, 0.5)).Float32s()
	fmt.Println(v, g, h)
	// Output: [-8 0 0.125 27] [12 0 0.75 27] [NaN 0 0.70710677 1.7320508]
}

// Where picks a or b by a float condition (nonzero is true); MaskedFill writes a value where a
// mask is true, here a causal mask's -Inf before a softmax.
func ExampleTape_Where() {
	d := ops.CPU()
	cb, _ := ops.FromFloat32(d, []float32{1, 0, 1})
	ab, _ := ops.FromFloat32(d, []float32{10, 20, 30})
	bb, _ := ops.FromFloat32(d, []float32{-1, -2, -3})
	mb, _ := ops.FromFloat32(d, []float32{0, 1, 0, 0})
	defer func() {
		for _, b := range []*ops.Buffer{cb, ab, bb, mb} {
			b.Release()
		}
	}()
	tp := autograd.NewTape(d)
	defer tp.Reset()
	y := tp.Where(tp.Const(cb, []int{3}), tp.Const(ab, []int{3}), tp.Const(bb, []int{3}))
	s := tp.MaskedFill(tp.Const(mb, []int{2, 2}), tp.Const(mb, []int{2, 2}), math.Inf(-1))
	v, _ := tp.Value(y).Float32s()
	w, _ := tp.Value(s).Float32s()
	fmt.Println(v, w)
	// Output: [10 -2 30] [0 -Inf 0 0]
}
