package ops

import (
	"fmt"
	"math"

	"github.com/torchlean-go/torchlean/cpu"
	"github.com/torchlean-go/torchlean/ptx"
)

// The indexing family (ptx/index.cu): gathers and scatter-adds of rows through host indices. A
// vector is a matrix of one column. Indices are Go ints: a negative index or one above
// math.MaxUint32 is an error; one that fits in uint32 but is out of range is totalized (a gather
// reads zeros, a scatter ignores it). Repeated scatter indices accumulate.
var (
	gatherRowsOp = &kernelOp{name: "gather_rows", kernel: ptx.GatherRows, outs: 1, ins: 1, idx: 1,
		geometry: strided(product(0, 2)), cpuUnits: size(0),
		cpu: func(h *hostArgs, lo, hi int) { cpu.GatherRows(h.b[0], h.b[1], h.idx[0], h.s[1], h.s[2], lo, hi) }}
	// scatterAtomicOp accumulates into its output, which holds the matrix already.
	scatterAtomicOp = &kernelOp{name: "scatter_add_rows_atomic", kernel: ptx.ScatterAddRowsAtomic, outs: 1, ins: 1, idx: 1,
		geometry: strided(product(0, 2)), cpuUnits: size(2),
		cpu: func(h *hostArgs, lo, hi int) {
			cpu.ScatterAddRowsAtomic(h.b[0], h.b[1], h.idx[0], h.s[1], h.s[2], lo, hi)
		}}
	// scatterSortedOp takes the indices as order and start (see sortedRows).
	scatterSortedOp = &kernelOp{name: "scatter_add_rows_sorted", kernel: ptx.ScatterAddRowsSorted, outs: 1, ins: 2, idx: 2,
		geometry: strided(product(0, 1)), cpuUnits: size(0),
		cpu: func(h *hostArgs, lo, hi int) {
			cpu.ScatterAddRowsSorted(h.b[0], h.b[1], h.b[2], h.idx[0], h.idx[1], h.s[0], h.s[1], lo, hi)
		}}
)

// hostIndices checks idx and returns it as uint32.
func hostIndices(op string, idx []int) ([]uint32, error) {
	out := make([]uint32, len(idx))
	for j, i := range idx {
		if i < 0 || uint64(i) > math.MaxUint32 {
			return nil, fmt.Errorf("ops: %s: index %d at position %d does not fit in uint32", op, i, j)
		}
		out[j] = uint32(i)
	}
	return out, nil
}

// GatherVec returns out[j] = vec[idx[j]] (length len(idx)), 0 where idx[j] >= n.
func GatherVec(vec *Buffer, n int, idx []int) (*Buffer, error) {
	return gather("gather_vec", vec, n, 1, idx)
}

// GatherRows returns the (len(idx), cols) matrix of rows idx[j] of the (rows, cols) matrix mat,
// a zero row where idx[j] >= rows.
func GatherRows(mat *Buffer, rows, cols int, idx []int) (*Buffer, error) {
	return gather("gather_rows", mat, rows, cols, idx)
}

func gather(op string, mat *Buffer, rows, cols int, idx []int) (*Buffer, error) {
	if err := matrix(op, mat, rows, cols); err != nil {
		return nil, err
	}
	ix, err := hostIndices(op, idx)
	if err != nil {
		return nil, err
	}
	k := len(ix)
	return gatherRowsOp.call1(k*cols, []*Buffer{mat}, [][]uint32{ix}, []int{k, rows, cols})
}

// ScatterAdd returns a copy of x (length n) with values[j] added at idx[j] for every j
// (len(values) == len(idx)); indices >= n are ignored, repeated ones accumulate.
func ScatterAdd(x, values *Buffer, n int, idx []int) (*Buffer, error) {
	return scatter("scatter_add", x, values, n, 1, idx)
}

// ScatterAddRow returns a copy of the (rows, cols) matrix mat with rowVec (length cols) added to
// row i; i >= rows is an error (this entry point is not totalized).
func ScatterAddRow(mat, rowVec *Buffer, rows, cols, i int) (*Buffer, error) {
	if i < 0 || i >= rows {
		return nil, fmt.Errorf("ops: scatter_add_row: row %d of a matrix of %d rows", i, rows)
	}
	return scatter("scatter_add_row", mat, rowVec, rows, cols, []int{i})
}

// ScatterAddRows returns a copy of the (rows, cols) matrix mat with row j of values (a
// (len(idx), cols) matrix) added to row idx[j] for every j; indices >= rows are ignored,
// repeated ones accumulate.
//
// In deterministic mode the result is, per element,
// mat[i, c] + (-0.0 + values[j0, c] + values[j1, c] + ...) over the j with idx[j] == i in
// ascending order: bit-identical on every device. The fast mode adds into a copy of mat, on CUDA
// with atomics in an order that can vary from run to run where indices repeat, on the CPU in the
// order of j.
func ScatterAddRows(mat, values *Buffer, rows, cols int, idx []int) (*Buffer, error) {
	return scatter("scatter_add_rows", mat, values, rows, cols, idx)
}

func scatter(op string, mat, values *Buffer, rows, cols int, idx []int) (*Buffer, error) {
	if err := matrix(op, mat, rows, cols); err != nil {
		return nil, err
	}
	if err := matrix(op, values, len(idx), cols); err != nil {
		return nil, err
	}
	ix, err := hostIndices(op, idx)
	if err != nil {
		return nil, err
	}
	if err := sameDevice(op, []*Buffer{mat, values}); err != nil {
		return nil, err
	}
	k := len(ix)
	if uint64(k) > math.MaxUint32 {
		return nil, fmt.Errorf("ops: %s: %d indices; at most %d", op, k, uint64(math.MaxUint32))
	}
	if !Deterministic() {
		out, err := Copy(mat)
		if err != nil || out.n == 0 || k == 0 {
			return out, err
		}
		if err := scatterAtomicOp.launch([]*Buffer{out}, []*Buffer{values}, [][]uint32{ix}, []int{k, rows, cols}); err != nil {
			out.Release()
			return nil, err
		}
		return out, nil
	}
	order, start := sortedRows(ix, rows)
	return scatterSortedOp.call1(rows*cols, []*Buffer{mat, values}, [][]uint32{order, start}, []int{rows, cols})
}

// sortedRows returns the j with idx[j] < rows sorted by (idx[j], j) (order) and, for every row
// i, the range start[i] .. start[i+1] of order whose index is i (a stable counting sort).
func sortedRows(idx []uint32, rows int) (order, start []uint32) {
	start = make([]uint32, rows+1)
	for _, i := range idx {
		if int(i) < rows {
			start[i+1]++
		}
	}
	for i := range rows {
		start[i+1] += start[i]
	}
	order = make([]uint32, start[rows])
	next := append([]uint32(nil), start[:rows]...)
	for j, i := range idx {
		if int(i) < rows {
			order[next[i]] = uint32(j)
			next[i]++
		}
	}
	return order, start
}
