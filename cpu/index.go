package cpu

// Gathers and scatter-adds of rows through host indices: the twins of ptx/index.cu. A vector is
// a matrix of one column.

// GatherRows: dst[j, c] = idx[j] < rows ? mat[idx[j], c] : 0 for output rows j in [lo, hi) of
// cols elements each.
func GatherRows(dst, mat []float32, idx []uint32, rows, cols, lo, hi int) {
	for j := lo; j < hi; j++ {
		out := dst[j*cols : (j+1)*cols]
		if i := int(idx[j]); i < rows {
			copy(out, mat[i*cols:(i+1)*cols])
		} else {
			clear(out)
		}
	}
}

// ScatterAddRowsAtomic is the twin of scatter_add_rows_atomic (the fast mode): out already holds
// the matrix, and for j = 0, 1, ... in order, out[idx[j], c] += values[j, c] for columns c in
// [lo, hi) (indices >= rows are ignored). The GPU adds in an unspecified order instead.
func ScatterAddRowsAtomic(out, values []float32, idx []uint32, rows, cols, lo, hi int) {
	for j, i := range idx {
		if int(i) >= rows {
			continue
		}
		acc := out[int(i)*cols+lo : int(i)*cols+hi]
		Add(acc, acc, values[j*cols+lo:j*cols+hi])
	}
}

// ScatterAddRowsSorted is the twin of scatter_add_rows_sorted (the deterministic mode): order
// lists the j with idx[j] < rows sorted by (idx[j], j) and start[i] .. start[i+1] is the range of
// order for row i. For rows i in [lo, hi):
// out[i, c] = mat[i, c] + (-0.0 + values[order[start[i]], c] + values[order[start[i]+1], c] + ...).
func ScatterAddRowsSorted(out, mat, values []float32, order, start []uint32, rows, cols, lo, hi int) {
	for i := lo; i < hi; i++ {
		acc := out[i*cols : (i+1)*cols]
		for c := range acc {
			acc[c] = negZero
		}
		for _, j := range order[start[i]:start[i+1]] {
			Add(acc, acc, values[int(j)*cols:(int(j)+1)*cols])
		}
		Add(acc, mat[i*cols:(i+1)*cols], acc)
	}
}
