package ptx

// Matmul is the batched matrix-product family (matmul.cu); MatmulTiny holds its entries with
// 32 x 32 output tiles (matmul_tiny.cu), for products of few outputs, and MatmulNarrow those with
// 128 x 64 tiles (matmul_narrow.cu), for products of 64 columns.
const (
	Matmul       Module = "matmul"
	MatmulTiny   Module = "matmul_tiny"
	MatmulNarrow Module = "matmul_narrow"
)

// Matmul kernels: C_t = op(A_t) · op(B_t) for t < batch, with op the identity (n) or the
// transpose (t) of the operand as stored, in four tile configurations (two in matmul.cu, one in
// matmul_tiny.cu, one in matmul_narrow.cu). Every entry takes
// (C, A, B, batch, m, n, p): three pointers, then four u64 sizes. See MatmulLaunch.
var (
	MatmulNN = newKernel(Matmul, "matmul_nn")
	MatmulNT = newKernel(Matmul, "matmul_nt")
	MatmulTN = newKernel(Matmul, "matmul_tn")
	MatmulTT = newKernel(Matmul, "matmul_tt")

	MatmulSmallNN = newKernel(Matmul, "matmul_s_nn")
	MatmulSmallNT = newKernel(Matmul, "matmul_s_nt")
	MatmulSmallTN = newKernel(Matmul, "matmul_s_tn")
	MatmulSmallTT = newKernel(Matmul, "matmul_s_tt")

	MatmulTinyNN = newKernel(MatmulTiny, "matmul_t_nn")
	MatmulTinyNT = newKernel(MatmulTiny, "matmul_t_nt")
	MatmulTinyTN = newKernel(MatmulTiny, "matmul_t_tn")
	MatmulTinyTT = newKernel(MatmulTiny, "matmul_t_tt")

	MatmulNarrowNN = newKernel(MatmulNarrow, "matmul_n_nn")
	MatmulNarrowNT = newKernel(MatmulNarrow, "matmul_n_nt")
	MatmulNarrowTN = newKernel(MatmulNarrow, "matmul_n_tn")
	MatmulNarrowTT = newKernel(MatmulNarrow, "matmul_n_tt")
)

// The tile configurations of matmul.cu, matmul_tiny.cu and matmul_narrow.cu: rows and columns
// of C per block, threads per block.
const (
	matmulLargeRows, matmulLargeCols, matmulLargeThreads    = 128, 128, 256 // matmul_*
	matmulSmallRows, matmulSmallCols, matmulSmallThreads    = 64, 128, 128  // matmul_s_*
	matmulTinyRows, matmulTinyCols, matmulTinyThreads       = 32, 32, 256   // matmul_t_*
	matmulNarrowRows, matmulNarrowCols, matmulNarrowThreads = 128, 64, 128  // matmul_n_*

	// matmulTinyBelow: products of fewer 64 x 128 (or, where those pad more, 128 x 64) tiles than
	// this take the 32 x 32 ones, which spread a small product over more multiprocessors (the
	// crossover measured on an H100: BENCHMARKS.md, "Figures behind the code").
	matmulTinyBelow = 36
)

