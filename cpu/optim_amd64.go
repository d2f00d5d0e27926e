//go:build amd64 && !noasm

package cpu

import "github.com/klauspost/cpuid/v2"

// hasAdamAVX512 picks adamStep16 (optim_amd64.s): AdamStep's operations on 16 lanes, each the
// same correctly rounded IEEE operation as the Go loop (no fma), so the bits are the same.
var hasAdamAVX512 = cpuid.CPU.Supports(cpuid.AVX512F)

// adamStep16 runs AdamStep's loop body on the first n elements (n a multiple of 16); s holds
// beta1, omb1, beta2, omb2, stepSize, bc2Sqrt, eps, wd, decay; wd says whether to add wd*p.
//
//go:noescape
func adamStep16(param, m, v, grad *float32, n int, s *[9]float32, wd bool)

// adamFast runs the vector loop over the longest multiple of 16 elements it can and returns how
// many it did (0 without AVX-512).
func adamFast(param, m, v, grad []float32, s *[9]float32) int {
	n := len(param) &^ 15
	if !hasAdamAVX512 || n == 0 {
		return 0
	}
	adamStep16(&param[0], &m[0], &v[0], &grad[0], n, s, s[7] != 0)
	return n
}
