package cpu

import "math"

// Row softmax kernels: the twins of ptx/softmax.cu. Each processes rows r in [lo, hi) of a
// row-major (rows, cols) buffer. A row statistic is folded as the GPU's 256-thread block does:
// partial t takes the elements t, t+256, ... in order, then the halving tree combines them; the
// log-softmax sums of long rows cut each partial's chain into parts (longRowPart).

// rowStat folds f over val(c) for the columns c < cols where keep is nil or keep(c) holds, as a
// 256-thread block does: partial t = c mod 256 folds its elements in order from id, then the
// halving tree p[t] = f(p[t], p[t+s]), s = 128, ..., 1, combines the partials.
func rowStat(p *[rowThreads]float32, cols int, id float32, keep func(c int) bool, val func(c int) float32,
	f func(a, b float32) float32) float32 {
	for t := range p {
		p[t] = id
	}
	for c := 0; c < cols; c++ {
		if keep == nil || keep(c) {
			t := c % rowThreads
			p[t] = f(p[t], val(c))
		}
	}
	for s := rowThreads / 2; s >= 1; s /= 2 {
		for t := 0; t < s; t++ {
			p[t] = f(p[t], p[t+s])
		}
	}
	return p[0]
}

var negInf = float32(math.Inf(-1))

// softmaxRows computes, per row, m = max over kept x (Maxf, from -Inf), s = sum over kept
// Expf(x - m) (from -0.0), and then the output of the kind:
// 0 softmax Expf(x - m) / s; 1 log-softmax (x - m) - Logf(s);
// 2 masked softmax: mask != 0 && s != 0 ? Expf(x - m) / s : 0.
func softmaxRows(kind int, dst, x, mask []float32, cols, lo, hi int) {
	var p, q [rowThreads]float32
	if kind != 2 {
		for r := lo; r < hi; r++ {
			softmaxRow(kind, &p, &q, dst[r*cols:(r+1)*cols], x[r*cols:(r+1)*cols])
		}
		return
	}
	for r := lo; r < hi; r++ { // masked softmax
		xr, mr := x[r*cols:(r+1)*cols], mask[r*cols:(r+1)*cols]
		keep := func(c int) bool { return mr[c] != 0 }
		m := rowStat(&p, cols, negInf, keep, func(c int) float32 { return xr[c] }, Maxf)
		s := rowStat(&p, cols, negZero, keep, func(c int) float32 { return Expf(xr[c] - m) }, add)
		out := dst[r*cols : (r+1)*cols]
		for c := range out {
			var y float32
			if mr[c] != 0 && s != 0 {
				y = Expf(xr[c]-m) / s
			}
			out[c] = y
		}
	}
}

// softmaxRow is softmaxRows for one row of kinds 0 and 1 without closures: the row max, then
// out = Expf(x - m), the sum of out in rowStat's order (log-softmax: with each partial's chain cut
// into parts of longRowPart elements, rowSumParts; q is its scratch), and the division (softmax)
// or (x - m) - Logf(s) (log-softmax). The elementwise steps run on the vector kernels (ExpSub,
// Sub, DivFwd: same bits), Sub and DivFwd against p filled with the row's scalar.
func softmaxRow(kind int, p, q *[rowThreads]float32, out, xr []float32) {
	m := rowFold(p, xr, true)
	ExpSub(out, xr, m)
	if kind == 1 {
		s := rowSumParts(p, q, out, longRowPart(len(xr)))
		chunks(p, m, Sub, out, xr)
		chunks(p, Logf(s), Sub, out, out)
		return
	}
	chunks(p, rowFold(p, out, false), DivFwd, out, out)
}

// longRowCols is the longest row of the GPU's long-row engine (ptx/rowstat.cuh): 256 * SM_LONG *
// SM_LONG_GROUPS elements.
const longRowCols = rowThreads * 32 * 4

// longRowPart returns the number of elements per partial in each part of a log-softmax row sum
// of cols elements: jl = ceil(cols/256) elements per partial, and rows of
// 256 * 32 < cols <= longRowCols, which the GPU holds in the registers of nq = ceil(jl/32) groups
// of 256 threads, cut each partial's chain into the groups' parts of jq = ceil(jl/nq) elements
// (the last one shorter). Other rows have one part of jl elements.
func longRowPart(cols int) int {
	jl := (cols + rowThreads - 1) / rowThreads
	if cols > longRowCols {
		return jl
	}
	nq := max(1, (jl+31)/32)
	return (jl + nq - 1) / nq
}