// MatmulLaunch picks the kernel and launch geometry of the batched product
//
//	C_t = op(A_t) · op(B_t),  t < batch,
//
// where, row-major and contiguous per batch, A_t is (m, n) or, with transA, stored (n, m); B_t is
// (n, p) or, with transB, stored (p, n); C_t is (m, p). The batch strides are m*n, n*p and m*p
// elements. The kernel's parameters are exactly
//
//	(C, A, B *float32 as u64 device pointers, batch, m, n, p u64)
//
// and every C_t[i][j] is computed by one thread as
//
//	acc := float32(+0); for k := 0; k < n; k++ { acc = fma(a_ik, b_kj, acc) }; C_t[i][j] = acc
//
// with a single rounding per fma (n == 0 gives +0): the bits never depend on the kernel or the
// geometry chosen here, only on the inputs.
//
// Geometry: a 1-D grid of blocks over the batch * ceil(m/BM) * ceil(p/BN) output tiles (BM x BN
// the family's tile); block b computes tiles b, b + grid[0], b + 2*grid[0], ... (the kernels
// never rely on the grid covering the tiles exactly). The family is, in this order of choice:
//   - matmul_t_* (32 x 32 tiles, 256 threads, one block per tile) for products of fewer than
//     matmulTinyBelow (36) tiles of the next family, or else of the 64 x 128 tiles, which spreads
//     a small product over more multiprocessors;
//   - matmul_n_* (128 x 64 tiles, 128 threads, two blocks per multiprocessor) where its tiles
//     pad the product to at most 2/3 of the work of 64 x 128 ones (p = 64: half);
//   - matmul_* (128 x 128 tiles, 256 threads, one block per multiprocessor) when n > 256, there
//     are at least 256 such tiles and 128-row tiles pad m no more than 64-row ones;
//   - else matmul_s_* (64 x 128 tiles, 128 threads, two blocks per multiprocessor), which fills
//     the GPU better and is the faster of the two for short K.
//
// Each block of the last three takes one tile, or when n <= 256 tiles/256 of them (1 to 8), so
// that a tile's first loads overlap the previous tile's last step and stores. Tuned on an H100
// (132 multiprocessors; BENCHMARKS.md, "Figures behind the code"). Sizes of zero are fine: the grid is then one block with nothing to do.
// Static shared memory only (<= 48 KB).
func MatmulLaunch(batch, m, n, p int, transA, transB bool) (k *Kernel, grid, block [3]uint32) {
	which := 0
	if transA {
		which += 2
	}
	if transB {
		which++
	}
	b, mm, pp := uint64(max(batch, 0)), uint64(max(m, 0)), uint64(max(p, 0))
	tiles := func(rows, cols uint64) uint64 { return b * ceilDiv(mm, rows) * ceilDiv(pp, cols) }
	padded := func(rows, cols uint64) uint64 { return ceilDiv(mm, rows) * rows * ceilDiv(pp, cols) * cols }
	family := [4]*Kernel{MatmulSmallNN, MatmulSmallNT, MatmulSmallTN, MatmulSmallTT}
	t, threads := tiles(matmulSmallRows, matmulSmallCols), uint32(matmulSmallThreads)
	// 128 x 64 tiles only where they save a third of the work or more (p = 64: half), not where
	// they merely pad less: past a multiple of 128, large products run faster on 128 x 128 tiles.
	narrow := 3*padded(matmulNarrowRows, matmulNarrowCols) <= 2*padded(matmulSmallRows, matmulSmallCols)
	if narrow {
		family = [4]*Kernel{MatmulNarrowNN, MatmulNarrowNT, MatmulNarrowTN, MatmulNarrowTT}
		t, threads = tiles(matmulNarrowRows, matmulNarrowCols), matmulNarrowThreads
	}
	if t < matmulTinyBelow {
		family = [4]*Kernel{MatmulTinyNN, MatmulTinyNT, MatmulTinyTN, MatmulTinyTT}
		t = min(max(tiles(matmulTinyRows, matmulTinyCols), 1), 1<<31-1)
		return family[which], [3]uint32{uint32(t), 1, 1}, [3]uint32{matmulTinyThreads, 1, 1}
	}
	// The large tiles only where they pad m no further than the small ones (m = 64 in 128-row
	// tiles would halve their work: the dB = A^T·dC of a 64-column attention head).
	rowsFit := padded(matmulLargeRows, matmulLargeCols) == padded(matmulSmallRows, matmulSmallCols)
	if !narrow && n > 256 && rowsFit && tiles(matmulLargeRows, matmulLargeCols) >= 256 {
		family = [4]*Kernel{MatmulNN, MatmulNT, MatmulTN, MatmulTT}
		t, threads = tiles(matmulLargeRows, matmulLargeCols), matmulLargeThreads
	}
	perBlock := uint64(1)
	if n <= 256 {
		perBlock = min(max(t/256, 1), 8)
	}
	blocks := min(max(ceilDiv(t, perBlock), 1), 1<<31-1)
	return family[which], [3]uint32{uint32(blocks), 1, 1}, [3]uint32{threads, 1, 1}
}

func ceilDiv(a, b uint64) uint64 { return (a + b - 1) / b }
