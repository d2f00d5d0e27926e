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

// Softplusf is max(x, 0) + Log1pf(Expf(-|x|)).
func Softplusf(x float32) float32 {
	var m float32
	if x > 0 {
		m = x
	}
	return m + Log1pf(Expf(-Absf(x)))
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

// Geluf is the tanh approximation of GELU, 0.5*x*(1 + tanh(k*(x + c*x^3))), computed through
// the identity 0.5*(1 + tanh(u)) = 1/(1 + e^(-2u)) (one exponential, no cancellation for
// negative x):
//
//	v = geluK2 * (x + ((c*x)*x)*x)      // 2u
//	return x / (1 + Expf(-v))
func Geluf(x float32) float32 {
	v := float32(geluK2 * (x + float32(float32(float32(geluC*x)*x)*x)))
	return x / (1 + Expf(-v))
}

// GeluBwdf is g * GELU'(x) for the same approximation, with s = 1/(1 + Expf(-v)) as in Geluf:
//
//	d = s + ((x * (s*(1 - s))) * geluK2) * (1 + (3c*x)*x)
//	return g * d
func GeluBwdf(x, g float32) float32 {
	v := float32(geluK2 * (x + float32(float32(float32(geluC*x)*x)*x)))
	s := 1 / (1 + Expf(-v))
	inner := 1 + float32(float32(gelu3C*x)*x)
	d := s + float32(float32(float32(x*float32(s*(1-s)))*geluK2)*inner)
	return float32(g * d)
}
