package ops

import (
	"fmt"
	"math"
	"math/bits"
	"sync/atomic"

	"github.com/torchlean-go/torchlean/cpu"
	"github.com/torchlean-go/torchlean/ptx"
)

// The select family (ptx/select.cu): sorts along the rows of a (rows, cols) matrix (SortRows,
// ArgsortRows, TopK), the scatter of their gradient (SortRowsBwd) and multinomial sampling
// (Multinomial). A sort orders each row by value, NaN above +Inf, -0 equal to +0, equal values
// in column order (stable, as torch.sort(stable=True)); it is pure data movement, so the CPU and
// the GPU return the same bits (cpu/select.go states the order exactly). Column indices come
// back as Indices: on the device (usable by GatherRowsIdx and the like) with a host copy
// (Indices.Ints), which the call downloads, so these calls wait for the device.

var (
	sortRowsOp = row(&kernelOp{name: "sort_rows", kernel: ptx.SortRows, outs: 2, ins: 1,
		grid: rowGrid{rows: sortGroups}, units: size(0),
		cpu: func(h *hostArgs, lo, hi int) {
			cpu.SortRows(h.b[0], h.b[1], h.b[2], h.s[1], h.s[2], h.s[3] != 0, lo, hi)
		}})
	sortTileOp = row(&kernelOp{name: "sort_rows_tile", kernel: ptx.SortRowsTile, outs: 1, ins: 1,
		grid: rowGrid{rows: sortTiles}, units: sortTiles,
		cpu: func(h *hostArgs, lo, hi int) { cpu.SortRowsTile(h.b[0], h.b[1], h.s[1], h.s[2] != 0, lo, hi) }})
	sortMergeOp = row(&kernelOp{name: "sort_rows_merge", kernel: ptx.SortRowsMerge, outs: 1, ins: 1,
		grid: strided(product(0, 1)), units: func(s []int) int { return s[0] * ((s[1] + 2*s[2] - 1) / (2 * s[2])) },
		cpu: func(h *hostArgs, lo, hi int) { cpu.SortRowsMerge(h.b[0], h.b[1], h.s[1], h.s[2], lo, hi) }})
	sortEmitOp = row(&kernelOp{name: "sort_rows_emit", kernel: ptx.SortRowsEmit, outs: 2, ins: 2,
		grid: strided(product(0, 2)), units: size(0),
		cpu: func(h *hostArgs, lo, hi int) {
			cpu.SortRowsEmit(h.b[0], h.b[1], h.b[2], h.b[3], h.s[1], h.s[2], lo, hi)
		}})
	// sortBwdOp writes into its output, which holds zeros unless k == cols.
	sortBwdOp = row(&kernelOp{name: "sort_rows_bwd", kernel: ptx.SortRowsBwd, outs: 1, ins: 1, idx: 1,
		grid: strided(product(0, 2)), units: size(0),
		cpu: func(h *hostArgs, lo, hi int) { cpu.SortRowsBwd(h.b[0], h.b[1], h.idx[0], h.s[1], h.s[2], lo, hi) }})

	multinomialScanOp = row(&kernelOp{name: "multinomial_scan", kernel: ptx.MultinomialScan, outs: 2, ins: 1,
		grid: strided(size(0)), units: size(0),
		cpu: func(h *hostArgs, lo, hi int) { cpu.MultinomialScan(h.b[0], h.b[1], h.b[2], h.s[1], lo, hi) }})
	multinomialDrawOp = row(&kernelOp{name: "multinomial_draw", kernel: ptx.MultinomialDraw, outs: 1, ins: 1,
		grid: strided(product(0, 2)), units: product(0, 2),
		cpu: func(h *hostArgs, lo, hi int) {
			cpu.MultinomialDraw(h.b[0], h.b[1], h.s[1], h.s[2], cpu.JoinKey(h.f[0], h.f[1]), lo, hi)
		}})
	multinomialKeysOp = row(&kernelOp{name: "multinomial_keys", kernel: ptx.MultinomialKeys, outs: 1, ins: 1,
		grid: strided(size(0)), units: size(0),
		cpu: func(h *hostArgs, lo, hi int) {
			cpu.MultinomialKeys(h.b[0], h.b[1], cpu.JoinKey(h.f[0], h.f[1]), lo, hi)
		}})
)

// sortThreads is the block of sort_rows and sort_rows_tile (SORT_THREADS; rowGrid's block).
const sortThreads = 256

