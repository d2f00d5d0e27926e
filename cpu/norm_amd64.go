//go:build amd64 && !noasm

package cpu

// layerNormRowsFast runs LayerNormFwd on rows [lo, hi) with layerNormRowsAVX512 when the kernel
// set in use is AVX-512's and reports whether it did. Each row is read from memory once: the mean
// fold, the centred-square fold (the 256 partials of each held in Z0-Z15, the tree in registers)
// and the affine pass run back to back on the row, which stays in the L1 cache; x - m is
// recomputed, not stored. Every operation is LayerNormFwd's, in its order (the same bits).
//
// Outputs of at least ntBytes (the vector kernels' rule) whose rows stay 64-byte aligned take
// non-temporal stores. Measured on this project's 2-vCPU Zen 4 through ops.LayerNormFwd at
// 4096 x 1024 (internal/bench/cpu-torch-norm.sh, medians of 60 calls, with other work running on
// the machine): 4.0-5.0 ms per call before (rowFold, rowSubSq storing x - m into out, NormAffine
// reading it back), 0.83-1.07 ms now, against PyTorch 1.13's 2.9-3.7 ms on 1 thread (6.6-8.0 ms on
// 2 under that load, 1.3-1.7 ms when the machine was quiet). Ordinary stores instead of the
// non-temporal ones: best 1.02 ms against 0.83 in interleaved runs. Software prefetches of the
// rows ahead (1 or 2 rows, 4-16 KiB ahead, in the affine loop: nothing beyond the noise at 256,
// 1024 and 4096 columns) and an affine loop of 8 lanes (Zen 4 divides 8 lanes faster than 16 in
// isolation, but the loop was no faster on rows in the cache) were left out.
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
