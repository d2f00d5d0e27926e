//go:build amd64 && !noasm

package cpu

// The AVX-512 kernels of attention_amd64.s: attnDots16 and attnAxpy16 with one 16-lane vector per
// tile column, VMULPS and VADDPS (never an fma), each lane's chain in the Go loops' order, so the
// bits are the pure-Go loops'. Used when the kernel set in use is AVX-512's (hasAVX512Level).

//go:noescape
func attnDots16AVX512(out, xt, y *float32, n, d int)

//go:noescape
func attnAxpy16AVX512(acc, alpha, p *float32, masks *uint16, y *float32, n, d int)

// attnDots16Fast runs attnDots16 (n, d >= 1, slices of the exact lengths) with AVX-512 and reports
// true, or does nothing and reports false.
func attnDots16Fast(out, xt, y []float32, n, d int) bool {
	if !hasAVX512Level() {
		return false
	}
	attnDots16AVX512(&out[0], &xt[0], &y[0], n, d)
	return true
}

// attnAxpy16Fast runs attnAxpy16 (d >= 1, slices of the exact lengths) with AVX-512 and reports
// true, or does nothing and reports false.
func attnAxpy16Fast(acc, alpha, p []float32, masks []uint16, y []float32, n, d int) bool {
	if !hasAVX512Level() {
		return false
	}
	var ap *float32
	if alpha != nil {
		ap = &alpha[0]
	}
	if n == 0 {
		if ap == nil {
			return true
		}
		attnAxpy16AVX512(&acc[0], ap, nil, nil, nil, 0, d)
		return true
	}
	attnAxpy16AVX512(&acc[0], ap, &p[0], &masks[0], &y[0], n, d)
	return true
}