// sortGroups is the number of row groups of sort_rows for sizes (rows, cols, ...): rows in groups
// of SortTile / p, p the least power of two >= cols.
func sortGroups(s []int) int {
	per := cpu.SortTile >> bits.Len(uint(s[1]-1))
	return (s[0] + per - 1) / per
}

// sortTiles is the number of tiles of sort_rows_tile for sizes (rows, cols, ...).
func sortTiles(s []int) int { return s[0] * ((s[1] + cpu.SortTile - 1) / cpu.SortTile) }

// flag is a bool as a kernel size.
func flag(b bool) int {
	if b {
		return 1
	}
	return 0
}

// sortRows returns the first k columns of each sorted row of the (rows, cols) matrix x: their
// values and their indices as bits, two (rows, k) buffers.
func sortRows(op string, x *Buffer, rows, cols, k int, desc bool) (vals, idx *Buffer, err error) {
	if err := matrix(op, "x", x, rows, cols); err != nil {
		return nil, nil, err
	}
	if k < 0 || k > cols {
		return nil, nil, fmt.Errorf("ops: %s: k = %d is outside [0, %d] (rows of %d elements)", op, k, cols, cols)
	}
	if uint64(cols) > math.MaxUint32 {
		return nil, nil, fmt.Errorf("ops: %s: rows of %d elements (at most %d)", op, cols, uint32(math.MaxUint32))
	}
	n := rows * k
	if cols <= cpu.SortTile || n == 0 {
		outs, err := sortRowsOp.call([]int{n, n}, []*Buffer{x}, nil, []int{rows, cols, k, flag(desc)})
		if err != nil {
			return nil, nil, asOp(op, err)
		}
		return outs[0], outs[1], nil
	}
	keys, err := sortTileOp.call1(2*rows*cols, []*Buffer{x}, nil, []int{rows, cols, flag(desc)})
	if err != nil {
		return nil, nil, asOp(op, err)
	}
	for w := cpu.SortTile; w < cols; w *= 2 {
		next, err := sortMergeOp.call1(2*rows*cols, []*Buffer{keys}, nil, []int{rows, cols, w})
		keys.Release()
		if err != nil {
			return nil, nil, asOp(op, err)
		}
		keys = next
	}
	outs, err := sortEmitOp.call([]int{n, n}, []*Buffer{keys, x}, nil, []int{rows, cols, k})
	keys.Release()
	if err != nil {
		return nil, nil, asOp(op, err)
	}
	return outs[0], outs[1], nil
}

// indicesOf downloads b, column indices as bits, and returns them as Indices that own b.
func indicesOf(op string, b *Buffer) (*Indices, error) {
	f, err := b.Float32s()
	if err != nil {
		b.Release()
		return nil, asOp(op, err)
	}
	host := scratchU32(len(f))
	for i, v := range f {
		host[i] = math.Float32bits(v)
	}
	b.freed = func() { putScratchU32(host) } // with the memory, as newIndices does
	return &Indices{dev: b.dev, n: b.n, host: host, buf: b}, nil
}

// sortAndIndex is sortRows with the indices as Indices.
func sortAndIndex(op string, x *Buffer, rows, cols, k int, desc bool) (*Buffer, *Indices, error) {
	vals, idx, err := sortRows(op, x, rows, cols, k, desc)
	if err != nil {
		return nil, nil, err
	}
	ix, err := indicesOf(op, idx)
	if err != nil {
		vals.Release()
		return nil, nil, err
	}
	return vals, ix, nil
}

// SortRows sorts each row of the (rows, cols) matrix x, ascending or descending, as PyTorch's
// torch.sort(x, dim=-1, descending, stable=True): NaN counts as larger than +Inf (last ascending,
// first descending), -0 and +0 are equal, and equal values keep their column order. It returns the
// sorted (rows, cols) values and, for each, its column in x (rows*cols indices, row-major). The
// values are x's own (NaN payloads and the sign of zero kept). It waits for the device (the
// indices are downloaded). Rows may hold up to 2^32 - 1 elements.
func SortRows(x *Buffer, rows, cols int, descending bool) (*Buffer, *Indices, error) {
	return sortAndIndex("sort_rows", x, rows, cols, cols, descending)
}

// ArgsortRows returns the column indices of SortRows alone.
func ArgsortRows(x *Buffer, rows, cols int, descending bool) (*Indices, error) {
	vals, idx, err := sortRows("argsort_rows", x, rows, cols, cols, descending)
	if err != nil {
		return nil, err
	}
	vals.Release()
	return indicesOf("argsort_rows", idx)
}

