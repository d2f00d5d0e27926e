package cpu

import "math"

// Scalar rules shared by several kernels; their CUDA twins are the tl_* device functions at the
// top of ptx/elementwise.cu and ptx/elementwise_math.cu.

// Absf clears the sign bit (fabsf).
func Absf(x float32) float32 { return math.Float32frombits(math.Float32bits(x) &^ (1 << 31)) }

// Clampf is min(max(x, lo), hi) with NaN propagating: r = x < lo ? lo : x; r > hi ? hi : r.
func Clampf(x, lo, hi float32) float32 {
	r := x
	if x < lo {
		r = lo
	}
	if r > hi {
		r = hi
	}
	return r
}

// Maxf returns NaN (as a + b) when either input is NaN, else a > b ? a : b.
func Maxf(a, b float32) float32 {
	if a != a || b != b {
		return a + b
	}
	if a > b {
		return a
	}
	return b
}

// Minf returns NaN (as a + b) when either input is NaN, else a < b ? a : b.
func Minf(a, b float32) float32 {
	if a != a || b != b {
		return a + b
	}
	if a < b {
		return a
	}
	return b
}

// MaxBwdf routes g to the strictly larger input; ties and NaN split it 0.5*g to each.
func MaxBwdf(a, b, g float32) (da, db float32) {
	switch {
	case a > b:
		return g, 0
	case b > a:
		return 0, g
	}
	h := float32(0.5 * g)
	return h, h
}

// MinBwdf routes g to the strictly smaller input; ties and NaN split it 0.5*g to each.
func MinBwdf(a, b, g float32) (da, db float32) {
	switch {
	case a < b:
		return g, 0
	case b < a:
		return 0, g
	}
	h := float32(0.5 * g)
	return h, h
}

// log1pUnit: w = t*l1pScale + l1pBias picks the table row, and log1p(r) ~= r + r^2 (Q2 +
// Q3 r + Q4 r^2 + Q5 r^3) for |r| < 0.0334 (the Taylor coefficients rounded; the first term
// left out, r^6/6, is under 2^-27 of r).
const (
	l1pScale float32 = 0x1.ep-01  // 15/16
	l1pBias  float32 = 0x1.08p+00 // 33/32
	l1pQ2    float32 = -0x1p-01
	l1pQ3    float32 = 0x1.555556p-02
	l1pQ4    float32 = -0x1p-02
	l1pQ5    float32 = 0x1.99999ap-03
)

// The table of log1pUnit (float32 bits), row i for c_i = 1 + i/15: invc = 1/c_i exactly in
// rows 0 and 15 (logc = +0 and ln 2 rounded, so that Softplusf(0) is ln 2 rounded); in the
// others a float32 within 2^-12 of 1/c_i, chosen among its neighbours so that -log(invc) rounds
// to logc with an error below 0.001 ulp. The CUDA twin (ptx/elementwise_math.cu) holds the same
// bits; TestLog1pUnitTable checks both.
var (
	l1pInvc = [16]uint32{
		0x3f800000, 0x3f6ffa3b, 0x3f61e6fd, 0x3f55573e, 0x3f4a206b, 0x3f3ffbb1, 0x3f36d9f7, 0x3f2e86fc,
		0x3f26f439, 0x3f1ff9d0, 0x3f1993f9, 0x3f13adf9, 0x3f0e4071, 0x3f091cd9, 0x3f046f6d, 0x3f000000,
	}
	l1pLogc = [16]uint32{
		0x00000000, 0x3d845e02, 0x3e00139f, 0x3e3aa957, 0x3e71f42f, 0x3e93568e, 0x3eac4a30, 0x3ec42535,
		0x3edadbed, 0x3ef0b81e, 0x3f02ced9, 0x3f0cd57c, 0x3f166b98, 0x3f1fd6ff, 0x3f28b9b3, 0x3f317218,
	}
)

