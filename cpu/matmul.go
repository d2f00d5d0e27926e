package cpu

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Batched matrix product: the twin of ptx/matmul.cu and ptx/matmul_tiny.cu (the GPU's tile
// families share one arithmetic, so one twin serves them all).

// Bmm computes C_t = op(A_t) · op(B_t) for t < batch. Logically A_t is (m, n), B_t is (n, p) and
// C_t is (m, p), each row-major and contiguous, the batch strides m*n, n*p and m*p. transA means
// A_t is stored (n, m) row-major, transB means B_t is stored (p, n) row-major. c is fully
// overwritten (its first batch*m*p elements); a and b are only read. Every output has one
// owner and exactly this arithmetic (Fmaf is the single-rounding float32 fma, the GPU's
// __fmaf_rn):
//
//	a_ik = transA ? a[t*m*n + k*m + i] : a[t*m*n + i*n + k]
//	b_kj = transB ? b[t*n*p + j*n + k] : b[t*n*p + k*p + j]
//	acc := float32(+0)
//	for k := 0; k < n; k++ {
//		acc = Fmaf(a_ik, b_kj, acc) // k strictly ascending, one rounding per step
//	}
//	c[t*m*p + i*p + j] = acc        // a NaN is stored as CanonicalNaN, as Fmaf returns it
//
// n == 0 gives +0 everywhere. The work is split over up to GOMAXPROCS goroutines into whole
// rectangles of C (whole matrices, or one row or column chunk per goroutine), each computed by
// one goroutine, so the split never changes a result; concurrent calls are safe. On amd64 a
// register-blocked assembly kernel (AVX-512 14x32 or AVX2+FMA 6x16, picked with cpuid;
// VFMADD231PS is one fma per lane and step) runs over packed panels of A and B in cache blocks
// of gemmKC steps: a later K block reloads the float32 accumulators the previous one stored,
// so blocking adds no rounding and no reordering, and K is never padded. Elsewhere, and with
// -tags noasm, the loop above runs as written (bmmGo).
//
// Bmm panics when a size is negative or a slice is shorter than its batch of matrices.
func Bmm(c, a, b []float32, batch, m, n, p int, transA, transB bool) {
	if batch < 0 || m < 0 || n < 0 || p < 0 {
		panic("cpu: Bmm: negative size")
	}
	if !fits(len(a), batch, m, n) || !fits(len(b), batch, n, p) || !fits(len(c), batch, m, p) {
		panic("cpu: Bmm: slice shorter than batch*size")
	}
	if batch == 0 || m == 0 || p == 0 {
		return
	}
	if n == 0 {
		clear(c[:batch*m*p])
		return
	}
	k := gemmActive
	mr, nr := 1, 1
	if k != nil {
		mr, nr = k.mr, k.nr
	}
	// Work items: (matrix t, row chunk, column chunk) rectangles of C, each computed whole by
	// one goroutine (packing its own panels). Whole matrices when the batch keeps every worker
	// busy; otherwise each matrix is cut into one chunk per worker, by rows (every worker packs
	// all of B) or by columns (all of A), whichever costs less by gemmSplitCost.
	workers := runtime.GOMAXPROCS(0)
	if minWork := gemmMinParallel; k == nil && batch*m*n*p < minWork>>6 || k != nil && batch*m*n*p < minWork {
		workers = 1 // less work than starting a goroutine is worth
	}
	rowChunk, colChunk := m, p
	if workers > 1 && batch%workers != 0 && batch < 4*workers {
		tr, tc := ceilDiv(m, mr), ceilDiv(p, nr)
		rowT, colT := ceilDiv(tr, workers), ceilDiv(tc, workers)
		if k == nil || gemmSplitCost(k, rowT*tc, rowT*mr, p, n, transA, transB) <= gemmSplitCost(k, tr*colT, m, colT*nr, n, transA, transB) {
			rowChunk = rowT * mr
		} else {
			colChunk = colT * nr
		}
	}
	nRow, nCol := ceilDiv(m, rowChunk), ceilDiv(p, colChunk)
	per := nRow * nCol
	item := func(it int, s *gemmScratch) {
		t, q := it/per, it%per
		r0, c0 := (q/nCol)*rowChunk, (q%nCol)*colChunk
		r1, c1 := min(m, r0+rowChunk), min(p, c0+colChunk)
		ct, at, bt := c[t*m*p:(t+1)*m*p], a[t*m*n:(t+1)*m*n], b[t*n*p:(t+1)*n*p]
		if k != nil {
			gemmBlocked(k, s, ct, at, bt, m, n, p, r0, r1, c0, c1, transA, transB)
		} else {
			bmmGo(ct, at, bt, m, n, p, r0, r1, c0, c1, transA, transB)
		}
	}
	if workers == 1 {
		s := gemmPool.Get().(*gemmScratch)
		for it := range batch * per {
			item(it, s)
		}
		gemmPool.Put(s)
		return
	}
	gemmParallel(batch*per, workers, item)
}

// gemmSplitCost estimates, in cycles, one worker's share of a Bmm: tiles register tiles of n
// steps (mr*nr/(2*lanes) cycles per step at two vector fmas per cycle) and packing rows x n of
// A and n x cols of B (about 1.5 cycles per element for a transposing pack, 1 for a copy).
func gemmSplitCost(k *gemmKernel, tiles, rows, cols, n int, transA, transB bool) float64 {
	packA, packB := 1.5, 1.0
	if transA {
		packA = 1.0
	}
	if transB {
		packB = 1.5
	}
	steps := float64(float64(tiles*k.mr*k.nr) * float64(n))
	a := float64(packA * float64(float64(rows)*float64(n)))
	b := float64(packB * float64(float64(cols)*float64(n)))
	return steps/float64(2*k.lanes) + a + b
}

// gemmJob is one parallel Bmm call: items claimed one at a time by the caller and by helper
// goroutines. An item is claimed once and computed whole, so the split of the work never
// depends on who runs it; the goroutine that finishes the last item closes fin.
type gemmJob struct {
	next, done atomic.Int64
	n          int64
	run        func(it int, s *gemmScratch)
	fin        chan struct{}
}

// work runs items until none is left to claim.
func (j *gemmJob) work() {
	var s *gemmScratch
	for {
		it := j.next.Add(1) - 1
		if it >= j.n {
			break
		}
		if s == nil {
			s = gemmPool.Get().(*gemmScratch)
		}
		j.run(int(it), s)
		if j.done.Add(1) == j.n {
			close(j.fin)
		}
	}
	if s != nil {
		gemmPool.Put(s)
	}
}

// gemmMinParallel is the number of fma steps (batch*m*n*p) below which Bmm's assembly path runs
// on the calling goroutine alone (the pure-Go path: 64 times fewer). A variable for tests.
var gemmMinParallel = 1 << 20

// gemmWaitSpin is how long the caller polls for the helpers' last items before it blocks.
var gemmWaitSpin = 50 * time.Microsecond

// gemmParallel runs run(it, scratch) for it in [0, items) on the caller and workers-1 new
// goroutines, and returns when all are done. The caller never waits for a helper that has not
// started yet (waking an idle thread can take tens of microseconds, e.g. a VM's idle vCPU): it
// claims every item nobody else has, and a helper that starts late finds nothing to do.
func gemmParallel(items, workers int, run func(it int, s *gemmScratch)) {
	j := &gemmJob{n: int64(items), run: run, fin: make(chan struct{})}
	for range min(workers, items) - 1 {
		go j.work()
	}
	j.work()
	if j.done.Load() < j.n {
		for until := time.Now().Add(gemmWaitSpin); j.done.Load() < j.n && time.Now().Before(until); {
			runtime.Gosched()
		}
		<-j.fin
	}
}

// bmmGo is the contract of Bmm as plain Go for rows [r0, r1) and columns [c0, c1) of one
// matrix: each output starts at +0 and takes its Fmaf steps in ascending k.
func bmmGo(c, a, b []float32, m, n, p, r0, r1, c0, c1 int, transA, transB bool) {
	for i := r0; i < r1; i++ {
		crow := c[i*p+c0 : i*p+c1]
		clear(crow)
		for k := 0; k < n; k++ {
			var aik float32
			if transA {
				aik = a[k*m+i]
			} else {
				aik = a[i*n+k]
			}
			if transB {
				for j := range crow {
					crow[j] = Fmaf(aik, b[(c0+j)*n+k], crow[j])
				}
			} else {
				brow := b[k*p+c0 : k*p+c1]
				for j, bv := range brow {
					crow[j] = Fmaf(aik, bv, crow[j])
				}
			}
		}
	}
}

// gemmKernel is an assembly micro-kernel computing one mr x nr tile of C from packed panels:
// ap holds kc steps of mr elements of A (ap[k*mr+i] = A(i, k)), bp kc steps of nr elements of B
// (bp[k*nr+j] = B(k, j)); c is the tile's top-left element, ldc the row stride of C. Every lane
// of the tile starts at +0 (load false) or at the value in C (load true) and takes kc fma steps
// in ascending k; the tile is stored back with NaN made CanonicalNaN.
type gemmKernel struct {
	name   string
	mr, nr int
	lanes  int // float32 lanes per vector register
	fn     func(kc int, ap, bp, c *float32, ldc int, load bool)
	// fs and fr, where not nil, are fn over operands read in place, with the same arithmetic
	// (the same fma per lane and step, k ascending); only where A and B are read differs.
	// Strides are in bytes. Both read B(k, j) at bp + k*bks + 4j. fs reads A(i, k) at ap +
	// k*aks + 4i (a packed panel: aks = 4*mr; a transposed A read in place: aks = 4*m); fr
	// reads A(i, k) at ap + i*4*lda + 4k (a row-major A read in place, lda its row length).
	fs func(kc int, ap, bp, c *float32, ldc, aks, bks int, load bool)
	fr func(kc int, ap, bp, c *float32, ldc, lda, bks int, load bool)
	// fi, where not nil, is fn with B read through a table of step offsets: B(k, j) at bp +
	// boff[k] + 4j (bytes), A packed as for fn. A stride-1 convolution reads its patches so,
	// straight from a zero-padded copy of its input (see shiftConv).
	fi func(kc int, ap, bp, c *float32, ldc int, boff *int, load bool)
	// fss, where not nil, is fs over nseg segments of kc steps, segment s reading A from ap +
	// segs[2s] and B from bp + segs[2s+1] (bytes), the accumulators kept from one segment to
	// the next: K runs along runs of A and B that lie apart (a convolution's weight gradient
	// reads its output rows so, see convBwdWeightShift).
	fss func(kc int, ap, bp, c *float32, ldc, aks, bks int, segs *int, nseg int, load bool)
}

// gemmActive is the kernel Bmm uses (nil: bmmGo); gemmKernels lists the ones this CPU runs,
// best first. Both are set once at init (tests switch gemmActive with setGemmKernel).
var (
	gemmKernels []*gemmKernel
	gemmActive  *gemmKernel
)

// Cache blocking: gemmKC steps of K per packed panel (a B micro-panel of gemmKC x nr floats
// stays in L1), at most gemmMC rows of A per packed block (in L2), at most gemmNC columns of B
// per packed block. Variables so that tests can shrink them to reach every block edge cheaply.
var (
	gemmKC = 256
	gemmMC = 448
	gemmNC = 4096
)

// BmmKernel names the code path Bmm runs: "avx512", "avx2" or "go".
func BmmKernel() string {
	if k := gemmActive; k != nil {
		return k.name
	}
	return "go"
}

// setGemmKernel makes Bmm use the named kernel ("go": the pure-Go path) and reports whether this
// CPU has it; restore puts the previous one back. For tests and benchmarks only: not safe while
// Bmm runs.
func setGemmKernel(name string) (restore func(), ok bool) {
	prev := gemmActive
	restore = func() { gemmActive = prev }
	if name == "go" {
		gemmActive = nil
		return restore, true
	}
	for _, k := range gemmKernels {
		if k.name == name {
			gemmActive = k
			return restore, true
		}
	}
	return restore, false
}

type gemmScratch struct{ a, b, tile []float32 }

var gemmPool = sync.Pool{New: func() any { return new(gemmScratch) }}

func growF32(s []float32, n int) []float32 {
	if cap(s) < n {
		return make([]float32, n)
	}
	return s[:n]
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
func roundUp(a, b int) int { return ceilDiv(a, b) * b }

// gemmBlocked computes rows [r0, r1) and columns [c0, c1) of one C = op(A) · op(B) with kernel
// k, BLIS style: for each block of columns, for each K block, pack B; for each block of rows,
// pack A; then run the micro-kernel over the tiles. Tiles that stick out of the rectangle run
// on a scratch tile (rows and columns of A and B past it packed as zeros; their outputs are
// discarded), so the arithmetic of every kept output is exactly that of a full tile. K is never
// padded.
//
// Where the kernel reads operands in place (k.fs, k.fr) and gemmInPlace allows it, whole panels
// of A (either layout) and of an untransposed B are read where they lie instead of packed;
// only the panels cut by the rectangle's edge are packed. The micro-kernel takes the same
// values in the same order either way, so the bits are those of the packed path.
func gemmBlocked(k *gemmKernel, s *gemmScratch, c, a, b []float32, m, n, p, r0, r1, c0, c1 int, transA, transB bool) {
	mr, nr := k.mr, k.nr
	kcMax := min(gemmKC, n)
	rows, cols := r1-r0, c1-c0
	mc := roundUp(ceilDiv(rows, ceilDiv(rows, gemmMC)), mr)
	nc := roundUp(ceilDiv(cols, ceilDiv(cols, gemmNC)), nr)
	directA, directB := gemmInPlace(k, m, n, p, cols, transA, transB)
	s.a = growF32(s.a, mc*kcMax)
	s.b = growF32(s.b, nc*kcMax)
	s.tile = growF32(s.tile, mr*nr)
	tile := s.tile
	for jc := c0; jc < c1; jc += nc {
		ncb := min(nc, c1-jc)
		fullB := 0 // columns [jc, jc+fullB) read in place, the rest packed from s.b[0]
		if directB {
			fullB = ncb / nr * nr
		}
		for pc := 0; pc < n; pc += kcMax {
			kc := min(kcMax, n-pc)
			load := pc > 0
			if fullB < ncb {
				packB(s.b, b, n, p, pc, kc, jc+fullB, ncb-fullB, nr, transB)
			}
			for ic := r0; ic < r1; ic += mc {
				mcb := min(mc, r1-ic)
				fullA := 0 // rows [ic, ic+fullA) read in place, the rest packed from s.a[0]
				if directA {
					fullA = mcb / mr * mr
				}
				if fullA < mcb {
					packA(s.a, a, m, n, ic+fullA, mcb-fullA, pc, kc, mr, transA)
				}
				for jr := 0; jr < ncb; jr += nr {
					var bp *float32
					bks := 4 * nr
					if jr < fullB {
						last := (pc+kc-1)*p + jc + jr + nr - 1
						_ = b[last]
						bp, bks = &b[pc*p+jc+jr], 4*p
					} else {
						bp = &s.b[(jr-fullB)*kc]
					}
					w := min(nr, ncb-jr)
					for ir := 0; ir < mcb; ir += mr {
						h := min(mr, mcb-ir)
						ci := (ic+ir)*p + jc + jr
						dst, ldc := &tile[0], nr
						if h == mr && w == nr {
							_ = c[ci+(mr-1)*p+nr-1]
							dst, ldc = &c[ci], p
						} else if load {
							for r := 0; r < h; r++ {
								copy(tile[r*nr:r*nr+w], c[ci+r*p:ci+r*p+w])
							}
						}
						switch {
						case ir < fullA && transA: // A(i, k) = a[k*m+i]
							i0 := ic + ir
							_ = a[(pc+kc-1)*m+i0+mr-1]
							k.fs(kc, &a[pc*m+i0], bp, dst, ldc, 4*m, bks, load)
						case ir < fullA: // A(i, k) = a[i*n+k]
							i0 := ic + ir
							_ = a[(i0+mr-1)*n+pc+kc-1]
							k.fr(kc, &a[i0*n+pc], bp, dst, ldc, n, bks, load)
						case jr < fullB:
							k.fs(kc, &s.a[(ir-fullA)*kc], bp, dst, ldc, 4*mr, bks, load)
						default:
							k.fn(kc, &s.a[(ir-fullA)*kc], bp, dst, ldc, load)
						}
						if dst == &tile[0] {
							for r := 0; r < h; r++ {
								copy(c[ci+r*p:ci+r*p+w], tile[r*nr:r*nr+w])
							}
						}
					}
				}
			}
		}
	}
}

// gemmInPlace reports whether gemmBlocked reads whole panels of A and of B in place rather
// than packing them: only with a kernel that can (fs and fr). Measured on the FNO-1D step's
// products (BenchmarkBmmInPlace), reading in place wins where the strides are short and loses
// where they are long, and a packed A pays for itself when many column tiles reuse it, so: A
// in place when the rectangle has at most 8 column tiles (cols) and the stride between its
// streams (a row of A, or of Aᵀ) is not a multiple of 1 KiB (they would share a few L1 sets,
// 4 KiB apart); B, never stored
// transposed (a panel's nr columns would be nr strided streams), in place when its rows are at
// most 1 KiB apart (a K block of a panel spans at most 256 KiB). gemmInPlaceOff turns it off
// (tests and benchmarks compare both paths).
func gemmInPlace(k *gemmKernel, m, n, p, cols int, transA, transB bool) (directA, directB bool) {
	if k.fs == nil || k.fr == nil || gemmInPlaceOff {
		return false, false
	}
	lda := n
	if transA {
		lda = m
	}
	return cols <= 8*k.nr && gcd(4*lda, 4096) <= 512, !transB && 4*p <= 1024
}

// gemmInPlaceOff makes gemmBlocked pack every panel (the path before in-place reads). For tests
// and benchmarks only: not safe while Bmm runs.
var gemmInPlaceOff bool

// gcd is the greatest common divisor of a, b > 0.
func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// packA writes rows [i0, i0+rows) and steps [k0, k0+kc) of A as panels of mr rows: panel q at
// dst[q*mr*kc:], element (i, k) of the panel at [k*mr+i]; rows past i0+rows are zeros.
func packA(dst, a []float32, m, n, i0, rows, k0, kc, mr int, transA bool) {
	for q := 0; q < rows; q += mr {
		h := min(mr, rows-q)
		d := dst[q*kc : (q+mr)*kc]
		if transA { // A(i, k) = a[k*m+i]: a copy per step
			for k := 0; k < kc; k++ {
				row := d[k*mr : k*mr+mr]
				copy(row[:h], a[(k0+k)*m+i0+q:])
				clear(row[h:])
			}
			continue
		}
		packRows(d, a[(i0+q)*n+k0:], n, kc, mr, h) // A(i, k) = a[i*n+k]
	}
}

// packRows packs h rows of src (row stride ld, kc values each) as one panel of mr rows:
// d[k*mr + i] = src[i*ld + k], rows h to mr zero (packT14 and packT6 for the micro-kernels'
// full panels, packT otherwise).
func packRows(d, src []float32, ld, kc, mr, h int) {
	switch {
	case h == 14 && mr == 14:
		packT14(d, src, ld, kc)
	case h == 6 && mr == 6:
		packT6(d, src, ld, kc)
	default:
		packT(d, src, ld, kc, mr, h)
	}
}

// packT14 is packT for w = h = 14 in one pass.
func packT14(d, src []float32, ld, kc int) {
	r0 := src[:kc]
	r1, r2, r3 := src[ld:][:len(r0)], src[2*ld:][:len(r0)], src[3*ld:][:len(r0)]
	r4, r5, r6 := src[4*ld:][:len(r0)], src[5*ld:][:len(r0)], src[6*ld:][:len(r0)]
	r7, r8, r9 := src[7*ld:][:len(r0)], src[8*ld:][:len(r0)], src[9*ld:][:len(r0)]
	r10, r11, r12 := src[10*ld:][:len(r0)], src[11*ld:][:len(r0)], src[12*ld:][:len(r0)]
	r13 := src[13*ld:][:len(r0)]
	d = d[:14*len(r0)]
	for k := range r0 {
		o := (*[14]float32)(d[14*k:])
		o[0], o[1], o[2], o[3], o[4], o[5], o[6] = r0[k], r1[k], r2[k], r3[k], r4[k], r5[k], r6[k]
		o[7], o[8], o[9], o[10], o[11], o[12], o[13] = r7[k], r8[k], r9[k], r10[k], r11[k], r12[k], r13[k]
	}
}

// packT6 is packT for w = h = 6 in one pass.
func packT6(d, src []float32, ld, kc int) {
	r0 := src[:kc]
	r1, r2, r3 := src[ld:][:len(r0)], src[2*ld:][:len(r0)], src[3*ld:][:len(r0)]
	r4, r5 := src[4*ld:][:len(r0)], src[5*ld:][:len(r0)]
	d = d[:6*len(r0)]
	for k := range r0 {
		o := (*[6]float32)(d[6*k:])
		o[0], o[1], o[2], o[3], o[4], o[5] = r0[k], r1[k], r2[k], r3[k], r4[k], r5[k]
	}
}

// packB writes steps [k0, k0+kc) and columns [j0, j0+cols) of B as panels of nr columns: panel q
// at dst[q*nr*kc:], element (k, j) of the panel at [k*nr+j]; columns past j0+cols are zeros.
func packB(dst, b []float32, n, p, k0, kc, j0, cols, nr int, transB bool) {
	if transB { // B(k, j) = b[j*n+k]
		for q := 0; q < cols; q += nr {
			packT(dst[q*kc:(q+nr)*kc], b[(j0+q)*n+k0:], n, kc, nr, min(nr, cols-q))
		}
		return
	}
	// B(k, j) = b[k*p+j]: row k of B goes to step k of every panel.
	full := cols / nr * nr
	for k := 0; k < kc; k++ {
		src := b[(k0+k)*p+j0 : (k0+k)*p+j0+cols]
		q := 0
		switch nr {
		case 32:
			for ; q < full; q += 32 {
				*(*[32]float32)(dst[q*kc+k*32:]) = *(*[32]float32)(src[q:])
			}
		case 16:
			for ; q < full; q += 16 {
				*(*[16]float32)(dst[q*kc+k*16:]) = *(*[16]float32)(src[q:])
			}
		default:
			for ; q < full; q += nr {
				copy(dst[q*kc+k*nr:q*kc+k*nr+nr], src[q:q+nr])
			}
		}
		if q < cols {
			row := dst[q*kc+k*nr : q*kc+k*nr+nr]
			copy(row, src[q:])
			clear(row[cols-q:])
		}
	}
}

// packT transposes h rows of kc elements (row i at src[i*ld:]) into a panel of width w >= h:
// d[k*w+i] = src[i*ld+k], zeros for h <= i < w. Eight rows at a time (each step writing eight
// consecutive floats), then four, two, one.
func packT(d, src []float32, ld, kc, w, h int) {
	d = d[:kc*w]
	i := 0
	for ; i+8 <= h; i += 8 {
		k0 := 0 // 8x8 blocks through AVX registers where the CPU has it
		if kc8 := kc &^ 7; transposeStrip8(d[i:], w, src[i*ld:], ld, kc8) {
			k0 = kc8
		}
		r0 := src[i*ld : i*ld+kc]
		r1, r2, r3 := src[(i+1)*ld:][:len(r0)], src[(i+2)*ld:][:len(r0)], src[(i+3)*ld:][:len(r0)]
		r4, r5, r6 := src[(i+4)*ld:][:len(r0)], src[(i+5)*ld:][:len(r0)], src[(i+6)*ld:][:len(r0)]
		r7 := src[(i+7)*ld:][:len(r0)]
		for k := k0; k < len(r0); k++ {
			o := (*[8]float32)(d[k*w+i:])
			o[0], o[1], o[2], o[3], o[4], o[5], o[6], o[7] = r0[k], r1[k], r2[k], r3[k], r4[k], r5[k], r6[k], r7[k]
		}
	}
	if i+4 <= h {
		r0 := src[i*ld : i*ld+kc]
		r1, r2, r3 := src[(i+1)*ld:][:len(r0)], src[(i+2)*ld:][:len(r0)], src[(i+3)*ld:][:len(r0)]
		for k := range r0 {
			o := (*[4]float32)(d[k*w+i:])
			o[0], o[1], o[2], o[3] = r0[k], r1[k], r2[k], r3[k]
		}
		i += 4
	}
	for ; i+2 <= h; i += 2 {
		r0 := src[i*ld : i*ld+kc]
		r1 := src[(i+1)*ld:][:len(r0)]
		for k := range r0 {
			o := (*[2]float32)(d[k*w+i:])
			o[0], o[1] = r0[k], r1[k]
		}
	}
	if i < h {
		for k, v := range src[i*ld : i*ld+kc] {
			d[k*w+i] = v
		}
		i++
	}
	if i < w {
		for k := 0; k < kc; k++ {
			clear(d[k*w+i : k*w+w])
		}
	}
}

// fits reports whether the product of the non-negative dims is at most n (without overflow).
func fits(n int, dims ...int) bool {
	p := 1
	for _, d := range dims {
		if d == 0 {
			return true
		}
	}
	for _, d := range dims {
		if d > n/p {
			return false
		}
		p *= d
	}
	return p <= n
}
