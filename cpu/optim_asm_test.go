//go:build amd64 && !noasm

package cpu

import (
	"math"
	"testing"
)

// The AVX-512 AdamStep gives the Go loop's bits: random values with specials (NaN, ±Inf, ±0,
// subnormals, huge and tiny), with and without the L2 term, over lengths around the 16-lane
// edges.
func TestAdamStepAVX512(t *testing.T) {
	if !hasAdamAVX512 {
		t.Skip("no AVX-512")
	}
	specials := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 0, float32(math.Copysign(0, -1)),
		1e-40, -1e-40, 3e38, -3e38, 1e-30, 1}
	val := func(seed uint64) float32 {
		z := SplitMix64(seed)
		if z%7 == 0 {
			return specials[(z>>8)%uint64(len(specials))]
		}
		return float32(math.Ldexp(float64(int32(z>>32))/(1<<31), int(z%40)-20))
	}
	for _, n := range []int{0, 1, 15, 16, 17, 31, 32, 33, 1000, 4099} {
		for _, wd := range []float32{0, 0.01} {
			decay := float32(1)
			if wd == 0 {
				decay = 0.999
			}
			var in [4][]float32
			for k := range in {
				in[k] = make([]float32, n)
				for i := range in[k] {
					in[k][i] = val(uint64(k)<<32 ^ uint64(i) ^ uint64(n)<<40)
				}
				if k == 2 { // v >= 0 except for specials
					for i, x := range in[k] {
						in[k][i] = float32(math.Abs(float64(x)))
					}
				}
			}
			run := func(asm bool) [3][]float32 {
				defer func(old bool) { hasAdamAVX512 = old }(hasAdamAVX512)
				hasAdamAVX512 = asm
				p, m, v := append([]float32(nil), in[0]...), append([]float32(nil), in[1]...), append([]float32(nil), in[2]...)
				AdamStep(p, m, v, in[3], 0.9, 0.1, 0.999, 0.001, 0.0031622, 0.0447, 1e-8, wd, decay)
				return [3][]float32{p, m, v}
			}
			want, got := run(false), run(true)
			for k := range want {
				for i := range want[k] {
					w, g := want[k][i], got[k][i]
					if math.Float32bits(w) != math.Float32bits(g) && !(w != w && g != g) {
						t.Fatalf("n=%d wd=%v output %d element %d: AVX-512 %v (%#x), Go %v (%#x)",
							n, wd, k, i, g, math.Float32bits(g), w, math.Float32bits(w))
					}
				}
			}
		}
	}
}
