package autograd_test

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/ops"
)

// A gradCase is one op at one shape: the op on the tape, and a float64 reference of it.
type gradCase struct {
	name string
	in   [][]int                                                // shapes of the inputs (all require grad)
	gen  []func(r *rand.Rand) float64                           // input distribution per input (one for all; none: normal)
	op   func(tp *autograd.Tape, x []autograd.Var) autograd.Var // the op under test
	ref  func(x [][]float64) []float64                          // the op in float64 (on the input values)
	tol  float64                                                // relative tolerance of the VJP (0: 1e-3)
}

func normal(r *rand.Rand) float64   { return r.NormFloat64() }
func positive(r *rand.Rand) float64 { return 0.5 + 1.5*r.Float64() }

// awayFrom returns a normal distribution that avoids [k - 0.05, k + 0.05] for every kink k.
func awayFrom(kinks ...float64) func(r *rand.Rand) float64 {
	return func(r *rand.Rand) float64 {
		for {
			v := r.NormFloat64()
			if !slices.ContainsFunc(kinks, func(k float64) bool { return math.Abs(v-k) < 0.05 }) {
				return v
			}
		}
	}
}

// TestGradients checks every differentiable op against central finite differences of its
// float64 reference along random directions: for inputs x, directions d and a cotangent w,
// <VJP(w), d> must match w · (f(x + h d) - f(x - h d)) / 2h. The forward values are checked
// against the reference too.
func TestGradients(t *testing.T) {
	forDevices(t, func(t *testing.T, d *ops.Device) {
		for _, c := range gradCases() {
			t.Run(c.name, func(t *testing.T) { checkGrad(t, d, c) })
		}
	})
}

func checkGrad(t *testing.T, d *ops.Device, c gradCase) {
	h := fnv.New64a()
	h.Write([]byte(c.name))
	r := rand.New(rand.NewPCG(1, h.Sum64()))
	gen := func(k int) func(r *rand.Rand) float64 {
		switch {
		case len(c.gen) == 0:
			return normal
		case len(c.gen) == 1:
			return c.gen[0]
		}
		return c.gen[k]
	}
	randoms := func(n int, g func(r *rand.Rand) float64) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = float64(float32(g(r)))
		}
		return v
	}
	tp := autograd.NewTape(d)
	defer tp.Reset()
	xs := make([][]float64, len(c.in))
	vars := make([]autograd.Var, len(c.in))
	for k, shape := range c.in {
		xs[k] = randoms(numel(shape), gen(k))
		b := upload(t, d, xs[k]...)
		defer b.Release()
		vars[k] = tp.Leaf(b, shape, true)
	}
	y := c.op(tp, vars)
	if err := tp.Err(); err != nil {
		t.Fatal(err)
	}
	want := c.ref(xs)
	got := values(t, tp.Value(y))
	if len(got) != len(want) || numel(tp.Shape(y)) != len(got) {
		t.Fatalf("forward: %d values of shape %v, reference has %d", len(got), tp.Shape(y), len(want))
	}
	for i := range got {
		if !(math.Abs(got[i]-want[i]) <= 1e-4*(1+math.Abs(want[i]))) {
			t.Fatalf("forward[%d] = %v, reference %v", i, got[i], want[i])
		}
	}
	w := randoms(len(got), normal)
	wb := upload(t, d, w...)
	defer wb.Release()
	if err := tp.BackwardWith(y, wb); err != nil {
		t.Fatal(err)
	}
	g := make([][]float64, len(vars))
	for k, v := range vars {
		if g[k] = values(t, tp.Grad(v)); len(g[k]) != len(xs[k]) {
			t.Fatalf("gradient %d has %d elements, want %d", k, len(g[k]), len(xs[k]))
		}
	}
	tol := c.tol
	if tol == 0 {
		tol = 1e-3
	}
	const step = 1e-5
	for trial := range 3 {
		var lhs, mag float64
		plus, minus := make([][]float64, len(xs)), make([][]float64, len(xs))
		for k, x := range xs {
			dir := randoms(len(x), normal)
			plus[k], minus[k] = make([]float64, len(x)), make([]float64, len(x))
			for i := range x {
				plus[k][i], minus[k][i] = x[i]+step*dir[i], x[i]-step*dir[i]
				lhs += g[k][i] * dir[i]
				mag += math.Abs(g[k][i] * dir[i])
			}
		}
		fp, fm := c.ref(plus), c.ref(minus)
		var rhs float64
		for i := range w {
			rhs += w[i] * (fp[i] - fm[i]) / (2 * step)
		}
		if !(math.Abs(lhs-rhs) <= tol*(mag+math.Abs(rhs))+1e-7) {
			t.Errorf("direction %d: <VJP, d> = %.9g, finite differences %.9g (scale %.3g)", trial, lhs, rhs, mag)
		}
	}
}

