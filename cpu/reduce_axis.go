package cpu

// Reductions along one axis of a row-major (rows, cols) buffer: the twins of
// ptx/reduce_axis.cu. The order of operations depends on the shape only.

const rowThreads = 256

// rowFold folds one row as the GPU does with one 256-thread block per row: thread t's partial
// p[t] folds the elements t, t+256, ... in order from the identity (sum: -0.0 and +; max: -Inf and
// Maxf), then the halving tree p[t] = f(p[t], p[t+s]), s = 128, ..., 1 (rowStat's order, with
// the loops specialized).
func rowFold(p *[rowThreads]float32, row []float32, isMax bool) float32 {
	if len(row) >= rowThreads {
		rowPartials(p, row, isMax)
		return rowTree(p, isMax, len(row))
	}
	// A short row: partial t is the identity folded with element t, for t < len(row), and the
	// identity up to treeWidth (the tree reads no further).
	part := p[:treeWidth(len(row))]
	if isMax {
		for t := range part {
			part[t] = negInf
		}
		for t, v := range row {
			part[t] = Maxf(negInf, v)
		}
	} else {
		for t := range part {
			part[t] = negZero
		}
		for t, v := range row {
			part[t] = negZero + v
		}
	}
	return rowTree(p, isMax, len(row))
}

// treeWidth is the number of leading partials of a row of n elements that can differ from the
// identity: n rounded up to a power of two, at most rowThreads.
func treeWidth(n int) int {
	if n >= rowThreads {
		return rowThreads
	}
	w := 1
	for w < n {
		w *= 2
	}
	return w
}

// rowPartials sets p to the partials of rowFold before its tree.
func rowPartials(p *[rowThreads]float32, row []float32, isMax bool) {
	id := negZero
	if isMax {
		id = negInf
	}
	for t := range p {
		p[t] = id
	}
	// The whole chunks at once with the partials in vector registers where the machine can
	// (rowFoldFast), else chunk by chunk; then the last, partial chunk.
	for base := rowFoldFast(p, row, isMax); base < len(row); base += rowThreads {
		seg := row[base:min(len(row), base+rowThreads)]
		part := p[:len(seg)]
		// The same per-partial operations on vector lanes (MaxFwd, Add: same bits).
		if len(seg) == rowThreads {
			if isMax {
				MaxFwd(part, part, seg)
			} else {
				Add(part, part, seg)
			}
			continue
		}
		if isMax {
			for t, v := range seg {
				part[t] = Maxf(part[t], v)
			}
		} else {
			for t, v := range seg {
				part[t] += v
			}
		}
	}
}

// rowTree is rowFold's halving tree over the partials p; it returns the root. The levels of 16
// or more pairs run on vector lanes (MaxFwd, Add: the same operations, so the same bits).
//
// n is the number of elements folded into the partials: the partials from treeWidth(n) on hold
// the identity (-0.0 or -Inf), and f(x, identity) is x, so the levels that only fold them in
// (s >= treeWidth(n)) are skipped: the same bits, fewer operations for short rows.
func rowTree(p *[rowThreads]float32, isMax bool, n int) float32 {
	s := treeWidth(n) / 2
	for ; s >= 16; s /= 2 {
		lo, hi := p[:s], p[s:2*s]
		if isMax {
			MaxFwd(lo, lo, hi)
		} else {
			Add(lo, lo, hi)
		}
	}
	for ; s >= 1; s /= 2 {
		for t := 0; t < s; t++ {
			if isMax {
				p[t] = Maxf(p[t], p[t+s])
			} else {
				p[t] += p[t+s]
			}
		}
	}
	return p[0]
}

// rowReduce folds each row r in [lo, hi) with rowFold; an empty row gives 0.
func rowReduce(dst, x []float32, cols, lo, hi int, isMax bool) {
	var p [rowThreads]float32
	for r := lo; r < hi; r++ {
		if cols == 0 {
			dst[r] = 0
			continue
		}
		dst[r] = rowFold(&p, x[r*cols:(r+1)*cols], isMax)
	}
}

