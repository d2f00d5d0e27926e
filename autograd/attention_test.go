package autograd_test

import (
	"math"
	"strings"
	"testing"

	"github.com/torchlean-go/torchlean/autograd"
	"github.com/torchlean-go/torchlean/ops"
)

// sdpaRef is ScaledDotProductAttention in float64: q (b, nq, d), k and v (b, nk, d); mask (nil,
// nq·nk shared or b·nq·nk); blocked entries filled with -1000 when fill, else excluded (a fully
// excluded row gives zeros).
func sdpaRef(q, k, v []float64, b, nq, nk, d int, mask []bool, fill, causal bool, scale float64) []float64 {
	out := make([]float64, b*nq*d)
	s := make([]float64, nk)
	for bb := range b {
		for i := range nq {
			m := math.Inf(-1)
			ex := make([]bool, nk)
			for j := range nk {
				blocked := false
				if mask != nil {
					mi := i*nk + j
					if len(mask) == b*nq*nk {
						mi += bb * nq * nk
					}
					blocked = !mask[mi]
				}
				ex[j] = causal && j > i || blocked && !fill
				s[j] = 0
				for c := range d {
					s[j] += q[(bb*nq+i)*d+c] * k[(bb*nk+j)*d+c]
				}
				s[j] *= scale
				if blocked && fill {
					s[j] = -1000
				}
				if !ex[j] {
					m = math.Max(m, s[j])
				}
			}
			z := 0.0
			for j := range nk {
				if !ex[j] {
					z += math.Exp(s[j] - m)
				}
			}
			for j := range nk {
				if ex[j] {
					continue
				}
				p := math.Exp(s[j]-m) / z
				for c := range d {
					out[(bb*nq+i)*d+c] += p * v[(bb*nk+j)*d+c]
				}
			}
		}
	}
	return out
}

// TestSDPAGradients checks ScaledDotProductAttention's values and gradients against central
// finite differences of sdpaRef (checkGrad): leading axes (2, 3), nq != nk, unmasked, causal,
// a shared boolean mask with a fully blocked row (its gradients are zero), a per-sequence mask
// with the -1000 fill, and an explicit scale.
func TestSDPAGradients(t *testing.T) {
	const b1, b2, nq, nk, d = 2, 3, 5, 6, 4
	shared := make([]bool, nq*nk)
	for i := range shared {
		shared[i] = (i*7)%5 != 0 && i/nk != 2 // row 2 fully blocked
	}
	perSeq := make([]bool, b1*b2*nq*nk)
	for i := range perSeq {
		perSeq[i] = (i*11)%4 != 0
	}
	cases := []struct {
		name string
		o    autograd.SDPAOptions
	}{
		{"plain", autograd.SDPAOptions{}},
		{"causal", autograd.SDPAOptions{Causal: true}},
		{"mask_blocked_row", autograd.SDPAOptions{Mask: shared}},
		{"mask_causal", autograd.SDPAOptions{Mask: shared, Causal: true}},
		{"fill_per_sequence", autograd.SDPAOptions{Mask: perSeq, FillMask: true}},
		{"scale", autograd.SDPAOptions{Scale: 0.8}},
	}
	forDevices(t, func(t *testing.T, dev *ops.Device) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				scale := c.o.Scale
				if scale == 0 {
					scale = 1 / math.Sqrt(d)
				}
				checkGrad(t, dev, gradCase{name: "sdpa_" + c.name,
					in: [][]int{{b1, b2, nq, d}, {b1, b2, nk, d}, {b1, b2, nk, d}},
					op: func(tp *autograd.Tape, x []autograd.Var) autograd.Var {
						return tp.ScaledDotProductAttention(x[0], x[1], x[2], c.o)
					},
					ref: func(x [][]float64) []float64 {
						return sdpaRef(x[0], x[1], x[2], b1*b2, nq, nk, d, c.o.Mask, c.o.FillMask, c.o.Causal, scale)
					}})
			})
		}
	})
}