// TopK returns the k largest (or, with largest false, smallest) values of each row of the
// (rows, cols) matrix x, sorted (largest first, or smallest first), with their columns: PyTorch's
// torch.topk(x, k, dim=-1, largest, sorted=True), equal values in column order and NaN the largest
// value. The first k columns of SortRows(x, rows, cols, largest): (rows, k) values and rows*k
// indices. 0 <= k <= cols.
func TopK(x *Buffer, rows, cols, k int, largest bool) (*Buffer, *Indices, error) {
	return sortAndIndex("topk", x, rows, cols, k, largest)
}

// SortRowsBwd is the gradient of SortRows and TopK: the (rows, cols) matrix that holds g[r, j]
// (g is (rows, k)) at column ix[r, j] of row r, and zeros elsewhere. ix holds rows*k columns, each
// below cols and distinct within its row (as SortRows and TopK return them), else it is an error:
// every element is written by at most one gradient, so the result is exact and the same on every
// device.
func SortRowsBwd(g *Buffer, ix *Indices, rows, cols, k int) (*Buffer, error) {
	const op = "sort_rows_bwd"
	if err := matrix(op, "g", g, rows, k); err != nil {
		return nil, err
	}
	if k > cols {
		return nil, fmt.Errorf("ops: %s: k = %d is outside [0, %d]", op, k, cols)
	}
	if err := ix.live(); err != nil {
		return nil, opErr(op, err)
	}
	if ix.n != rows*k {
		return nil, fmt.Errorf("ops: %s: %d indices for (%d, %d) gradients", op, ix.n, rows, k)
	}
	if err := sameDevice(op, []*Buffer{g, ix.buf}); err != nil {
		return nil, err
	}
	n, ok := mulFits(rows, cols)
	if !ok {
		return nil, fmt.Errorf("ops: %s: the (%d, %d) result overflows", op, rows, cols)
	}
	if err := checkRowColumns(op, ix.host, rows, cols, k); err != nil {
		return nil, err
	}
	var dx *Buffer
	var err error
	if k == cols {
		dx, err = newBuffer(g.dev, n)
	} else {
		dx, err = full(op, g.dev, n, 0)
	}
	if err != nil || rows*k == 0 {
		return dx, opErr(op, err)
	}
	if err := sortBwdOp.launch([]*Buffer{dx}, []*Buffer{g}, []*Indices{ix}, []int{rows, cols, k}); err != nil {
		dx.Release()
		return nil, err
	}
	return dx, nil
}

// checkRowColumns checks that each row's k columns in idx are below cols and distinct, on all
// cores; the error names the first offending one.
func checkRowColumns(op string, idx []uint32, rows, cols, k int) error {
	var bad atomic.Bool
	check := func(lo, hi int, report func(r, j int, c uint32, repeat bool)) {
		stamp := make([]int, cols) // stamp[c] == r+1: column c was seen in row r
		for r := lo; r < hi; r++ {
			for j, c := range idx[r*k : (r+1)*k] {
				if int64(c) >= int64(cols) {
					report(r, j, c, false)
					return
				}
				if stamp[c] == r+1 {
					report(r, j, c, true)
					return
				}
				stamp[c] = r + 1
			}
		}
	}
	cpu.Parallel(rows, max(1, (1<<15)/max(k, 1)), func(lo, hi int) {
		check(lo, hi, func(int, int, uint32, bool) { bad.Store(true) })
	})
	if !bad.Load() {
		return nil
	}
	var err error
	check(0, rows, func(r, j int, c uint32, repeat bool) {
		if repeat {
			err = fmt.Errorf("ops: %s: column %d repeats in row %d of the indices (position %d)", op, c, r, j)
		} else {
			err = fmt.Errorf("ops: %s: column %d at position %d of row %d is outside [0, %d)", op, c, j, r, cols)
		}
	})
	return err
}

// Ints returns a copy of the indices as Go ints (from their host copy: no transfer).
func (ix *Indices) Ints() ([]int, error) {
	if err := ix.live(); err != nil {
		return nil, err
	}
	out := make([]int, ix.n)
	for i, v := range ix.host {
		out[i] = int(v)
	}
	return out, nil
}