// ReduceSumByRow: dst[r] = (sum of row r) / div (rowFold of sums; div is 1
// for sums, the count for means), r in [lo, hi); an empty row gives 0 / div.
func ReduceSumByRow(dst, x []float32, cols int, div float32, lo, hi int) {
	rowReduce(dst, x, cols, lo, hi, false)
	for r := lo; r < hi; r++ {
		dst[r] /= div
	}
}

// ReduceMaxByRow: dst[r] = max of row r (rowFold of maxima), r in [lo, hi).
func ReduceMaxByRow(dst, x []float32, cols, lo, hi int) {
	rowReduce(dst, x, cols, lo, hi, true)
}

// batchColumns splits the units [lo, hi) of a batch of matrices with cols units each into one
// column range per matrix and calls f(b, c0, c1) for each.
func batchColumns(cols, lo, hi int, f func(b, c0, c1 int)) {
	for u := lo; u < hi; {
		b, c := u/cols, u%cols
		c1 := min(cols, c+hi-u)
		f(b, c, c1)
		u += c1 - c
	}
}

// columnFold folds rows 0, 1, ... of columns [c0, c1) of the (rows, cols) matrix x into
// out[c - c0], row by row (the same order per column): sums from -0.0, or maxima (Maxf) from
// -Inf.
func columnFold(out, x []float32, rows, cols, c0, c1 int, isMax bool) {
	id := negZero
	if isMax {
		id = negInf
	}
	for c := range out {
		out[c] = id
	}
	for r := 0; r < rows; r++ {
		row := x[r*cols+c0 : r*cols+c1]
		row = row[:len(out)]
		if isMax {
			for c, v := range row {
				out[c] = Maxf(out[c], v)
			}
		} else {
			for c, v := range row {
				out[c] += v
			}
		}
	}
}

// ReduceSumByColumn: for a batch of (rows, cols) matrices, dst[b*cols + c] =
// (((-0.0 + x[b,0,c]) + x[b,1,c]) + ...) / div for units b*cols + c in [lo, hi); an empty column
// gives 0 / div.
func ReduceSumByColumn(dst, x []float32, batch, rows, cols int, div float32, lo, hi int) {
	batchColumns(cols, lo, hi, func(b, c0, c1 int) {
		out := dst[b*cols+c0 : b*cols+c1]
		columnFold(out, x[b*rows*cols:], rows, cols, c0, c1, false)
		if rows == 0 {
			clear(out)
		}
		for c := range out {
			out[c] /= div
		}
	})
}

// ReduceMaxByColumn: dst[b*cols + c] = Maxf(...Maxf(Maxf(-Inf, x[b,0,c]), x[b,1,c])...) for
// units b*cols + c in [lo, hi); 0 when rows == 0.
func ReduceMaxByColumn(dst, x []float32, batch, rows, cols, lo, hi int) {
	batchColumns(cols, lo, hi, func(b, c0, c1 int) {
		out := dst[b*cols+c0 : b*cols+c1]
		columnFold(out, x[b*rows*cols:], rows, cols, c0, c1, true)
		if rows == 0 {
			clear(out)
		}
	})
}

// ColChunk is the number of rows each first-stage chunk of a column reduction covers.
const ColChunk = 64

// columnChunks is stage 1 of a two-stage column reduction: for units u = b*chunks + ch in
// [lo, hi), dst[u*cols + c] folds (columnFold) rows [ch*ColChunk, min(rows, (ch+1)*ColChunk)) of
// column c of matrix b.
func columnChunks(dst, x []float32, batch, rows, cols, lo, hi int, isMax bool) {
	chunks := (rows + ColChunk - 1) / ColChunk
	for u := lo; u < hi; u++ {
		b, ch := u/chunks, u%chunks
		r0, r1 := ch*ColChunk, min(rows, (ch+1)*ColChunk)
		columnFold(dst[u*cols:(u+1)*cols], x[(b*rows+r0)*cols:], r1-r0, cols, 0, cols, isMax)
	}
}

