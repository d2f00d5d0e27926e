package autograd_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/ops"
)

// mulExp is a * e^b written as a Function, with e^b saved for the backward pass
// (da = g e^b, db = g a e^b). saveInputs also lists both inputs and the result among saved, which
// the tape must not release.
func mulExp(saveInputs bool) autograd.Function {
	return autograd.Function{
		Name: "mul_exp",
		Forward: func(in []*ops.Buffer, shapes [][]int) (*ops.Buffer, []int, []*ops.Buffer, error) {
			if len(in) != 2 {
				return nil, nil, nil, errors.New("want two inputs")
			}
			e, err := ops.Exp(in[1])
			if err != nil {
				return nil, nil, nil, err
			}
			y, err := ops.Mul(in[0], e)
			if err != nil {
				e.Release()
				return nil, nil, nil, err
			}
			saved := []*ops.Buffer{e}
			if saveInputs {
				saved = append(saved, in[0], y, in[1], e, nil)
			}
			return y, shapes[0], saved, nil
		},
		Backward: func(g *ops.Buffer, in, saved []*ops.Buffer, need []bool) ([]*ops.Buffer, error) {
			e := saved[0]
			grads := make([]*ops.Buffer, 2)
			var err error
			if need[0] {
				if grads[0], err = ops.Mul(g, e); err != nil {
					return grads, err
				}
			}
			if need[1] {
				ge, err := ops.Mul(g, e)
				if err != nil {
					return grads, err
				}
				grads[1], err = ops.Mul(ge, in[0])
				ge.Release()
				if err != nil {
					return grads, err
				}
			}
			return grads, nil
		},
	}
}

func TestFunctionGradient(t *testing.T) {
	forDevices(t, func(t *testing.T, d *ops.Device) {
		for _, save := range []bool{false, true} {
			checkGrad(t, d, gradCase{name: "mul_exp", in: [][]int{{3, 5}, {3, 5}},
				op: func(tp *autograd.Tape, x []autograd.Var) autograd.Var { return tp.Apply(mulExp(save), x[0], x[1]) },
				ref: func(x [][]float64) []float64 {
					y := make([]float64, len(x[0]))
					for i := range y {
						y[i] = x[0][i] * math.Exp(x[1][i])
					}
					return y
				}})
		}
	})
}

