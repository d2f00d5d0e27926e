package cpu

import (
	"fmt"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
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

// TestLog1pUnitTable checks the table of log1pUnit (rows 0 and 15 exact; the other invc within
// 2^-12 of 1/c_i, c_i = 1 + i/15; logc = -log(invc) rounded, with an error below 0.001 ulp) and that the
// CUDA twin in ptx/elementwise_math.cu holds the same constants and table bits.
func TestLog1pUnitTable(t *testing.T) {
	if l1pInvc[0] != math.Float32bits(1) || l1pLogc[0] != 0 {
		t.Error("row 0 must be invc = 1, logc = +0")
	}
	if l1pInvc[15] != math.Float32bits(0.5) || l1pLogc[15] != math.Float32bits(math.Ln2) {
		t.Error("row 15 must be invc = 0.5, logc = ln 2 rounded")
	}
	for i := 1; i < 15; i++ {
		c := float64(math.Float32frombits(l1pInvc[i]))
		if e := math.Abs(c*(1+float64(i)/15) - 1); e > 0x1p-12 {
			t.Errorf("row %d: invc %g is %g from 1/c_i", i, c, e)
		}
		l := -math.Log(c)
		lf := math.Float32frombits(l1pLogc[i])
		ulp := float64(math.Float32frombits(l1pLogc[i]+1)) - float64(lf)
		if lf != float32(l) || math.Abs(float64(lf)-l) > 0.001*ulp {
			t.Errorf("row %d: logc %g, -log(invc) = %.17g", i, lf, l)
		}
	}
	src, err := os.ReadFile("../ptx/elementwise_math.cu")
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]float32{"SCALE": l1pScale, "BIAS": l1pBias, "Q2": l1pQ2, "Q3": l1pQ3,
		"Q4": l1pQ4, "Q5": l1pQ5} {
		def := fmt.Sprintf("#define TL_L1P_%s __uint_as_float(0x%08xu)\n", name, math.Float32bits(v))
		if !strings.Contains(string(src), def) {
			t.Errorf("elementwise_math.cu lacks %q", def)
		}
	}
	for name, tab := range map[string][16]uint32{"tl_l1p_invc": l1pInvc, "tl_l1p_logc": l1pLogc} {
		m := regexp.MustCompile(`(?s)` + name + `\[16\] = \{(.*?)\};`).FindSubmatch(src)
		if m == nil {
			t.Errorf("elementwise_math.cu lacks the table %s", name)
			continue
		}
		words := regexp.MustCompile(`0x([0-9a-f]{8})u`).FindAllSubmatch(m[1], -1)
		if len(words) != 16 {
			t.Errorf("%s has %d entries", name, len(words))
			continue
		}
		for i, w := range words {
			if b, _ := strconv.ParseUint(string(w[1]), 16, 32); uint32(b) != tab[i] {
				t.Errorf("%s[%d] = 0x%s, Go 0x%08x", name, i, w[1], tab[i])
			}
		}
	}
}

// TestLog1pUnitAccuracy compares log1pUnit with math.Log1p over every 61st float32 in [0, 1]
// (every one with TORCHLEAN_EXHAUSTIVE=1: measured max 1.052 ulp), and Softplusf with a float64
// reference on a dense grid of [-104, 30] and at NaN, ±Inf and ±0.
func TestLog1pUnitAccuracy(t *testing.T) {
	step := uint32(61)
	if exhaustiveEnv() {
		step = 1
	}
	worst, at := 0.0, float32(0)
	for b := uint32(0); b <= 0x3f800000; b += step {
		x := math.Float32frombits(b)
		if e := ulpErr(log1pUnit(x), math.Log1p(float64(x))); e > worst {
			worst, at = e, x
		}
	}
	t.Logf("log1pUnit: max %.3f ulp at %g", worst, at)
	if worst > 1.06 {
		t.Errorf("log1pUnit: max error %.3f ulp at %g (0x%08x)", worst, at, math.Float32bits(at))
	}
	worst = 0
	for x := float32(-104); x <= 30; x += 1.0 / 4096 {
		xd := float64(x)
		want := math.Max(xd, 0) + math.Log1p(math.Exp(-math.Abs(xd)))
		if e := ulpErr(Softplusf(x), want); e > worst {
			worst, at = e, x
		}
	}
	t.Logf("Softplusf: max %.3f ulp at %g", worst, at)
	if worst > 2 {
		t.Errorf("Softplusf: max error %.3f ulp at %g", worst, at)
	}
	inf := float32(math.Inf(1))
	for _, c := range []struct{ x, want float32 }{{inf, inf}, {-inf, 0}, {0, 0x1.62e43p-01}, {float32(math.Copysign(0, -1)), 0x1.62e43p-01}} {
		if got := Softplusf(c.x); got != c.want {
			t.Errorf("Softplusf(%g) = %g, want %g", c.x, got, c.want)
		}
	}
	if got := math.Float32bits(Softplusf(CanonicalNaN())); got != CanonicalNaNBits {
		t.Errorf("Softplusf(NaN) bits 0x%08x, want the canonical NaN", got)
	}
}

// TestSafeLogBwdfAccuracy compares SafeLogBwdf (g = 1) with a float64 reference on a dense grid
// of [-80, 80] for the seeds' eps = 1e-6, and checks that for x >= 0 its sigmoid is
// 1/(1 + Expf(-x)), Softplusf's exponential.
func TestSafeLogBwdfAccuracy(t *testing.T) {
	const eps = 1e-6
	worst, at := 0.0, float32(0)
	for x := float32(-80); x <= 80; x += 1.0 / 1024 {
		xd := float64(x)
		sp := math.Max(xd, 0) + math.Log1p(math.Exp(-math.Abs(xd)))
		want := 1 / (1 + math.Exp(-xd)) / (sp + float64(float32(eps)))
		if e := ulpErr(SafeLogBwdf(x, 1, eps), want); e > worst {
			worst, at = e, x
		}
		if x >= 0 {
			if got, want := SafeLogBwdf(x, 1, 0), 1/(1+Expf(-x))/Softplusf(x); got != want {
				t.Fatalf("SafeLogBwdf(%g, 1, 0) = %g, 1/(1 + Expf(-x))/Softplusf = %g", x, got, want)
			}
		}
	}
	t.Logf("SafeLogBwdf: max %.3f ulp at %g", worst, at)
	if worst > 4 {
		t.Errorf("SafeLogBwdf: max error %.3f ulp at %g", worst, at)
	}
}
