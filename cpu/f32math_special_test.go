package cpu

import (
	"math"
	"testing"
)

var (
	pinf = float32(math.Inf(1))
	ninf = float32(math.Inf(-1))
	negZ = float32(math.Copysign(0, -1))
	qnan = math.Float32frombits(0x7fc00000)
	snan = math.Float32frombits(0xff800001) // signalling, negative, with a payload
	tiny = float32(math.SmallestNonzeroFloat32)
)

func f32(b uint32) float32 { return math.Float32frombits(b) }

type special struct {
	x, want float32
}

func checkSpecials(t *testing.T, name string, f func(float32) float32, cases []special) {
	t.Helper()
	for _, c := range cases {
		got := f(c.x)
		if !sameBits(got, c.want) {
			t.Errorf("%s(%g [%08x]) = %g [%08x], want %g [%08x]", name, c.x, math.Float32bits(c.x),
				got, math.Float32bits(got), c.want, math.Float32bits(c.want))
		}
	}
}

func TestSpecialExp(t *testing.T) {
	checkSpecials(t, "Expf", Expf, []special{
		{0, 1}, {negZ, 1}, {pinf, pinf}, {ninf, 0}, {qnan, CanonicalNaN()}, {snan, CanonicalNaN()},
		{1, f32(0x402df854)},               // e correctly rounded
		{f32(0x42b17217), f32(0x7f7fff84)}, // 88.72283: the largest input with a finite result
		{f32(0x42b17218), pinf},            // 88.72284: overflow (exp > FLT_MAX + ulp/2)
		{89, pinf}, {89.5, pinf}, {1e30, pinf},
		{f32(0xc2aeac50), f32(0x007fffe6)}, // -87.33655: just below the normal range
		{f32(0xc2ce8ed0), tiny},            // -103.27893 = ln(2^-149)
		{f32(0xc2cff1b4), tiny},            // -103.97208: exp = 0.5000002 * 2^-149 rounds up
		{f32(0xc2cff1b5), 0},               // -103.97209: below 2^-150, rounds to 0
		{-104, 0}, {-1e30, 0},
		{tiny, 1}, {-tiny, 1}, {1e-8, 1}, {-1e-8, 1},
	})
}

func TestSpecialExpm1(t *testing.T) {
	checkSpecials(t, "Expm1f", Expm1f, []special{
		{0, 0}, {negZ, negZ}, {pinf, pinf}, {ninf, -1}, {qnan, CanonicalNaN()}, {snan, CanonicalNaN()},
		{tiny, tiny}, {-tiny, -tiny}, {1e-30, 1e-30}, {-1e-30, -1e-30}, {0x1p-25, 0x1p-25},
		{f32(0x42b17218), pinf}, {89.5, pinf},
		{-17.5, -1}, {-17.4, -1}, {-100, -1}, {-1e30, -1},
		{-16, f32(0xbf7ffffe)}, // -1 + 1.1e-7 = -1 + 1.89*2^-24
		{1, f32(0x3fdbf0a9)},   // e - 1 correctly rounded
	})
}

func TestSpecialLog(t *testing.T) {
	checkSpecials(t, "Logf", Logf, []special{
		{1, 0}, {0, ninf}, {negZ, ninf}, {pinf, pinf}, {ninf, CanonicalNaN()}, {-1, CanonicalNaN()},
		{-tiny, CanonicalNaN()}, {qnan, CanonicalNaN()}, {snan, CanonicalNaN()},
		{2, f32(0x3f317218)},               // ln 2
		{tiny, f32(0xc2ce8ed0)},            // ln 2^-149 = -103.27893
		{math.MaxFloat32, f32(0x42b17218)}, // 88.72284
		{f32(0x3f7fffff), f32(0xb3800000)}, // ln(1 - 2^-24) = -2^-24 - 2^-49 -> -2^-24
	})
}

func TestSpecialLog1p(t *testing.T) {
	checkSpecials(t, "Log1pf", Log1pf, []special{
		{0, 0}, {negZ, negZ}, {-1, ninf}, {pinf, pinf}, {ninf, CanonicalNaN()}, {-2, CanonicalNaN()},
		{f32(0xbf800001), CanonicalNaN()}, // just below -1
		{qnan, CanonicalNaN()}, {snan, CanonicalNaN()},
		{tiny, tiny}, {-tiny, -tiny}, {1e-30, 1e-30}, {-1e-30, -1e-30},
		{1, f32(0x3f317218)},               // ln 2
		{math.MaxFloat32, f32(0x42b17218)}, // 88.72284
	})
	// log1p(-1 + 2^-24) = -24 ln 2
	if got, want := Log1pf(f32(0xbf7fffff)), float32(-24*math.Ln2); !sameBits(got, want) {
		t.Errorf("Log1pf(-1+2^-24) = %g, want %g", got, want)
	}
}

func TestSpecialTanh(t *testing.T) {
	checkSpecials(t, "Tanhf", Tanhf, []special{
		{0, 0}, {negZ, negZ}, {pinf, 1}, {ninf, -1}, {qnan, CanonicalNaN()}, {snan, CanonicalNaN()},
		{tiny, tiny}, {-tiny, -tiny}, {1e-30, 1e-30}, {-1e-30, -1e-30},
		{9.5, 1}, {-9.5, -1}, {9.02, 1}, {20, 1}, {-20, -1}, {1e30, 1}, {-1e30, -1},
		// tanh(9) = 1 - 3.05e-8 lies just below the midpoint 1 - 2^-25 between 1 and the float
		// below it; E/(E + 2) with E = expm1(18) = 6.6e7 rounds E + 2 to E and returns 1 (0.51 ulp).
		{9, 1},
		{8.5, f32(0x3f7fffff)}, // 1 - 1.39*2^-24 -> the float below 1
		{8, f32(0x3f7ffffc)},   // 1 - 3.78*2^-24
	})
	// odd, bit for bit
	for i := uint32(0); i < 1<<31; i += 4099 {
		x := f32(i)
		if x != x {
			continue
		}
		if a, b := Tanhf(x), Tanhf(-x); math.Float32bits(a)^math.Float32bits(b) != 0x80000000 {
			t.Fatalf("Tanhf(-%g) = %g, Tanhf(%g) = %g: not odd", x, b, x, a)
		}
	}
}