// TestFunctionOwnership checks that Apply releases exactly what it owns: the fresh saved buffers
// after the backward pass or at Reset, never an input or the result twice, and everything
// Forward made when it or Apply's checks fail (forDevices checks the live bytes).
func TestFunctionOwnership(t *testing.T) {
	forDevices(t, func(t *testing.T, d *ops.Device) {
		r := rand.New(rand.NewPCG(3, 4))
		vals := make([]float64, 6)
		for i := range vals {
			vals[i] = r.NormFloat64()
		}
		a, b := upload(t, d, vals...), upload(t, d, vals...)
		defer a.Release()
		defer b.Release()
		tp := autograd.NewTape(d)
		defer tp.Reset()

		// Saved inputs, result and duplicates; a pass that does not reach the node; Reset.
		pa, pb, other := tp.Leaf(a, []int{6}, true), tp.Leaf(b, []int{2, 3}, false), tp.Leaf(a, []int{6}, true)
		y := tp.Apply(mulExp(true), pa, pb)
		loss := tp.Sum(tp.Mul(other, other))
		if err := tp.BackwardParams(loss, other); err != nil {
			t.Fatal(err)
		}
		if got := tp.Shape(y); len(got) != 1 || got[0] != 6 {
			t.Errorf("result shape %v, want [6] (Forward's)", got)
		}
		tp.Reset()
		if a.Err() != nil || b.Err() != nil {
			t.Fatalf("an input was released: %v, %v", a.Err(), b.Err())
		}

		// Under NoGrad a nil Backward is fine.
		tp.NoGrad(func() {
			f := mulExp(false)
			f.Backward = nil
			if tp.Apply(f, tp.Leaf(a, []int{6}, true), tp.Const(b, []int{6})); tp.Err() != nil {
				t.Errorf("NoGrad with a nil Backward: %v", tp.Err())
			}
		})
		tp.Reset()

		fails := []struct {
			name string
			f    func() autograd.Function
			want string
		}{
			{"nil backward", func() autograd.Function { f := mulExp(false); f.Backward = nil; return f }, "Backward is nil"},
			{"nil forward", func() autograd.Function { return autograd.Function{Name: "x"} }, "Forward is nil"},
			{"forward error", func() autograd.Function {
				f := mulExp(false)
				f.Forward = func(in []*ops.Buffer, _ [][]int) (*ops.Buffer, []int, []*ops.Buffer, error) {
					return nil, nil, nil, errors.New("boom")
				}
				return f
			}, "boom"},
			{"input as result", func() autograd.Function {
				f := mulExp(false)
				f.Forward = func(in []*ops.Buffer, s [][]int) (*ops.Buffer, []int, []*ops.Buffer, error) {
					e, _ := ops.Exp(in[0])
					return in[0], s[0], []*ops.Buffer{e}, nil
				}
				return f
			}, "input's buffer"},
			{"wrong shape", func() autograd.Function {
				f := mulExp(false)
				inner := f.Forward
				f.Forward = func(in []*ops.Buffer, s [][]int) (*ops.Buffer, []int, []*ops.Buffer, error) {
					y, _, saved, err := inner(in, s)
					return y, []int{7}, saved, err
				}
				return f
			}, "6 elements for shape [7]"},
			{"backward error", func() autograd.Function {
				f := mulExp(false)
				f.Backward = func(g *ops.Buffer, in, saved []*ops.Buffer, need []bool) ([]*ops.Buffer, error) {
					c, _ := ops.Copy(g)
					return []*ops.Buffer{c, nil}, errors.New("bang")
				}
				return f
			}, "bang"},
			{"backward count", func() autograd.Function {
				f := mulExp(false)
				f.Backward = func(g *ops.Buffer, in, saved []*ops.Buffer, need []bool) ([]*ops.Buffer, error) {
					c, _ := ops.Copy(g)
					return []*ops.Buffer{c}, nil
				}
				return f
			}, "1 gradients for 2 parents"},
			{"backward length", func() autograd.Function {
				f := mulExp(false)
				f.Backward = func(g *ops.Buffer, in, saved []*ops.Buffer, need []bool) ([]*ops.Buffer, error) {
					c, _ := ops.Zeros(d, 5)
					return []*ops.Buffer{c, nil}, nil
				}
				return f
			}, "gradient of 5 elements"},
		}
		for _, c := range fails {
			y := tp.Apply(c.f(), tp.Leaf(a, []int{6}, true), tp.Leaf(b, []int{6}, true))
			err := tp.Err()
			if err == nil {
				err = tp.Backward(tp.Sum(y))
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
			}
			tp.Reset()
		}
		if tp.Apply(mulExp(false)); tp.Err() == nil {
			t.Error("Apply with no inputs: no error")
		}
	})
}

// TestMultiHeadAttentionErrors: shapes that do not fit are errors naming what is wrong.
func TestMultiHeadAttentionErrors(t *testing.T) {
	d := ops.CPU()
	for _, c := range []struct {
		x, wq, wo []int
		heads     int
		mask      []bool
		want      string
	}{
		{[]int{4}, []int{4, 4}, []int{4, 4}, 2, nil, "input of shape [4] is not (..., n, dModel)"},
		{[]int{2, 4}, []int{4, 6}, []int{6, 4}, 4, nil, "does not split into 4 heads"},
		{[]int{2, 4}, []int{4, 4}, []int{4, 4}, 0, nil, "heads 0 must be positive"},
		{[]int{2, 4}, []int{4, 4}, []int{4, 3}, 2, nil, "wo has shape [4 3], want [4 4]"},
		{[]int{2, 4}, []int{4, 4}, []int{4, 4}, 2, []bool{true}, "mask of 1 entries for 2 positions (want 4)"},
	} {
		tp := autograd.NewTape(d)
		leaf := func(shape []int) autograd.Var {
			b, err := ops.Zeros(d, numel(shape))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { b.Release() })
			return tp.Leaf(b, shape, true)
		}
		w := leaf(c.wq)
		tp.MultiHeadAttention(leaf(c.x), w, w, w, leaf(c.wo), c.heads, c.mask)
		if err := tp.Err(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want one containing %q", err, c.want)
		}
		tp.Reset()
	}
}