// TestSDPABlockedRowGradients: a fully blocked query row gives zeros and exactly zero gradients
// to its q row, and nothing to k and v.
func TestSDPABlockedRowGradients(t *testing.T) {
	dev := ops.CPU()
	const n, d = 4, 3
	mask := []bool{true, true, false, false, false, false, false, false, true, false, true, true, true, true, true, true}
	tp := autograd.NewTape(dev)
	defer tp.Reset()
	vals := func(k int) []float64 {
		x := make([]float64, n*d)
		for i := range x {
			x[i] = math.Sin(float64(k*31 + i))
		}
		return x
	}
	var vars [3]autograd.Var
	for k := range vars {
		b := upload(t, dev, vals(k)...)
		defer b.Release()
		vars[k] = tp.Leaf(b, []int{n, d}, true)
	}
	y := tp.ScaledDotProductAttention(vars[0], vars[1], vars[2], autograd.SDPAOptions{Mask: mask})
	if err := tp.Backward(tp.Sum(tp.Mul(y, y))); err != nil {
		t.Fatal(err)
	}
	out, dq := values(t, tp.Value(y)), values(t, tp.Grad(vars[0]))
	for c := range d {
		if out[d+c] != 0 || dq[d+c] != 0 {
			t.Errorf("blocked row 1: out %v, dq %v", out[d:2*d], dq[d:2*d])
		}
	}
}

// TestMultiHeadAttentionFlashMatchesComposed compares MultiHeadAttention (flash kernels) with
// the composition of bmm and softmax: values and every gradient within float32 rounding, with
// and without a causal mask (filled with -1000), over a batch of sequences crossing a key block.
func TestMultiHeadAttentionFlashMatchesComposed(t *testing.T) {
	const b, n, dm, h = 2, 70, 32, 4
	for _, causal := range []bool{false, true} {
		var mask []bool
		if causal {
			for i := range n * n {
				mask = append(mask, i%n <= i/n)
			}
		}
		forDevices(t, func(t *testing.T, dev *ops.Device) {
			run := func(composed bool) [][]float64 {
				tp := autograd.NewTape(dev)
				defer tp.Reset()
				shapes := [][]int{{b, n, dm}, {dm, dm}, {dm, dm}, {dm, dm}, {dm, dm}}
				vars := make([]autograd.Var, len(shapes))
				for k, s := range shapes {
					x := make([]float64, numel(s))
					for i := range x {
						x[i] = 0.3 * math.Sin(float64(1+k*1000+i)*0.77)
					}
					buf := upload(t, dev, x...)
					defer buf.Release()
					vars[k] = tp.Leaf(buf, s, true)
				}
				y := autograd.MultiHeadAttentionComposedForTest(tp, vars[0], vars[1], vars[2], vars[3], vars[4], h, mask, composed)
				if err := tp.Backward(tp.Sum(tp.Mul(y, y))); err != nil {
					t.Fatal(err)
				}
				res := [][]float64{values(t, tp.Value(y))}
				for _, v := range vars {
					res = append(res, values(t, tp.Grad(v)))
				}
				return res
			}
			flash, comp := run(false), run(true)
			for k := range flash {
				scale := 0.0
				for _, w := range comp[k] {
					scale = math.Max(scale, math.Abs(w))
				}
				for i := range flash[k] {
					if e := math.Abs(flash[k][i] - comp[k][i]); !(e <= 1e-5*scale) {
						t.Fatalf("causal %v: result %d [%d]: flash %v, composed %v", causal, k, i, flash[k][i], comp[k][i])
					}
				}
			}
		})
	}
}

// TestSDPAErrors: shapes that do not fit are errors naming the op.
func TestSDPAErrors(t *testing.T) {
	dev := ops.CPU()
	for i, c := range []struct {
		q, k, v []int
		o       autograd.SDPAOptions
	}{
		{[]int{4}, []int{4}, []int{4}, autograd.SDPAOptions{}},
		{[]int{2, 3, 4}, []int{3, 3, 4}, []int{3, 3, 4}, autograd.SDPAOptions{}},
		{[]int{3, 4}, []int{3, 5}, []int{3, 5}, autograd.SDPAOptions{}},
		{[]int{3, 4}, []int{3, 4}, []int{2, 4}, autograd.SDPAOptions{}},
		{[]int{3, 300}, []int{3, 300}, []int{3, 300}, autograd.SDPAOptions{}},
		{[]int{3, 4}, []int{3, 4}, []int{3, 4}, autograd.SDPAOptions{Mask: make([]bool, 8)}},
	} {
		tp := autograd.NewTape(dev)
		leaf := func(s []int) autograd.Var {
			b, err := ops.Zeros(dev, numel(s))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { b.Release() })
			return tp.Leaf(b, s, true)
		}
		tp.ScaledDotProductAttention(leaf(c.q), leaf(c.k), leaf(c.v), c.o)
		if err := tp.Err(); err == nil {
			t.Errorf("case %d: no error", i)
		} else if want := "scaled_dot_product_attention"; !strings.Contains(err.Error(), want) {
			t.Errorf("case %d: error %q does not name %s", i, err, want)
		}
		tp.Reset()
	}
}
