package cpu

import (
	"math"
	"testing"
)

var sink float32

// benchInputs returns 1024 inputs spread over [lo, hi].
func benchInputs(lo, hi float32) []float32 {
	xs := make([]float32, 1024)
	for i := range xs {
		f := float32(SplitMix64(uint64(i))>>40) / (1 << 24)
		xs[i] = lo + float32(f*(hi-lo))
	}
	return xs
}

func benchUnary(b *testing.B, f func(float32) float32, lo, hi float32) {
	xs := benchInputs(lo, hi)
	var s float32
	for i := 0; b.Loop(); i++ {
		s += f(xs[i&1023])
	}
	sink = s
}

func BenchmarkExp(b *testing.B)     { benchUnary(b, Expf, -80, 80) }
func BenchmarkExpm1(b *testing.B)   { benchUnary(b, Expm1f, -10, 10) }
func BenchmarkLog(b *testing.B)     { benchUnary(b, Logf, 1e-6, 1e6) }
func BenchmarkLog1p(b *testing.B)   { benchUnary(b, Log1pf, -0.9, 100) }
func BenchmarkTanh(b *testing.B)    { benchUnary(b, Tanhf, -5, 5) }
func BenchmarkSigmoid(b *testing.B) { benchUnary(b, Sigmoidf, -10, 10) }
func BenchmarkSqrt(b *testing.B)    { benchUnary(b, Sqrtf, 0, 1e6) }

func BenchmarkSinCos2Pi(b *testing.B) {
	xs := benchInputs(-1, 1)
	var s float32
	for i := 0; b.Loop(); i++ {
		x, y := SinCos2Pif(xs[i&1023])
		s += x + y
	}
	sink = s
}

func BenchmarkFMA(b *testing.B) {
	xs := benchInputs(-100, 100)
	var s float32
	for i := 0; b.Loop(); i++ {
		s += Fmaf(xs[i&1023], xs[(i+1)&1023], xs[(i+2)&1023])
	}
	sink = s
}

// Baselines: the float64 math package on the same inputs (not bit-compatible with the GPU).
func BenchmarkMathExp64(b *testing.B) {
	benchUnary(b, func(x float32) float32 { return float32(math.Exp(float64(x))) }, -80, 80)
}
func BenchmarkMathLog64(b *testing.B) {
	benchUnary(b, func(x float32) float32 { return float32(math.Log(float64(x))) }, 1e-6, 1e6)
}