// rowSumParts is rowFold's sum with each partial's chain cut into parts of jq elements: the
// row's segments of 256 jq elements are folded from -0.0 each (partials in q) and added to the
// partials p in order (p = part 0; p = p + part i), then the halving tree.
func rowSumParts(p, q *[rowThreads]float32, row []float32, jq int) float32 {
	seg := rowThreads * max(jq, 1)
	if len(row) <= seg { // one segment: rowFold's sum
		return rowFold(p, row, false)
	}
	rowPartials(p, row[:seg], false)
	for base := seg; base < len(row); base += seg {
		rowPartials(q, row[base:min(len(row), base+seg)], false)
		Add(p[:], p[:], q[:])
	}
	return rowTree(p, false, len(row))
}

// ExpSub: dst = Expf(x - c) (the subtraction rounded, then Expf), the exponentials of a softmax
// row in one pass.
func ExpSub(dst, x []float32, c float32) {
	x = x[:len(dst)]
	for i := vecRun(vkExpSub, dst, nil, x, nil, nil, c, 0); i < len(dst); i++ {
		dst[i] = Expf(x[i] - c)
	}
}

// chunks fills p with v and runs f(out, x, p) over the rows' 256-element chunks.
func chunks(p *[rowThreads]float32, v float32, f func(o, x, c []float32), out, x []float32) {
	for t := range p[:min(len(x), rowThreads)] {
		p[t] = v
	}
	for j := 0; j < len(x); j += rowThreads {
		e := min(j+rowThreads, len(x))
		f(out[j:e], x[j:e], p[:e-j])
	}
}

// SoftmaxFwd: rows r in [lo, hi) of y = Expf(x - m) / s (see softmaxRows).
func SoftmaxFwd(dst, x []float32, cols, lo, hi int) { softmaxRows(0, dst, x, nil, cols, lo, hi) }

// LogSoftmaxFwd: rows r in [lo, hi) of y = (x - m) - Logf(s), s summed with each partial's chain
// cut into parts of longRowPart(cols) elements (see softmaxRow).
func LogSoftmaxFwd(dst, x []float32, cols, lo, hi int) { softmaxRows(1, dst, x, nil, cols, lo, hi) }

// MaskedSoftmaxFwd: the hard-masked softmax (mask != 0 allowed; a fully blocked row is zeros).
func MaskedSoftmaxFwd(dst, x, mask []float32, cols, lo, hi int) {
	softmaxRows(2, dst, x, mask, cols, lo, hi)
}

// SoftmaxBwd: per row d = sum(g*y) (row order), dx = y * (g - d).
// The elementwise steps run on the vector kernels (MulFwd, SubMul: same bits).
func SoftmaxBwd(dx, y, g []float32, cols, lo, hi int) {
	var p [rowThreads]float32
	for r := lo; r < hi; r++ {
		yr, gr, out := y[r*cols:(r+1)*cols], g[r*cols:(r+1)*cols], dx[r*cols:(r+1)*cols]
		MulFwd(out, gr, yr)
		d := rowFold(&p, out, false)
		SubMul(out, gr, yr, d)
	}
}

// SubMul: dst = float32(b * float32(a - c)) (a softmax backward row, y * (g - d)).
func SubMul(dst, a, b []float32, c float32) {
	a, b = a[:len(dst)], b[:len(dst)]
	for i := vecRun(vkSubMul, dst, nil, a, b, nil, c, 0); i < len(dst); i++ {
		dst[i] = float32(b[i] * (a[i] - c))
	}
}

// LogSoftmaxBwd: per row d = sum(g) (row order), dx = g - Expf(y) * d.
// The elementwise step runs on the vector kernel ExpScaleSub (same bits).
func LogSoftmaxBwd(dx, y, g []float32, cols, lo, hi int) {
	var p [rowThreads]float32
	for r := lo; r < hi; r++ {
		yr, gr, out := y[r*cols:(r+1)*cols], g[r*cols:(r+1)*cols], dx[r*cols:(r+1)*cols]
		d := rowFold(&p, gr, false)
		ExpScaleSub(out, yr, gr, d)
	}
}

// ExpScaleSub: dx = g - float32(Expf(y) * d) (a log-softmax backward row).
func ExpScaleSub(dx, y, g []float32, d float32) {
	y, g = y[:len(dx)], g[:len(dx)]
	for i := vecRun(vkExpScaleSub, dx, nil, y, g, nil, d, 0); i < len(dx); i++ {
		dx[i] = g[i] - float32(Expf(y[i])*d)
	}
}
