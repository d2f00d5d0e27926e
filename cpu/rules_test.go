package cpu

import (
	"math"
	"testing"
)

// ulpDiff is the distance in units in the last place between two finite float32 values.
func ulpDiff(a, b float32) int64 {
	ia, ib := int64(math.Float32bits(a)), int64(math.Float32bits(b))
	if ia&(1<<31) != 0 {
		ia = (1 << 31) - ia
	}
	if ib&(1<<31) != 0 {
		ib = (1 << 31) - ib
	}
	if ia > ib {
		return ia - ib
	}
	return ib - ia
}

// TestGeluAccuracy compares Geluf and GeluBwdf with float64 references on a dense grid.
func TestGeluAccuracy(t *testing.T) {
	const c, k = 0.044715, 0.7978845608028654
	worst, worstB := int64(0), 0.0
	for x := float32(-12); x <= 12; x += 1.0 / 1024 {
		xd := float64(x)
		u := k * (xd + c*xd*xd*xd)
		sd := 1 / (1 + math.Exp(-2*u)) // 0.5*(1 + tanh(u)) without cancellation
		want := xd * sd
		// Below -1 the function is ill-conditioned (exp of a large argument amplifies the
		// float32 rounding of 2u); the bound grows with it.
		if x >= -1 {
			if d := ulpDiff(Geluf(x), float32(want)); d > worst {
				worst = d
			}
		} else if x >= -4 {
			if d := ulpDiff(Geluf(x), float32(want)); d > 32 {
				t.Errorf("Geluf(%g) = %g, want %g (%d ulp)", x, Geluf(x), want, d)
			}
		} else if e := math.Abs(float64(Geluf(x))-want) / math.Abs(want); math.Abs(want) > 1e-30 && e > 3e-5 {
			t.Errorf("Geluf(%g) = %g, want %g", x, Geluf(x), want)
		}
		dwant := sd + xd*sd*(1-sd)*2*k*(1+3*c*xd*xd)
		if e := math.Abs(float64(GeluBwdf(x, 1))-dwant) / math.Max(1, math.Abs(dwant)); e > worstB {
			worstB = e
		}
	}
	if worst > 4 {
		t.Errorf("Geluf: max error %d ulp", worst)
	}
	if worstB > 4e-6 {
		t.Errorf("GeluBwdf: max error %g", worstB)
	}
	t.Logf("Geluf max %d ulp, GeluBwdf max scaled error %.3g", worst, worstB)
}