// unaryRefs are the elementwise unary ops with their float64 references and input ranges.
var unaryRefs = []struct {
	name string
	op   func(tp *autograd.Tape, x autograd.Var) autograd.Var
	f    func(x float64) float64
	gen  func(r *rand.Rand) float64
}{
	{"abs", (*autograd.Tape).Abs, math.Abs, awayFrom(0)},
	{"sqrt", (*autograd.Tape).Sqrt, math.Sqrt, positive},
	{"relu", (*autograd.Tape).Relu, func(x float64) float64 { return math.Max(x, 0) }, awayFrom(0)},
	{"exp", (*autograd.Tape).Exp, math.Exp, normal},
	{"log", (*autograd.Tape).Log, math.Log, positive},
	{"inv", (*autograd.Tape).Inv, func(x float64) float64 { return 1 / x }, positive},
	{"sigmoid", (*autograd.Tape).Sigmoid, sigmoid, normal},
	{"tanh", (*autograd.Tape).Tanh, math.Tanh, normal},
	{"softplus", (*autograd.Tape).Softplus, softplus, normal},
	{"gelu", (*autograd.Tape).Gelu, func(x float64) float64 {
		return x * sigmoid(2*math.Sqrt(2/math.Pi)*(x+0.044715*x*x*x))
	}, normal},
	{"safe_log", func(tp *autograd.Tape, x autograd.Var) autograd.Var { return tp.SafeLog(x, 1e-6) },
		func(x float64) float64 { return math.Log(softplus(x) + 1e-6) }, normal},
	{"clamp", func(tp *autograd.Tape, x autograd.Var) autograd.Var { return tp.Clamp(x, -0.5, 0.75) },
		func(x float64) float64 { return math.Min(math.Max(x, -0.5), 0.75) }, awayFrom(-0.5, 0.75)},
	{"scale", func(tp *autograd.Tape, x autograd.Var) autograd.Var { return tp.Scale(x, -2.5) },
		func(x float64) float64 { return -2.5 * x }, normal},
	{"add_scalar", func(tp *autograd.Tape, x autograd.Var) autograd.Var { return tp.AddScalar(x, 1e-5) },
		func(x float64) float64 { return x + 1e-5 }, normal},
}

// binaryRefs are the elementwise binary ops.
var binaryRefs = []struct {
	name string
	op   func(tp *autograd.Tape, a, b autograd.Var) autograd.Var
	f    func(a, b float64) float64
	genB func(r *rand.Rand) float64
}{
	{"add", (*autograd.Tape).Add, func(a, b float64) float64 { return a + b }, normal},
	{"sub", (*autograd.Tape).Sub, func(a, b float64) float64 { return a - b }, normal},
	{"mul", (*autograd.Tape).Mul, func(a, b float64) float64 { return a * b }, normal},
	{"div", (*autograd.Tape).Div, func(a, b float64) float64 { return a / b }, positive},
	{"max", (*autograd.Tape).Max, math.Max, normal},
	{"min", (*autograd.Tape).Min, math.Min, normal},
}

func sigmoid(x float64) float64  { return 1 / (1 + math.Exp(-x)) }
func softplus(x float64) float64 { return math.Max(x, 0) + math.Log1p(math.Exp(-math.Abs(x))) }

// mapRef applies f elementwise.
func mapRef(x []float64, f func(float64) float64) []float64 {
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = f(v)
	}
	return y
}

// elementwiseShapes are the shapes the elementwise ops are checked at.
var elementwiseShapes = [][]int{{1}, {7}, {4, 3}, {2, 3, 5}}

