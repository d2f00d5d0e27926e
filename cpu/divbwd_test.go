package cpu

import (
	"math"
	"testing"
)

// TestDivBwdRange: the divisor gradient db = -(g * ((a / b) / b)) stays finite where b*b would
// overflow or underflow (the order before PyTorch's, -(g * (a / (b * b))), gave -Inf and NaN
// there), on every kernel set of this machine and in the scalar tail.
func TestDivBwdRange(t *testing.T) {
	// Each operation rounded to float32 (variables, not constants, which Go folds exactly).
	want := func(a, b, g float32) (float32, float32) { return g / b, -float32(g * ((a / b) / b)) }
	cases := []struct {
		a, b, g float32
		approx  float64 // db within 1e-6 relative, or the exact bits of -0 when 0
	}{
		// b*b underflows to 0: a / 0 = +Inf before; PyTorch gives -1.5e30.
		{1e-30, 1e-30, 1.5, -1.5e30},
		// b = 1e-40 (subnormal): b*b = 0, 0/0 = NaN before; now (0/b)/b = 0 and -(1.5*0) = -0.
		{0, 1e-40, 1.5, 0},
		// b*b overflows to +Inf: a / Inf = 0 before, which happens to be near; now 2e-30.
		{1e10, 1e20, 2, -2e-30},
		// b*b overflows and a is large: a / Inf = 0 before, now -(1 * (1e30/1e20)/1e20) = -1e-10.
		{1e30, 1e20, 1, -1e-10},
		{3, 2, 1, -0.75},
	}
	for _, c := range cases {
		_, db := want(c.a, c.b, c.g)
		if c.approx == 0 {
			if math.Float32bits(db) != 0x80000000 {
				t.Errorf("db(a=%g, b=%g, g=%g) = %g, want -0", c.a, c.b, c.g, db)
			}
		} else if math.Abs(float64(db)-c.approx) > 1e-6*math.Abs(c.approx) {
			t.Errorf("db(a=%g, b=%g, g=%g) = %g, want %g", c.a, c.b, c.g, db, c.approx)
		}
	}
	for _, n := range []int{1, 3, 16, 37, 64} {
		for _, l := range vecLevels() {
			prev := useVecLevel(l)
			for _, c := range cases {
				a, b, g := make([]float32, n), make([]float32, n), make([]float32, n)
				for i := range a {
					a[i], b[i], g[i] = c.a, c.b, c.g
				}
				da, db := make([]float32, n), make([]float32, n)
				DivBwd(da, db, a, b, g)
				wa, wb := want(c.a, c.b, c.g)
				for i := range da {
					if math.Float32bits(da[i]) != math.Float32bits(wa) || math.Float32bits(db[i]) != math.Float32bits(wb) {
						t.Errorf("%s n=%d [%d]: DivBwd(a=%g, b=%g, g=%g) = (%g, %g), want (%g, %g)",
							l, n, i, c.a, c.b, c.g, da[i], db[i], wa, wb)
						break
					}
				}
			}
			useVecLevel(prev)
		}
	}
}