func TestSpecialSigmoid(t *testing.T) {
	checkSpecials(t, "Sigmoidf", Sigmoidf, []special{
		{0, 0.5}, {negZ, 0.5}, {pinf, 1}, {ninf, 0}, {qnan, CanonicalNaN()}, {snan, CanonicalNaN()},
		{100, 1}, {-100, f32(0x0000001b)}, // e^-100 = 3.72e-44, 26.55 times the smallest subnormal
		{17, 1},                 // the true value 1 - 4.1e-8 is nearer 1 - 6e-8, but 1 + e^-17 rounds to 1
		{-89, f32(0x001840fc)},  // e^-89 = 2.2274e-39, subnormal (x < -87.3 takes expRare)
		{-103, f32(0x00000001)}, // e^-103 = 1.85e-45: the smallest subnormal
		{-104, 0},               // e^-104 = 6.8e-46 rounds to +0
		{-104.5, 0},             // below expLo: +0
	})
}

func TestSpecialSinCos2Pi(t *testing.T) {
	r2 := f32(0x3f3504f3) // sqrt(2)/2 correctly rounded
	cases := []struct{ u, s, c float32 }{
		{0, 0, 1}, {negZ, negZ, 1},
		{0.25, 1, 0}, {0.5, 0, -1}, {0.75, -1, 0}, {1, 0, 1},
		{-0.25, -1, 0}, {-0.5, negZ, -1}, {-0.75, 1, 0}, {-1, negZ, 1},
		{0.125, r2, r2}, {0.375, r2, -r2}, {-0.125, -r2, r2},
		{1e10, 0, 1}, {-1e10, negZ, 1}, {1 << 23, 0, 1}, {4194304.5, 0, -1}, {2097152.25, 1, 0},
		{1048576.125, r2, r2}, {-1048576.375, -r2, -r2},
		{tiny, f32(0x00000006), 1}, // 2 pi * 2^-149 = 6.28 * 2^-149 -> 6 * 2^-149
		{pinf, CanonicalNaN(), CanonicalNaN()}, {ninf, CanonicalNaN(), CanonicalNaN()},
		{qnan, CanonicalNaN(), CanonicalNaN()}, {snan, CanonicalNaN(), CanonicalNaN()},
	}
	for _, k := range cases {
		s, c := SinCos2Pif(k.u)
		if !sameBits(s, k.s) || !sameBits(c, k.c) {
			t.Errorf("SinCos2Pif(%g) = (%g [%08x], %g [%08x]), want (%g [%08x], %g [%08x])", k.u,
				s, math.Float32bits(s), c, math.Float32bits(c), k.s, math.Float32bits(k.s), k.c, math.Float32bits(k.c))
		}
	}
	// sin is odd and cos even, bit for bit; s^2 + c^2 ~ 1.
	for i := uint32(0); i < 0x7f800000; i += 4099 {
		u := f32(i)
		s1, c1 := SinCos2Pif(u)
		s2, c2 := SinCos2Pif(-u)
		if math.Float32bits(s1)^math.Float32bits(s2) != 0x80000000 || !sameBits(c1, c2) {
			t.Fatalf("SinCos2Pif(±%g) = (%g, %g), (%g, %g): symmetry broken", u, s1, c1, s2, c2)
		}
	}
}

func TestSpecialSqrt(t *testing.T) {
	checkSpecials(t, "Sqrtf", Sqrtf, []special{
		{0, 0}, {negZ, negZ}, {pinf, pinf}, {ninf, CanonicalNaN()}, {-1, CanonicalNaN()},
		{-tiny, CanonicalNaN()}, {qnan, CanonicalNaN()}, {snan, CanonicalNaN()},
		{4, 2}, {2, f32(0x3fb504f3)}, {tiny, f32(0x1a3504f3)}, {math.MaxFloat32, f32(0x5f7fffff)},
	})
}

// sqrtCorrect reports whether y is the correctly rounded square root of x > 0: with
// h = ulp(y)/2, (y-h)^2 < x < (y+h)^2, both squares exact in float64 (25-bit factors).
func sqrtCorrect(x, y float32) bool {
	yb := math.Float32bits(y)
	up := float64(f32(yb+1)) - float64(y)
	dn := float64(y) - float64(f32(yb-1))
	lo := float64(y) - dn/2
	hi := float64(y) + up/2
	xx := float64(x)
	return lo*lo < xx && xx < hi*hi
}

// TestSqrtCorrectlyRounded checks every 31st positive finite float32 (all of them with
// TORCHLEAN_EXHAUSTIVE=1) with the exact bracket test.
func TestSqrtCorrectlyRounded(t *testing.T) {
	step := uint32(31)
	if testing.Short() {
		step = 101
	}
	if exhaustiveEnv() {
		step = 1
	}
	for i := uint32(1); i < 0x7f800000; i += step {
		x := f32(i)
		if y := Sqrtf(x); !sqrtCorrect(x, y) {
			t.Fatalf("Sqrtf(%g [%08x]) = %g [%08x]: not correctly rounded", x, i, y, math.Float32bits(y))
		}
	}
}