// TestFunctionBorrowedGradients: a Backward may return the cotangent, an input, a saved buffer,
// the result or one buffer twice, as PyTorch allows; the tape copies them, so the gradients are
// right, the borrowed buffers stay live, and nothing leaks (forDevices checks live bytes). On an
// error only the fresh gradients are released.
func TestFunctionBorrowedGradients(t *testing.T) {
	forDevices(t, func(t *testing.T, d *ops.Device) {
		xb := upload(t, d, 1, 2, 3)
		defer xb.Release()
		pass := func(pick func(g *ops.Buffer, in, saved []*ops.Buffer) []*ops.Buffer) autograd.Function {
			return autograd.Function{Name: "pass",
				Forward: func(in []*ops.Buffer, s [][]int) (*ops.Buffer, []int, []*ops.Buffer, error) {
					y, err := ops.Copy(in[0])
					if err != nil {
						return nil, nil, nil, err
					}
					keep, err := ops.Copy(in[1])
					return y, s[0], []*ops.Buffer{keep}, err
				},
				Backward: func(g *ops.Buffer, in, saved []*ops.Buffer, need []bool) ([]*ops.Buffer, error) {
					return pick(g, in, saved), nil
				}}
		}
		ones := upload(t, d, 1, 1, 1)
		defer ones.Release()
		for _, c := range []struct {
			name   string
			pick   func(g *ops.Buffer, in, saved []*ops.Buffer) []*ops.Buffer
			ga, gb []float64 // gradients of a = x*x and of the second input b = x
		}{
			{"cotangent", func(g *ops.Buffer, _, _ []*ops.Buffer) []*ops.Buffer { return []*ops.Buffer{g, nil} }, []float64{2, 4, 6}, []float64{0, 0, 0}},
			{"input", func(_ *ops.Buffer, in, _ []*ops.Buffer) []*ops.Buffer { return []*ops.Buffer{in[1], in[1]} }, []float64{2, 4, 6}, []float64{1, 1, 1}},
			{"saved", func(_ *ops.Buffer, _, saved []*ops.Buffer) []*ops.Buffer { return []*ops.Buffer{saved[0], saved[0]} }, []float64{2, 4, 6}, []float64{1, 1, 1}},
		} {
			tp := autograd.NewTape(d)
			x := tp.Leaf(xb, []int{3}, true)
			b := tp.Leaf(ones, []int{3}, true)
			y := tp.Apply(pass(c.pick), tp.Mul(x, x), b)
			if err := tp.Backward(tp.Sum(y)); err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			// x gets 2x (through a = x*x); b gets c.gb.
			if got := values(t, tp.Grad(x)); !slices.Equal(got, c.ga) {
				t.Errorf("%s: grad x %v, want %v", c.name, got, c.ga)
			}
			if got := values(t, tp.Grad(b)); !slices.Equal(got, c.gb) {
				t.Errorf("%s: grad b %v, want %v", c.name, got, c.gb)
			}
			tp.Reset()
			if xb.Err() != nil || ones.Err() != nil {
				t.Fatalf("%s: a caller's buffer was released", c.name)
			}
		}
		// An error with a borrowed gradient in hand: the input survives.
		f := pass(nil)
		f.Backward = func(g *ops.Buffer, in, saved []*ops.Buffer, need []bool) ([]*ops.Buffer, error) {
			return []*ops.Buffer{in[0], nil}, errors.New("bang")
		}
		tp := autograd.NewTape(d)
		y := tp.Apply(f, tp.Leaf(xb, []int{3}, true), tp.Leaf(ones, []int{3}, false))
		if err := tp.Backward(tp.Sum(y)); err == nil || !strings.Contains(err.Error(), "bang") {
			t.Errorf("backward error: %v", err)
		}
		tp.Reset()
		if xb.Err() != nil {
			t.Fatal("the error path released the caller's input")
		}
	})
}