// ReduceSumColumnChunks: stage 1 of a two-stage column sum (columnChunks of sums).
func ReduceSumColumnChunks(dst, x []float32, batch, rows, cols, lo, hi int) {
	columnChunks(dst, x, batch, rows, cols, lo, hi, false)
}

// ReduceMaxColumnChunks: stage 1 of a two-stage column max (columnChunks of maxima).
func ReduceMaxColumnChunks(dst, x []float32, batch, rows, cols, lo, hi int) {
	columnChunks(dst, x, batch, rows, cols, lo, hi, true)
}

// columnChunked is the one-pass form of the two-stage column reduction: for units b*cols + c in
// [lo, hi), the chunk results of columnChunks (folds of ColChunk rows) folded in chunk order from
// the identity, as the stage-2 column reduction does; 0 when rows == 0; sums divided by div.
func columnChunked(dst, x []float32, batch, rows, cols int, div float32, lo, hi int, isMax bool) {
	chunks := (rows + ColChunk - 1) / ColChunk
	batchColumns(cols, lo, hi, func(b, c0, c1 int) {
		w := c1 - c0
		part := make([]float32, chunks*w)
		for ch := range chunks {
			r0, r1 := ch*ColChunk, min(rows, (ch+1)*ColChunk)
			columnFold(part[ch*w:(ch+1)*w], x[(b*rows+r0)*cols:], r1-r0, cols, c0, c1, isMax)
		}
		out := dst[b*cols+c0 : b*cols+c1]
		columnFold(out, part, chunks, w, 0, w, isMax)
		if rows == 0 {
			clear(out)
		}
		if !isMax {
			for c := range out {
				out[c] /= div
			}
		}
	})
}

// ReduceSumByColumnChunked: the two-stage column sum in one pass, dst[b*cols + c] =
// ReduceSumByColumn (with div) of the chunk sums of ReduceSumColumnChunks, for units b*cols + c
// in [lo, hi).
func ReduceSumByColumnChunked(dst, x []float32, batch, rows, cols int, div float32, lo, hi int) {
	columnChunked(dst, x, batch, rows, cols, div, lo, hi, false)
}

// ReduceMaxByColumnChunked: the two-stage column max in one pass, dst[b*cols + c] =
// ReduceMaxByColumn of the chunk maxima of ReduceMaxColumnChunks, for units b*cols + c in
// [lo, hi).
func ReduceMaxByColumnChunked(dst, x []float32, batch, rows, cols, lo, hi int) {
	columnChunked(dst, x, batch, rows, cols, 1, lo, hi, true)
}

// ReduceFromBroadcast is the twin of reduce_from_broadcast, the adjoint of BroadcastTo for the
// same (dims, kept): for input elements i in [lo, hi), dst[i] = -0.0 + dout[o_0] + dout[o_1] + ...
// over the output elements o that read i, the broadcast axes visited in row-major order; 0 when
// there are none.
func ReduceFromBroadcast(dst, dout []float32, dims []int, kept uint, lo, hi int) {
	ostride := make([]int, len(dims))
	s, free := 1, 1
	for j := len(dims) - 1; j >= 0; j-- {
		ostride[j] = s
		s *= dims[j]
		if kept>>j&1 == 0 {
			free *= dims[j]
		}
	}
	ctr := make([]int, len(dims))
	for i := lo; i < hi; i++ {
		rem, off := i, 0
		for j := len(dims) - 1; j >= 0; j-- {
			if kept>>j&1 != 0 {
				off += rem % dims[j] * ostride[j]
				rem /= dims[j]
			}
		}
		clear(ctr)
		acc := negZero
		for f := 0; f < free; f++ {
			acc += dout[off]
			for j := len(dims) - 1; j >= 0; j-- {
				if kept>>j&1 == 0 {
					off += ostride[j]
					if ctr[j]++; ctr[j] < dims[j] {
						break
					}
					off -= dims[j] * ostride[j]
					ctr[j] = 0
				}
			}
		}
		if free == 0 {
			acc = 0
		}
		dst[i] = acc
	}
}

func add(a, b float32) float32 { return a + b }