// Multinomial draws samples columns from each row of the (rows, cols) matrix of weights probs,
// as PyTorch's torch.multinomial(probs, samples, replacement): row r's draws are
// out[r*samples ...], each column drawn with probability proportional to its weight. Weights
// must be finite and >= 0 with a positive, finite (float32) sum in every row, and without
// replacement no row may have fewer positive weights than samples; otherwise the error names
// the first offending row. Element i of the draw depends only on key and i (derive keys with
// KeyOf, as Session does), so every device draws the same columns:
//
//   - with replacement, draw e = r*samples + s is the first column whose running sum of weights
//     (float32, in column order) exceeds u * the row's sum, u = the uniform draw e of RandUniform
//     with key (cpu.MultinomialDraw);
//   - without replacement, the samples are the columns of the samples smallest keys -log(u_c) /
//     p_c of the row (ascending, ties by column), u_c in (0, 1) from draw r*cols + c
//     (cpu.MultinomialKeys): the exponential race, which draws as sequential sampling without
//     replacement does.
//
// It waits for the device (the indices and each row's checks are downloaded).
func Multinomial(probs *Buffer, rows, cols, samples int, replacement bool, key uint64) (*Indices, error) {
	const op = "multinomial"
	if err := matrix(op, "probs", probs, rows, cols); err != nil {
		return nil, err
	}
	switch {
	case samples < 0:
		return nil, fmt.Errorf("ops: %s: %d samples (want >= 0)", op, samples)
	case rows > 0 && cols == 0:
		return nil, fmt.Errorf("ops: %s: rows of no weights (probs is (%d, 0))", op, rows)
	case uint64(cols) > math.MaxUint32:
		return nil, fmt.Errorf("ops: %s: rows of %d weights (at most %d)", op, cols, uint32(math.MaxUint32))
	case !replacement && samples > cols:
		return nil, fmt.Errorf("ops: %s: %d samples without replacement from rows of %d weights", op, samples, cols)
	}
	n, ok := mulFits(rows, samples)
	if !ok {
		return nil, fmt.Errorf("ops: %s: the (%d, %d) result overflows", op, rows, samples)
	}
	if rows == 0 {
		b, err := newBuffer(probs.dev, 0)
		if err != nil {
			return nil, opErr(op, err)
		}
		return indicesOf(op, b)
	}
	scan, err := multinomialScanOp.call([]int{rows * cols, 3 * rows}, []*Buffer{probs}, nil, []int{rows, cols})
	if err != nil {
		return nil, asOp(op, err)
	}
	cdf, stat := scan[0], scan[1]
	defer stat.Release()
	lo, hi := cpu.KeyHalves(key)
	var out *Buffer
	if replacement {
		out, err = multinomialDrawOp.call1(n, []*Buffer{cdf}, nil, []int{rows, cols, samples}, lo, hi)
		cdf.Release()
	} else {
		cdf.Release()
		var keys, vals *Buffer
		if keys, err = multinomialKeysOp.call1(rows*cols, []*Buffer{probs}, nil, []int{rows * cols}, lo, hi); err == nil {
			vals, out, err = sortRows(op, keys, rows, cols, samples, false)
			keys.Release()
			vals.Release()
		}
	}
	if err != nil {
		return nil, asOp(op, err)
	}
	st, err := stat.Float32s()
	if err == nil {
		err = checkWeights(op, st, cols, samples, replacement)
	}
	if err != nil {
		out.Release()
		return nil, asOp(op, err)
	}
	return indicesOf(op, out)
}

// checkWeights reads the rows' checks of multinomial_scan.
func checkWeights(op string, stat []float32, cols, samples int, replacement bool) error {
	for r := range len(stat) / 3 {
		bad, zeros, inf := math.Float32bits(stat[3*r]), int(math.Float32bits(stat[3*r+1])), stat[3*r+2] != 0
		switch {
		case bad != 0:
			return fmt.Errorf("ops: %s: row %d has a negative, infinite or NaN weight (column %d)", op, r, bad-1)
		case zeros == cols:
			return fmt.Errorf("ops: %s: row %d has no positive weight (its %d weights are zero)", op, r, cols)
		case inf && replacement:
			return fmt.Errorf("ops: %s: the weights of row %d sum to more than the largest float32", op, r)
		case !replacement && cols-zeros < samples:
			return fmt.Errorf("ops: %s: row %d has %d positive weights, fewer than the %d samples drawn without replacement",
				op, r, cols-zeros, samples)
		}
	}
	return nil
}
