package cpu

import (
	"math"
	"testing"
)

func simdInputs(n int) (a, b []float32) {
	specials := []float32{0, float32(math.Copysign(0, -1)), 1, -1, 1e-40, 3.4e38, float32(math.Inf(1)), float32(math.NaN())}
	a, b = make([]float32, n), make([]float32, n)
	for i := range a {
		z := SplitMix64(uint64(i) + uint64(n)<<32)
		a[i] = math.Float32frombits(uint32(z))
		b[i] = math.Float32frombits(uint32(z >> 32))
		if i%5 == 0 {
			a[i] = specials[i%len(specials)]
		}
		if i%7 == 0 {
			b[i] = specials[(i/7)%len(specials)]
		}
	}
	return a, b
}

func sameBitsOrNaN(x, y float32) bool {
	return math.Float32bits(x) == math.Float32bits(y) || (x != x && y != y)
}

// TestSIMDMatchesScalar checks the assembly kernels (when the CPU has them) against the scalar
// definitions on random bit patterns and special values, at lengths that exercise the vector
// loop and the tail, and on outputs of more than 1 MiB, aligned (non-temporal stores) and not.
func TestSIMDMatchesScalar(t *testing.T) {
	for _, tc := range []struct{ n, off int }{{0, 0}, {1, 0}, {7, 0}, {8, 0}, {9, 0}, {31, 0}, {1000, 0}, {1<<18 + 9, 0}, {1<<18 + 9, 1}} {
		n := tc.n
		a, b := simdInputs(n)
		dst := make([]float32, n+tc.off)[tc.off:]
		check := func(name string, want func(i int) float32) {
			t.Helper()
			for i := range dst {
				if w := want(i); !sameBitsOrNaN(dst[i], w) {
					t.Fatalf("%s n=%d i=%d: got %#x, want %#x", name, n, i, math.Float32bits(dst[i]), math.Float32bits(w))
				}
			}
		}
		Add(dst, a, b)
		check("add", func(i int) float32 { return a[i] + b[i] })
		Sub(dst, a, b)
		check("sub", func(i int) float32 { return a[i] - b[i] })
		MulFwd(dst, a, b)
		check("mul", func(i int) float32 { return float32(a[i] * b[i]) })
		Scale(dst, a, -1.7)
		check("scale", func(i int) float32 { return float32(a[i] * -1.7) })
		ReluFwd(dst, a)
		check("relu", func(i int) float32 {
			if a[i] > 0 {
				return a[i]
			}
			return 0
		})
		SqrtFwd(dst, a)
		check("sqrt", func(i int) float32 { return Sqrtf(a[i]) })
		ReluBwd(dst, a, b)
		check("relu_bwd", func(i int) float32 {
			if a[i] > 0 {
				return b[i]
			}
			return 0
		})
		for _, c := range []float32{0.3, -1.7, 1e-30, float32(math.Inf(-1))} {
			Axpy(dst, a, b, c)
			check("axpy", func(i int) float32 { return Fmaf(c, b[i], a[i]) })
		}
	}
}
