//go:build amd64 && !noasm

package cpu

// layerNormRowsFast runs LayerNormFwd on rows [lo, hi) with layerNormRowsAVX512 when the kernel
// set in use is AVX-512's and reports whether it did. Each row is read from memory once: the mean
// fold, the centred-square fold (the 256 partials of each held in Z0-Z15, the tree in registers)
// and the affine pass run back to back on the row, which stays in the L1 cache; x - m is
// recomputed, not stored. Every operation is LayerNormFwd's, in its order (the same bits).
//
// Outputs of at least ntBytes (the vector kernels' rule) whose rows stay 64-byte aligned take
// non-temporal stores (faster than ordinary ones; software prefetches and an 8-lane affine loop
// gained nothing: BENCHMARKS.md, "Figures behind the code").
func layerNormRowsFast(out, mean, sd, x, gamma, beta []float32, cols int, invCols, eps float32, lo, hi int) bool {
	if !hasAVX512Level() || hi <= lo || cols <= 0 {
		return false
	}
	// masks[k] selects the lanes of Z(k) that the last, partial chunk of cols mod 256 elements
	// reaches (all clear when cols is a multiple of 256); masks[16] the last cols mod 16 columns.
	var masks [17]uint16
	r := cols % rowThreads
	for k := range 16 {
		masks[k] = uint16(1<<min(max(r-16*k, 0), 16) - 1)
	}
	masks[16] = uint16(1<<(cols%16) - 1)
	n := (hi - lo) * cols
	out, x = out[lo*cols:][:n], x[lo*cols:][:n]
	mean, sd, gamma, beta = mean[lo:hi], sd[lo:hi], gamma[:cols], beta[:cols]
	layerNormRowsAVX512(&out[0], &mean[0], &sd[0], &x[0], &gamma[0], &beta[0], &masks, hi-lo, cols, invCols, eps,
		4*n >= ntBytes && cols%16 == 0)
	return true
}

// ntBytes: outputs of at least this many bytes take non-temporal stores (the vector kernels'
// threshold, cpu/internal/vecgen).
const ntBytes = 1 << 20

//go:noescape
func layerNormRowsAVX512(out, mean, sd, x, gamma, beta *float32, masks *[17]uint16, rows, cols int, invCols, eps float32, nt bool)
