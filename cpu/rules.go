package cpu

import "math"

// Scalar rules shared by several kernels; their CUDA twins are the tl_* device functions at the
// top of ptx/elementwise.cu.

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

// GELU (tanh approximation) constants: c = 0.044715, 3c, k = sqrt(2/pi), each rounded to float32.
const (
	geluC  float32 = 0.044715
	gelu3C float32 = 0.134145
	geluK  float32 = 0.7978845608
)

// Geluf is (x * (1 + t)) * 0.5 with t = Tanhf(k * (x + ((c*x)*x)*x)).
func Geluf(x float32) float32 {
	cubic := float32(float32(float32(geluC*x)*x) * x)
	t := Tanhf(float32(geluK * (x + cubic)))
	return float32(float32(x*(1+t)) * 0.5)
}

// GeluBwdf is g * d with t as in Geluf, sech2 = 1 - t*t and
// d = ((1 + t) + ((x*sech2)*k) * (1 + ((3c)*x)*x)) * 0.5.
func GeluBwdf(x, g float32) float32 {
	cubic := float32(float32(float32(geluC*x)*x) * x)
	t := Tanhf(float32(geluK * (x + cubic)))
	sech2 := 1 - float32(t*t)
	inner := 1 + float32(float32(gelu3C*x)*x)
	d := float32(((1 + t) + float32(float32(float32(x*sech2)*geluK)*inner)) * 0.5)
	return float32(g * d)
}