func gradCases() []gradCase {
	var cs []gradCase
	add := func(c gradCase) {
		c.name = fmt.Sprintf("%s%v", c.name, c.in)
		cs = append(cs, c)
	}
	for _, u := range unaryRefs {
		for _, s := range elementwiseShapes {
			add(gradCase{name: u.name, in: [][]int{s}, gen: []func(*rand.Rand) float64{u.gen},
				op:  func(tp *autograd.Tape, x []autograd.Var) autograd.Var { return u.op(tp, x[0]) },
				ref: func(x [][]float64) []float64 { return mapRef(x[0], u.f) }})
		}
	}
	for _, b := range binaryRefs {
		for _, s := range elementwiseShapes {
			add(gradCase{name: b.name, in: [][]int{s, s}, gen: []func(*rand.Rand) float64{normal, b.genB},
				op: func(tp *autograd.Tape, x []autograd.Var) autograd.Var { return b.op(tp, x[0], x[1]) },
				ref: func(x [][]float64) []float64 {
					y := make([]float64, len(x[0]))
					for i := range y {
						y[i] = b.f(x[0][i], x[1][i])
					}
					return y
				}})
		}
		// Implicit broadcasting: one operand grows, the other, or both (to their common shape).
		for _, sh := range [][3][]int{
			{{4, 3}, {3}, {4, 3}}, {{1}, {2, 3}, {2, 3}}, {{}, {5}, {5}}, {{2, 1, 3}, {4, 1}, {2, 4, 3}},
			{{3, 1}, {1, 4}, {3, 4}},
		} {
			add(gradCase{name: b.name + "_broadcast", in: [][]int{sh[0], sh[1]}, gen: []func(*rand.Rand) float64{normal, b.genB},
				op: func(tp *autograd.Tape, x []autograd.Var) autograd.Var { return b.op(tp, x[0], x[1]) },
				ref: func(x [][]float64) []float64 {
					xa, xb := broadcastRef(x[0], sh[0], sh[2]), broadcastRef(x[1], sh[1], sh[2])
					return mapIdx(len(xa), func(i int) float64 { return b.f(xa[i], xb[i]) })
				}})
		}
	}
	// A DAG: x is used three times, y twice.
	add(gradCase{name: "dag", in: [][]int{{3, 2}, {3, 2}},
		op: func(tp *autograd.Tape, x []autograd.Var) autograd.Var {
			p := tp.Mul(x[0], x[1])
			return tp.Add(tp.Mul(p, x[0]), tp.Tanh(tp.Add(x[0], p)))
		},
		ref: func(x [][]float64) []float64 {
			return mapIdx(len(x[0]), func(i int) float64 {
				p := x[0][i] * x[1][i]
				return p*x[0][i] + math.Tanh(x[0][i]+p)
			})
		}})
	for _, s := range [][]int{{1}, {5}, {3, 4}, {2, 3, 4}} {
		add(gradCase{name: "sum", in: [][]int{s}, op: func(tp *autograd.Tape, x []autograd.Var) autograd.Var { return tp.Sum(x[0]) },
			ref: func(x [][]float64) []float64 { return []float64{sum(x[0])} }})
		add(gradCase{name: "mean", in: [][]int{s}, op: func(tp *autograd.Tape, x []autograd.Var) autograd.Var { return tp.Mean(x[0]) },
			ref: func(x [][]float64) []float64 { return []float64{sum(x[0]) / float64(len(x[0]))} }})
		for axis := range s {
			for _, mean := range []bool{false, true} {
				name := "reduce_sum"
				if mean {
					name = "reduce_mean"
				}
				add(gradCase{name: fmt.Sprintf("%s_axis%d", name, axis), in: [][]int{s},
					op: func(tp *autograd.Tape, x []autograd.Var) autograd.Var {
						if mean {
							return tp.ReduceMean(x[0], axis)
						}
						return tp.ReduceSum(x[0], axis)
					},
					ref: func(x [][]float64) []float64 { return reduceAxisRef(x[0], s, axis, mean) }})
			}
			// Random inputs have no ties: the maximum's gradient is one entry's.
			add(gradCase{name: fmt.Sprintf("reduce_max_axis%d", axis), in: [][]int{s},
				op:  func(tp *autograd.Tape, x []autograd.Var) autograd.Var { return tp.ReduceMax(x[0], axis) },
				ref: func(x [][]float64) []float64 { return reduceMaxRef(x[0], s, axis) }})
		}
	}
	for _, s := range [][]int{{1}, {6}, {3, 5}, {2, 3, 4}} {
		add(gradCase{name: "softmax", in: [][]int{s}, op: func(tp *autograd.Tape, x []autograd.Var) autograd.Var { return tp.Softmax(x[0]) },
			ref: func(x [][]float64) []float64 { return softmaxRef(x[0], s[len(s)-1], false) }})
		add(gradCase{name: "log_softmax", in: [][]int{s}, op: func(tp *autograd.Tape, x []autograd.Var) autograd.Var { return tp.LogSoftmax(x[0]) },
			ref: func(x [][]float64) []float64 { return softmaxRef(x[0], s[len(s)-1], true) }})
	}
	// Views: the op is followed by a multiplication so that the gradient flows through a copy.
	add(gradCase{name: "reshape", in: [][]int{{2, 6}, {3, 4}},
		op: func(tp *autograd.Tape, x []autograd.Var) autograd.Var { return tp.Mul(tp.Reshape(x[0], 3, 4), x[1]) },
		ref: func(x [][]float64) []float64 {
			return mapIdx(12, func(i int) float64 { return x[0][i] * x[1][i] })
		}})
	add(gradCase{name: "flatten", in: [][]int{{2, 3, 2}, {12}},
		op: func(tp *autograd.Tape, x []autograd.Var) autograd.Var { return tp.Mul(tp.Flatten(x[0]), x[1]) },
		ref: func(x [][]float64) []float64 {
			return mapIdx(12, func(i int) float64 { return x[0][i] * x[1][i] })
		}})
	for _, s := range [][]int{{1, 1}, {1, 5}, {4, 3}, {7, 9}} {
		add(gradCase{name: "transpose2d", in: [][]int{s}, op: func(tp *autograd.Tape, x []autograd.Var) autograd.Var { return tp.Transpose2d(x[0]) },
			ref: func(x [][]float64) []float64 { return permuteRef(x[0], s, []int{1, 0}) }})
	}
	for _, s := range [][]int{{1, 1, 1}, {2, 3, 4}, {3, 1, 5}} {
		for _, perm := range [][]int{{0, 1, 2}, {1, 0, 2}, {0, 2, 1}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}} {
			add(gradCase{name: fmt.Sprintf("permute%v", perm), in: [][]int{s},
				op:  func(tp *autograd.Tape, x []autograd.Var) autograd.Var { return tp.Permute(x[0], perm...) },
				ref: func(x [][]float64) []float64 { return permuteRef(x[0], s, perm) }})
		}
	}
	// Every permutation of a rank-4 shape with a size-1 axis: block moves, views and their mixes.
	for _, perm := range permutations(4) {
		s := []int{2, 1, 3, 2}
		add(gradCase{name: fmt.Sprintf("permute%v", perm), in: [][]int{s},
			op:  func(tp *autograd.Tape, x []autograd.Var) autograd.Var { return tp.Permute(x[0], perm...) },
			ref: func(x [][]float64) []float64 { return permuteRef(x[0], s, perm) }})
	}
	for _, s := range [][]int{{2, 3, 4, 5}, {3, 2}} {
		for depth := range len(s) - 1 {
			perm := []int{0, 1, 2, 3}[:len(s)]
			perm[depth], perm[depth+1] = perm[depth+1], perm[depth]
			add(gradCase{name: fmt.Sprintf("swap_adjacent%d", depth), in: [][]int{s},
				op:  func(tp *autograd.Tape, x []autograd.Var) autograd.Var { return tp.SwapAdjacent(x[0], depth) },
				ref: func(x [][]float64) []float64 { return permuteRef(x[0], s, perm) }})
		}
	}
	for _, bc := range []struct{ in, out []int }{
		{[]int{}, []int{3, 2}}, {[]int{1}, []int{4}}, {[]int{3}, []int{2, 3}}, {[]int{2, 1}, []int{2, 5}},
		{[]int{4, 1, 3}, []int{2, 4, 5, 3}}, {[]int{1, 3}, []int{1, 3}},
	} {
		add(gradCase{name: fmt.Sprintf("broadcast_to%v", bc.out), in: [][]int{bc.in},
			op:  func(tp *autograd.Tape, x []autograd.Var) autograd.Var { return tp.BroadcastTo(x[0], bc.out...) },
			ref: func(x [][]float64) []float64 { return broadcastRef(x[0], bc.in, bc.out) }})
	}
	add(gradCase{name: "broadcast_axes", in: [][]int{{3}},
		op: func(tp *autograd.Tape, x []autograd.Var) autograd.Var {
			return tp.BroadcastAxes(x[0], []int{3, 4}, []int{1, 0}) // (3) -> (3, 4): columns
		},
		ref: func(x [][]float64) []float64 { return mapIdx(12, func(i int) float64 { return x[0][i/4] }) }})
	// Cat, Stack and Narrow along every kind of axis (leading, inner, last, negative), with a
	// zero-size part.
	for _, c := range []struct {
		axis   int
		shapes [][]int
	}{
		{0, [][]int{{2, 3}, {1, 3}, {3, 3}}}, {1, [][]int{{2, 1, 4}, {2, 3, 4}}}, {-1, [][]int{{2, 3}, {2, 2}}},
		{2, [][]int{{2, 2, 1}, {2, 2, 3}, {2, 2, 2}}}, {1, [][]int{{2, 0}, {2, 3}}}, {0, [][]int{{4}, {2}}},
	} {
		add(gradCase{name: fmt.Sprintf("cat%d", c.axis), in: c.shapes,
			op:  func(tp *autograd.Tape, x []autograd.Var) autograd.Var { return tp.Cat(c.axis, x...) },
			ref: func(x [][]float64) []float64 { return catRef(x, c.shapes, (c.axis+len(c.shapes[0]))%len(c.shapes[0])) }})
	}
	// The same value joined twice: its gradient is the sum of its two slices'.
	add(gradCase{name: "cat_repeated", in: [][]int{{2, 2}, {2, 1}},
		op: func(tp *autograd.Tape, x []autograd.Var) autograd.Var { return tp.Cat(1, x[0], x[1], x[0]) },
		ref: func(x [][]float64) []float64 {
			return catRef([][]float64{x[0], x[1], x[0]}, [][]int{{2, 2}, {2, 1}, {2, 2}}, 1)
		}})
	for _, c := range []struct{ axis, n int }{{0, 3}, {1, 2}, {-1, 2}, {2, 3}} {
		shapes := slices.Repeat([][]int{{2, 3}}, c.n)
		add(gradCase{name: fmt.Sprintf("stack%d", c.axis), in: shapes,
			op: func(tp *autograd.Tape, x []autograd.Var) autograd.Var { return tp.Stack(c.axis, x...) },
			ref: func(x [][]float64) []float64 {
				k := (c.axis + 3) % 3
				grown := make([][]int, c.n)
				for i := range grown {
					grown[i] = slices.Insert([]int{2, 3}, k, 1)
				}
				return catRef(x, grown, k)
			}})
	}
	for _, c := range []struct {
		shape               []int
		axis, start, length int
	}{{[]int{4, 5}, 1, 1, 3}, {[]int{3, 4, 2}, 1, 2, 2}, {[]int{5}, 0, 1, 3}, {[]int{2, 3, 4}, -1, 0, 1}, {[]int{3, 2}, 0, 2, 1}} {
		add(gradCase{name: fmt.Sprintf("narrow%d_%d_%d", c.axis, c.start, c.length), in: [][]int{c.shape},
			op: func(tp *autograd.Tape, x []autograd.Var) autograd.Var {
				return tp.Narrow(x[0], c.axis, c.start, c.length)
			},
			ref: func(x [][]float64) []float64 {
				k := (c.axis + len(c.shape)) % len(c.shape)
				out := slices.Clone(c.shape)
				out[k] = c.length
				return mapIdx(numel(out), func(i int) float64 {
					co := coords(i, out)
					co[k] += c.start
					return x[0][flat(co, c.shape)]
				})
			}})
	}
	// MatMul beyond two matrices: vectors, folded rows, broadcast batch axes.
	for _, sh := range [][2][]int{
		{{3}, {3}}, {{3}, {3, 2}}, {{2, 3}, {3}}, {{2, 3, 4}, {4, 5}}, {{3, 4}, {2, 4, 5}},
		{{2, 1, 3, 4}, {3, 4, 2}}, {{2, 3, 4}, {4}}, {{4}, {2, 4, 3}}, {{2, 2, 3}, {2, 3, 2}},
	} {
		add(gradCase{name: "matmul", in: [][]int{sh[0], sh[1]},
			op:  func(tp *autograd.Tape, x []autograd.Var) autograd.Var { return tp.MatMul(x[0], x[1]) },
			ref: func(x [][]float64) []float64 { return matmulRef(x[0], x[1], sh[0], sh[1]) }})
	}
	for _, mnp := range [][3]int{{1, 1, 1}, {2, 3, 4}, {5, 1, 3}, {4, 7, 2}} {
		m, n, p := mnp[0], mnp[1], mnp[2]
		add(gradCase{name: "matmul", in: [][]int{{m, n}, {n, p}},
			op:  func(tp *autograd.Tape, x []autograd.Var) autograd.Var { return tp.MatMul(x[0], x[1]) },
			ref: func(x [][]float64) []float64 { return bmmRef(x[0], x[1], 1, m, n, p) }})
		add(gradCase{name: "bmm", in: [][]int{{3, m, n}, {3, n, p}},
			op:  func(tp *autograd.Tape, x []autograd.Var) autograd.Var { return tp.Bmm(x[0], x[1]) },
			ref: func(x [][]float64) []float64 { return bmmRef(x[0], x[1], 3, m, n, p) }})
		for v := range 4 {
			ta, tb := v >= 2, v%2 == 1
			sa, sb := []int{2, m, n}, []int{2, n, p}
			if ta {
				sa = []int{2, n, m}
			}
			if tb {
				sb = []int{2, p, n}
			}
			add(gradCase{name: fmt.Sprintf("bmm_with_transpose_%v_%v", ta, tb), in: [][]int{sa, sb},
				op: func(tp *autograd.Tape, x []autograd.Var) autograd.Var { return tp.BmmWithTranspose(x[0], x[1], ta, tb) },
				ref: func(x [][]float64) []float64 {
					a, b := x[0], x[1]
					if ta {
						a = transposeBatch(a, 2, n, m)
					}
					if tb {
						b = transposeBatch(b, 2, p, n)
					}
					return bmmRef(a, b, 2, m, n, p)
				}})
		}
	}
	// (batch or 0 for a vector, in, out); batch 6 as (2, 3) leading axes
	for _, dims := range [][3]int{{0, 1, 1}, {0, 3, 4}, {1, 3, 2}, {5, 4, 3}, {6, 4, 3}} {
		batch, in, out := dims[0], dims[1], dims[2]
		xs := []int{in}
		switch {
		case batch == 6:
			xs = []int{2, 3, in}
		case batch > 0:
			xs = []int{batch, in}
		}
		add(gradCase{name: "linear", in: [][]int{xs, {out, in}, {out}},
			op: func(tp *autograd.Tape, x []autograd.Var) autograd.Var { return tp.Linear(x[0], x[1], x[2]) },
			ref: func(x [][]float64) []float64 {
				rows := max(batch, 1)
				return mapIdx(rows*out, func(i int) float64 {
					r, o := i/out, i%out
					s := x[2][o]
					for k := range in {
						s += x[1][o*in+k] * x[0][r*in+k]
					}
					return s
				})
			}})
		add(gradCase{name: "linear_nobias", in: [][]int{xs, {out, in}},
			op: func(tp *autograd.Tape, x []autograd.Var) autograd.Var { return tp.Linear(x[0], x[1], autograd.Var{}) },
			ref: func(x [][]float64) []float64 {
				return mapIdx(max(batch, 1)*out, func(i int) float64 {
					r, o := i/out, i%out
					s := 0.0
					for k := range in {
						s += x[1][o*in+k] * x[0][r*in+k]
					}
					return s
				})
			}})
	}
	for _, s := range [][]int{{1}, {4, 3}, {2, 3, 2}} {
		add(gradCase{name: "mse_loss", in: [][]int{s, s},
			op: func(tp *autograd.Tape, x []autograd.Var) autograd.Var { return tp.MSELoss(x[0], x[1]) },
			ref: func(x [][]float64) []float64 {
				var l float64
				for i := range x[0] {
					l += (x[0][i] - x[1][i]) * (x[0][i] - x[1][i])
				}
				return []float64{l / float64(len(x[0]))}
			}})
	}
	for _, ce := range []struct {
		shape  []int
		labels []int
	}{{[]int{1, 1}, []int{0}}, {[]int{5}, []int{3}}, {[]int{4, 3}, []int{2, 0, 1, 2}}, {[]int{2, 2, 5}, []int{4, 0, 0, 3}}} {
		add(gradCase{name: fmt.Sprintf("cross_entropy%v", ce.labels), in: [][]int{ce.shape},
			op: func(tp *autograd.Tape, x []autograd.Var) autograd.Var { return tp.CrossEntropy(x[0], ce.labels) },
			ref: func(x [][]float64) []float64 {
				c := ce.shape[len(ce.shape)-1]
				ls := softmaxRef(x[0], c, true)
				var l float64
				for i, lab := range ce.labels {
					l -= ls[i*c+lab]
				}
				return []float64{l / float64(len(ce.labels))}
			}})
	}
	// Label smoothing, with and without ignored rows (label -1).
	for _, ce := range []struct {
		shape  []int
		labels []int
		eps    float64
	}{{[]int{4, 3}, []int{2, 0, 1, 2}, 0.1}, {[]int{2, 2, 5}, []int{4, -1, 0, 3}, 0.3}, {[]int{3, 4}, []int{1, 2, 3}, 1}} {
		add(gradCase{name: fmt.Sprintf("cross_entropy_smooth%v_%v", ce.labels, ce.eps), in: [][]int{ce.shape},
			op: func(tp *autograd.Tape, x []autograd.Var) autograd.Var {
				return tp.CrossEntropyWith(x[0], ce.labels, autograd.CrossEntropyOptions{Ignore: true, IgnoreIndex: -1, LabelSmoothing: ce.eps})
			},
			ref: func(x [][]float64) []float64 {
				c := ce.shape[len(ce.shape)-1]
				ls := softmaxRef(x[0], c, true)
				var l float64
				k := 0
				for i, lab := range ce.labels {
					if lab == -1 {
						continue
					}
					k++
					l -= (1 - ce.eps) * ls[i*c+lab]
					for j := range c {
						l -= ce.eps / float64(c) * ls[i*c+j]
					}
				}
				return []float64{l / float64(k)}
			}})
	}
	for _, s := range [][]int{{1}, {6}, {3, 2}} {
		for _, sl := range [][2]int{{0, 1}, {0, s[0]}, {s[0] - 1, 1}} {
			start, length := sl[0], sl[1]
			add(gradCase{name: fmt.Sprintf("slice%v", sl), in: [][]int{s},
				op: func(tp *autograd.Tape, x []autograd.Var) autograd.Var { return tp.Slice(x[0], start, length) },
				ref: func(x [][]float64) []float64 {
					c := numel(s) / s[0]
					return slices.Clone(x[0][start*c : (start+length)*c])
				}})
		}
		other := slices.Clone(s)
		other[0] = 2
		add(gradCase{name: "concat", in: [][]int{s, other},
			op:  func(tp *autograd.Tape, x []autograd.Var) autograd.Var { return tp.Concat(x[0], x[1]) },
			ref: func(x [][]float64) []float64 { return append(slices.Clone(x[0]), x[1]...) }})
	}
	for _, gs := range []struct {
		shape []int
		idx   []int
	}{{[]int{1}, []int{0}}, {[]int{5}, []int{4, 0, 4, 2}}, {[]int{4, 3}, []int{1, 1, 3}}, {[]int{3, 2, 2}, []int{2, 0, 7}}} {
		rows, cols := gs.shape[0], numel(gs.shape[1:])
		vs := append([]int{len(gs.idx)}, gs.shape[1:]...)
		add(gradCase{name: fmt.Sprintf("gather%v", gs.idx), in: [][]int{gs.shape},
			op: func(tp *autograd.Tape, x []autograd.Var) autograd.Var { return tp.Gather(x[0], gs.idx) },
			ref: func(x [][]float64) []float64 {
				return mapIdx(len(gs.idx)*cols, func(i int) float64 {
					if r := gs.idx[i/cols]; r < rows { // out of range reads zeros
						return x[0][r*cols+i%cols]
					}
					return 0
				})
			}})
		add(gradCase{name: fmt.Sprintf("scatter_add%v", gs.idx), in: [][]int{gs.shape, vs},
			op: func(tp *autograd.Tape, x []autograd.Var) autograd.Var { return tp.ScatterAdd(x[0], x[1], gs.idx) },
			ref: func(x [][]float64) []float64 {
				y := slices.Clone(x[0])
				for j, r := range gs.idx {
					for c := range cols {
						if r < rows { // out of range is ignored
							y[r*cols+c] += x[1][j*cols+c]
						}
					}
				}
				return y
			}})
	}
	for _, s := range [][]int{{1}, {10}, {3, 4}} {
		const p, key = 0.3, 0x5eed
		n := numel(s)
		mask := bernoulli(n, 1-p, key)
		add(gradCase{name: "dropout", in: [][]int{s},
			op: func(tp *autograd.Tape, x []autograd.Var) autograd.Var { return tp.Dropout(x[0], p, key) },
			ref: func(x [][]float64) []float64 {
				return mapIdx(n, func(i int) float64 { return x[0][i] * mask[i] / (1 - p) })
			}})
	}
	for _, s := range [][]int{{1, 1}, {5}, {3, 4}, {2, 3, 6}} {
		cols := s[len(s)-1]
		add(gradCase{name: "layer_norm", in: [][]int{s, {cols}, {cols}},
			op:  func(tp *autograd.Tape, x []autograd.Var) autograd.Var { return tp.LayerNorm(x[0], x[1], x[2]) },
			ref: func(x [][]float64) []float64 { return layerNormRef(x[0], x[1], x[2], cols, ops.LayerNormEps) }})
	}
	add(gradCase{name: "layer_norm_eps", in: [][]int{{3, 4}, {4}, {4}},
		op:  func(tp *autograd.Tape, x []autograd.Var) autograd.Var { return tp.LayerNormEps(x[0], x[1], x[2], 0.5) },
		ref: func(x [][]float64) []float64 { return layerNormRef(x[0], x[1], x[2], 4, 0.5) }})
	for _, s := range [][]int{{1, 1, 1}, {3, 2, 5}, {2, 7}, {4, 3, 2, 2}} {
		c := s[0]
		hw := size(s) / c
		add(gradCase{name: "batchnorm_channel_first", in: [][]int{s, {c}, {c}},
			op: func(tp *autograd.Tape, x []autograd.Var) autograd.Var {
				return tp.BatchNormChannelFirst(x[0], x[1], x[2])
			},
			ref: func(x [][]float64) []float64 {
				// Layer norm of the (C, H*W) view with unit scale, then the channel's scale.
				y := layerNormRef(x[0], slices.Repeat([]float64{1}, hw), make([]float64, hw), hw, ops.LayerNormEps)
				for i := range y {
					y[i] = y[i]*x[1][i/hw] + x[2][i/hw]
				}
				return y
			}})
	}
	// Multi-head attention, (batch 2, n 3, dModel 4), 2 heads of width 2, unmasked and causal.
	for _, causal := range []bool{false, true} {
		const b, n, dm, h = 2, 3, 4, 2
		var mask []bool
		if causal {
			for i := range n * n {
				mask = append(mask, i%n <= i/n)
			}
		}
		add(gradCase{name: fmt.Sprintf("multi_head_attention_causal_%v", causal), in: [][]int{{b, n, dm}, {dm, dm}, {dm, dm}, {dm, dm}, {dm, dm}},
			op: func(tp *autograd.Tape, x []autograd.Var) autograd.Var {
				return tp.MultiHeadAttention(x[0], x[1], x[2], x[3], x[4], h, mask)
			},
			ref: func(x [][]float64) []float64 { return mhaRef(x[0], x[1], x[2], x[3], x[4], b, n, dm, h, mask) }})
	}
	// nn.BatchNorm2d's training-mode output for a batch (N, C, H, W), by the recipe of
	// BatchNormChannelFirst's doc.
	add(gradCase{name: "batchnorm2d_recipe", in: [][]int{{2, 3, 2, 2}, {3}, {3}},
		op: func(tp *autograd.Tape, x []autograd.Var) autograd.Var {
			return tp.Permute(tp.BatchNormChannelFirstEps(tp.Permute(x[0], 1, 0, 2, 3), x[1], x[2], 1e-5), 1, 0, 2, 3)
		},
		ref: func(x [][]float64) []float64 {
			const n, c, hw = 2, 3, 4
			y := make([]float64, n*c*hw)
			for ch := range c {
				var mean, sq float64
				for b := range n {
					for i := range hw {
						mean += x[0][(b*c+ch)*hw+i] / (n * hw)
					}
				}
				for b := range n {
					for i := range hw {
						d := x[0][(b*c+ch)*hw+i] - mean
						sq += d * d / (n * hw)
					}
				}
				for b := range n {
					for i := range hw {
						j := (b*c+ch)*hw + i
						y[j] = (x[0][j]-mean)/math.Sqrt(sq+1e-5)*x[1][ch] + x[2][ch]
					}
				}
			}
			return y
		}})
	return cs
}