// log1pUnit returns log(1 + t) for t in [0, 1] (NaN for NaN), Softplusf's logarithm, with no
// division: a 16-row table brings 1 + t near 1, a polynomial does the rest.
//
//	w = Fmaf(t, l1pScale, l1pBias)       // in [1.03125, 1.96875] (NaN: row 15, a NaN result)
//	i = (bits(w) >> 19) & 15             // the row whose c_i = 1 + i/15 is nearest 1 + t
//	c = invc[i]
//	r = Fmaf(t, c, c - 1)                // (1 + t)*c - 1 rounded once (c - 1 is exact); |r| < 0.0334
//	q = Fmaf(Fmaf(Fmaf(r, Q5, Q4), r, Q3), r, Q2)
//	return logc[i] + Fmaf(r*r, q, r)     // log(1/c) + log1p(r)
//
// Row 0 has c = 1 and logc = 0, so r = t exactly for t < 1/30. Max error 1.052 ulp over all t
// in [0, 1] (TestLog1pUnitAccuracy).
func log1pUnit(t float32) float32 {
	w := Fmaf(t, l1pScale, l1pBias)
	i := (f32bits(w) >> 19) & 15
	c := f32frombits(l1pInvc[i])
	r := Fmaf(t, c, c-1)
	q := Fmaf(r, l1pQ5, l1pQ4)
	q = Fmaf(r, q, l1pQ3)
	q = Fmaf(r, q, l1pQ2)
	return f32frombits(l1pLogc[i]) + Fmaf(float32(r*r), q, r)
}

// Softplusf is max(x, 0) + log1p(Expf(-|x|)), the logarithm computed by log1pUnit (its
// argument is in [0, 1]; no division).
func Softplusf(x float32) float32 {
	var m float32
	if x > 0 {
		m = x
	}
	return m + log1pUnit(Expf(-Absf(x)))
}

// SafeLogBwdf is g * sigmoid(x) / (Softplusf(x) + eps), with the sigmoid from Softplusf's own
// exponential t = Expf(-|x|) (one exponential fewer than Sigmoidf beside it):
//
//	s = (x >= 0 ? 1 : t) / (1 + t)      // for x >= 0 the bits of 1/(1 + Expf(-x))
//	return (g * s) / ((max(x, 0) + log1pUnit(t)) + eps)
func SafeLogBwdf(x, g, eps float32) float32 {
	t := Expf(-Absf(x))
	n := t
	var m float32
	if x >= 0 {
		n = 1
	}
	if x > 0 {
		m = x
	}
	s := n / (1 + t)
	return float32(g*s) / ((m + log1pUnit(t)) + eps)
}

// SigmoidBwdf is g * (s * (1 - s)) with s = Sigmoidf(x).
func SigmoidBwdf(x, g float32) float32 {
	s := Sigmoidf(x)
	return float32(g * float32(s*(1-s)))
}

// TanhBwdf is g * (1 - t*t) with t = Tanhf(x).
func TanhBwdf(x, g float32) float32 {
	t := Tanhf(x)
	return float32(g * (1 - float32(t*t)))
}

// GELU (tanh approximation) constants: c = 0.044715, 3c and 2k with k = sqrt(2/pi), each
// rounded to float32 (geluK2 is exactly twice float32(k)).
const (
	geluC  float32 = 0.044715
	gelu3C float32 = 0.134145
	geluK2 float32 = 2 * float32(0.7978845608)
)

// geluV is v = 2k (x + c x^3) of Geluf and GeluBwdf: geluK2 * Fmaf((c*x)*x, x, x).
func geluV(x float32) float32 {
	return float32(geluK2 * Fmaf(float32(float32(geluC*x)*x), x, x))
}

// Geluf is the tanh approximation of GELU, 0.5*x*(1 + tanh(k*(x + c*x^3))), computed through
// the identity 0.5*(1 + tanh(u)) = 1/(1 + e^(-2u)) (one exponential, no cancellation for
// negative x):
//
//	v = geluV(x)                        // 2u
//	return x / (1 + expFused(-v))
//
// From about x = -10.06 down, the exponential overflows to +Inf and the result is -0, where the
// exact GELU has magnitude below 3.1e-38 (and rounds to -0 itself from about x = -10.77).
func Geluf(x float32) float32 {
	return x / (1 + expFused(-geluV(x)))
}

// GeluBwdf is g * GELU'(x) for the same approximation, with s = 1/(1 + expFused(-v)) as in
// Geluf:
//
//	d = s + ((x * (s*(1 - s))) * geluK2) * (1 + (3c*x)*x)
//	return g * d
func GeluBwdf(x, g float32) float32 {
	s := 1 / (1 + expFused(-geluV(x)))
	inner := 1 + float32(float32(gelu3C*x)*x)
	d := s + float32(float32(float32(x*float32(s*(1-s)))*geluK2)*inner)
	return float32(g * d)
}
