package cpu

import (
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// powConstants lists Powf's float32 constants under the names that ptx/f32pow.cuh uses after
// its TLP_ prefix.
var powConstants = map[string]float32{
	"third2Hi": third2Hi, "third2Lo": third2Lo,
	"powP0": powP0, "powP1": powP1, "powP2": powP2, "powP3": powP3, "powP4": powP4,
}

// TestPowCUDAConstants checks that ptx/f32pow.cuh defines TLP_<name> as __uint_as_float(bits)
// with exactly the bits of each Go constant, and nothing else; that its constants are what
// their comments say (2/3 split in two, 2/(2n+1) rounded); and that it calls only tl_/tlf_/tlp_
// functions and bit casts (tl_fmaf is f32math.cuh's one fused operation).
func TestPowCUDAConstants(t *testing.T) {
	src, err := os.ReadFile("../ptx/f32pow.cuh")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^#define TLP_(\w+) __uint_as_float\(0x([0-9a-f]{8})u\)$`)
	seen := map[string]bool{}
	for _, m := range re.FindAllStringSubmatch(string(src), -1) {
		bits, _ := strconv.ParseUint(m[2], 16, 32)
		v, ok := powConstants[m[1]]
		if !ok {
			t.Errorf("f32pow.cuh: TLP_%s has no Go constant %s", m[1], m[1])
			continue
		}
		seen[m[1]] = true
		if math.Float32bits(v) != uint32(bits) {
			t.Errorf("TLP_%s = 0x%08x, Go %s = 0x%08x", m[1], bits, m[1], math.Float32bits(v))
		}
	}
	for name := range powConstants {
		if !seen[name] {
			t.Errorf("f32pow.cuh lacks #define TLP_%s", name)
		}
	}
	if n := strings.Count(string(src), "#define TLP_"); n != len(seen) {
		t.Errorf("f32pow.cuh has %d TLP_ defines, %d match the Go constants", n, len(seen))
	}
	code := regexp.MustCompile(`//.*`).ReplaceAllString(string(src), "")
	allowed := map[string]bool{"__uint_as_float": true, "__float_as_uint": true, "if": true, "return": true}
	for _, m := range regexp.MustCompile(`\b([A-Za-z_]\w*)\s*\(`).FindAllStringSubmatch(code, -1) {
		n := m[1]
		if allowed[n] || strings.HasPrefix(n, "tl_") || strings.HasPrefix(n, "tlf_") || strings.HasPrefix(n, "tlp_") {
			continue
		}
		if n == "float" || n == "int" || n == "unsigned" { // conversions: (float)e, (int)(...)
			continue
		}
		t.Errorf("f32pow.cuh calls %s(...): only tl_/tlf_/tlp_ functions and bit casts are allowed", n)
	}
	if float64(third2Hi)+float64(third2Lo) != float64(float32(2.0/3))+float64(float32(2.0/3-float64(float32(2.0/3)))) {
		t.Error("third2Hi + third2Lo is not 2/3 split in two floats")
	}
	if d := math.Abs(float64(third2Hi) + float64(third2Lo) - 2.0/3); d > 0x1p-48 {
		t.Errorf("third2Hi + third2Lo differs from 2/3 by %g", d)
	}
	for k, c := range []float32{powP0, powP1, powP2, powP3, powP4} {
		if want := float32(2 / float64(2*k+5)); c != want {
			t.Errorf("powP%d = %v, want 2/%d rounded (%v)", k, c, 2*k+5, want)
		}
	}
}

// TestPowfSpecial checks the special cases (C99's, which math.Pow shares) over every pair of a
// list of special and ordinary values: zeros of both signs, ±1, ±Inf, NaN, integers odd and
// even, fractions, subnormals and the largest floats.
func TestPowfSpecial(t *testing.T) {
	vals := []float32{0, float32(math.Copysign(0, -1)), 1, -1, 2, -2, 3, -3, 0.5, -0.5, 1.5, -1.5,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 1e-45, -1e-45, 1e-40, maxF32, -maxF32,
		0x1p24, -0x1p24, 0x1p23 + 1, -(0x1p23 + 1), 0x1p23, 1 - 0x1p-24, 1 + 0x1p-23, 7, -7, 0.1, 100, -100, 1e10}
	for _, x := range vals {
		for _, y := range vals {
			got := Powf(x, y)
			want := math.Pow(float64(x), float64(y))
			if e := ulpErr(got, want); e > 1 || (got == 0 && math.Signbit(float64(got)) != math.Signbit(want)) {
				t.Errorf("Powf(%g, %g) = %g (%#08x), math.Pow %g (error %g ulp)", x, y, got, math.Float32bits(got), want, e)
			}
			if got != got && math.Float32bits(got) != CanonicalNaNBits {
				t.Errorf("Powf(%g, %g): NaN %#08x, want the canonical NaN", x, y, math.Float32bits(got))
			}
		}
	}
}

// powSample is the i-th random input pair of the accuracy sweep, of kind i % 6: 0 any positive
// normal base with exponents keeping the result in range; 1 bases near 1 with large exponents;
// 2 negative bases with integer exponents; 3 exponents in [-4, 4] over bases in [2^-20, 2^20];
// 4 subnormal bases; 5 results near the overflow and underflow thresholds.
func powSample(i uint64) (x, y float32) {
	z0, z1 := SplitMix64(i*2+0x9e37), SplitMix64(i*2+0x9e38)
	u := float64(z1>>11) * 0x1p-53 // [0, 1)
	switch i % 6 {
	case 0:
		x = math.Float32frombits(uint32(z0)&0x7fffffff%(0x7f000000) + 0x00800000)
		l := math.Log(float64(x))
		lim := 87.0
		if l != 0 {
			y = float32((2*u - 1) * lim / math.Abs(l))
		}
	case 1:
		x = math.Float32frombits(0x3f800000 + uint32(int32(uint32(z0))>>12))
		l := math.Log(float64(x))
		if l != 0 {
			y = float32((2*u - 1) * 80 / math.Abs(l))
		}
	case 2:
		x = -float32(math.Ldexp(1+float64(uint32(z0))*0x1p-32, int(z0>>32%40)-20))
		y = float32(int64(z1>>32%61) - 30)
	case 3:
		x = float32(math.Ldexp(1+float64(uint32(z0))*0x1p-32, int(z0>>32%41)-20))
		y = float32(8*u - 4)
	case 4:
		x = math.Float32frombits(uint32(z0)%0x007fffff + 1)
		y = float32(-0.9 * u)
	default:
		x = float32(math.Ldexp(1+float64(uint32(z0))*0x1p-32, int(z0>>32%8)))
		target := 88.6
		if z1&1 == 0 {
			target = -87.2 - 16*float64(z1>>1&0xffff)*0x1p-16 // -87.2 .. -103.2: subnormal results
		}
		y = float32(target / math.Log(float64(x)))
	}
	return x, y
}

// TestPowfAccuracy measures Powf against math.Pow (float64) over 6 million inputs of the kinds
// of powSample: the error stays below 1 ulp for normal results, and below 1.5 ulp of the
// subnormal spacing for subnormal results (rounded twice). TORCHLEAN_EXHAUSTIVE=1 samples 60
// million.
func TestPowfAccuracy(t *testing.T) {
	n := uint64(6_000_000)
	if testing.Short() {
		n = 600_000
	}
	if os.Getenv("TORCHLEAN_EXHAUSTIVE") != "" {
		n *= 10
	}
	var worst [6]float64
	var worstIn [6][2]float32
	var worstSub float64
	for i := range n {
		x, y := powSample(i)
		got := Powf(x, y)
		want := math.Pow(float64(x), float64(y))
		e := ulpErr(got, want)
		if math.Abs(want) < 0x1p-126 {
			worstSub = max(worstSub, e)
			continue
		}
		if k := i % 6; e > worst[k] {
			worst[k], worstIn[k] = e, [2]float32{x, y}
		}
	}
	for k, w := range worst {
		t.Logf("kind %d: max error %.3f ulp at Powf(%g, %g)", k, w, worstIn[k][0], worstIn[k][1])
		if w >= 1 {
			t.Errorf("kind %d: error %.3f ulp at Powf(%g, %g) (bound 1)", k, w, worstIn[k][0], worstIn[k][1])
		}
	}
	t.Logf("subnormal results: max error %.3f ulp", worstSub)
	if worstSub >= 1.5 {
		t.Errorf("subnormal results: error %.3f ulp (bound 1.5)", worstSub)
	}
}