func size(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

func mapIdx(n int, f func(i int) float64) []float64 {
	y := make([]float64, n)
	for i := range y {
		y[i] = f(i)
	}
	return y
}

func sum(x []float64) float64 {
	var s float64
	for _, v := range x {
		s += v
	}
	return s
}

func reduceAxisRef(x []float64, shape []int, axis int, mean bool) []float64 {
	out := slices.Delete(slices.Clone(shape), axis, axis+1)
	y := make([]float64, numel(out))
	for i, v := range x {
		c := coords(i, shape)
		y[flat(slices.Delete(c, axis, axis+1), out)] += v
	}
	if mean {
		for i := range y {
			y[i] /= float64(shape[axis])
		}
	}
	return y
}

// reduceMaxRef is the maximum of x (of shape) along axis.
func reduceMaxRef(x []float64, shape []int, axis int) []float64 {
	out := slices.Delete(slices.Clone(shape), axis, axis+1)
	y := make([]float64, numel(out))
	for i := range y {
		y[i] = math.Inf(-1)
	}
	for i, v := range x {
		c := coords(i, shape)
		k := flat(slices.Delete(c, axis, axis+1), out)
		y[k] = max(y[k], v)
	}
	return y
}

// softmaxRef is the (log-)softmax of each row of cols elements.
func softmaxRef(x []float64, cols int, log bool) []float64 {
	y := make([]float64, len(x))
	for r := 0; r < len(x); r += cols {
		row := x[r : r+cols]
		m := slices.Max(row)
		var s float64
		for _, v := range row {
			s += math.Exp(v - m)
		}
		for j, v := range row {
			if log {
				y[r+j] = v - m - math.Log(s)
			} else {
				y[r+j] = math.Exp(v-m) / s
			}
		}
	}
	return y
}

// mhaRef is MultiHeadAttention in float64: x (b, n, dm), the projections (dm, dm), h heads.
func mhaRef(x, wq, wk, wv, wo []float64, b, n, dm, h int, mask []bool) []float64 {
	proj := func(w []float64) []float64 { return bmmRef(x, w, 1, b*n, dm, dm) } // (b·n, dm)·(dm, dm)
	q, k, v := proj(wq), proj(wk), proj(wv)
	d := dm / h
	att := make([]float64, b*n*dm) // heads concatenated, (b·n, dm)
	for s := range b {
		for hh := range h {
			for i := range n {
				scores := make([]float64, n)
				for j := range n {
					for c := range d {
						scores[j] += q[(s*n+i)*dm+hh*d+c] * k[(s*n+j)*dm+hh*d+c]
					}
					scores[j] /= math.Sqrt(float64(d))
					if mask != nil && !mask[i*n+j] {
						scores[j] = -1000
					}
				}
				p := softmaxRef(scores, n, false)
				for j := range n {
					for c := range d {
						att[(s*n+i)*dm+hh*d+c] += p[j] * v[(s*n+j)*dm+hh*d+c]
					}
				}
			}
		}
	}
	return bmmRef(att, wo, 1, b*n, dm, dm)
}

// permutations returns every permutation of 0..n-1.
func permutations(n int) [][]int {
	if n == 0 {
		return [][]int{{}}
	}
	var out [][]int
	for _, p := range permutations(n - 1) {
		for i := 0; i <= len(p); i++ {
			out = append(out, slices.Concat(p[:i], []int{n - 1}, p[i:]))
		}
	}
	return out
}

// permuteRef returns x (of shape) with axis j of the result being axis perm[j] of x.
func permuteRef(x []float64, shape, perm []int) []float64 {
	out := make([]int, len(perm))
	for j, p := range perm {
		out[j] = shape[p]
	}
	y := make([]float64, len(x))
	src := make([]int, len(shape))
	for i := range y {
		c := coords(i, out)
		for j, p := range perm {
			src[p] = c[j]
		}
		y[i] = x[flat(src, shape)]
	}
	return y
}

// broadcastRef broadcasts x from in to out by NumPy's rule.
func broadcastRef(x []float64, in, out []int) []float64 {
	lead := len(out) - len(in)
	return mapIdx(numel(out), func(i int) float64 {
		c := coords(i, out)[lead:]
		for k := range in {
			if in[k] == 1 {
				c[k] = 0
			}
		}
		return x[flat(c, in)]
	})
}

// catRef joins xs (of shapes) along axis k.
func catRef(xs [][]float64, shapes [][]int, k int) []float64 {
	out := slices.Clone(shapes[0])
	for _, s := range shapes[1:] {
		out[k] += s[k]
	}
	return mapIdx(numel(out), func(i int) float64 {
		c := coords(i, out)
		for j, s := range shapes {
			if c[k] < s[k] {
				return xs[j][flat(c, s)]
			}
			c[k] -= s[k]
		}
		panic("unreachable")
	})
}

// matmulRef is torch.matmul of a (shape sa) and b (shape sb), both of rank >= 1: vectors become
// a row or a column, and the batch axes broadcast.
func matmulRef(a, b []float64, sa, sb []int) []float64 {
	if len(sa) == 1 {
		sa = []int{1, sa[0]}
	}
	if len(sb) == 1 {
		sb = []int{sb[0], 1}
	}
	ba, bb := sa[:len(sa)-2], sb[:len(sb)-2]
	batch := slices.Clone(ba)
	if len(bb) > len(ba) {
		batch = slices.Clone(bb)
	}
	for j := range batch {
		ja, jb := j-len(batch)+len(ba), j-len(batch)+len(bb)
		if ja >= 0 && ba[ja] != 1 {
			batch[j] = ba[ja]
		} else if jb >= 0 {
			batch[j] = bb[jb]
		}
	}
	m, n, p := sa[len(sa)-2], sa[len(sa)-1], sb[len(sb)-1]
	a = broadcastRef(a, sa, append(slices.Clone(batch), m, n))
	b = broadcastRef(b, sb, append(slices.Clone(batch), n, p))
	return bmmRef(a, b, numel(batch), m, n, p)
}

func bmmRef(a, b []float64, batch, m, n, p int) []float64 {
	return mapIdx(batch*m*p, func(i int) float64 {
		t, r, c := i/(m*p), i/p%m, i%p
		var s float64
		for k := range n {
			s += a[t*m*n+r*n+k] * b[t*n*p+k*p+c]
		}
		return s
	})
}

// transposeBatch returns the batch (r, c) matrices of x transposed to (c, r).
func transposeBatch(x []float64, batch, r, c int) []float64 {
	return mapIdx(batch*r*c, func(i int) float64 {
		t, j, k := i/(r*c), i/r%c, i%r // element (j, k) of the (c, r) result
		return x[t*r*c+k*c+j]
	})
}

func layerNormRef(x, gamma, beta []float64, cols int, eps float64) []float64 {
	y := make([]float64, len(x))
	for r := 0; r < len(x); r += cols {
		row := x[r : r+cols]
		mean := sum(row) / float64(cols)
		var v float64
		for _, e := range row {
			v += (e - mean) * (e - mean)
		}
		sd := math.Sqrt(v/float64(cols) + eps)
		for j, e := range row {
			y[r+j] = (e-mean)/sd*gamma[j] + beta[j]
		}
	}
	return y
}

// bernoulli is the dropout mask of the tape (ops.BernoulliMask, the same on every device).
func bernoulli(n int, keep float64, key uint64) []float64 {
	b, err := ops.BernoulliMask(ops.CPU(), n, keep, key)
	if err != nil {
		panic(err)
	}
	defer b.Release()
	v, err := b.Float64s()
	if err != nil {
		panic(err)
	}
	return v
}
