package ops

import (
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/torchlean-go/torchlean/cpu"
	"github.com/torchlean-go/torchlean/ptx"
)

// The indexing family (ptx/index.cu): gathers and scatter-adds of rows through host indices. A
// vector is a matrix of one column. Indices are Go ints: a negative index or one above
// math.MaxUint32 is an error; one that fits in uint32 but is out of range is totalized (a gather
// reads zeros, a scatter ignores it). Repeated scatter indices accumulate.
var (
	gatherRowsOp = row(&kernelOp{name: "gather_rows", kernel: ptx.GatherRows, outs: 1, ins: 1, idx: 1,
		grid: strided(product(0, 2)), units: size(0),
		cpu: func(h *hostArgs, lo, hi int) { cpu.GatherRows(h.b[0], h.b[1], h.idx[0], h.s[1], h.s[2], lo, hi) }})
	// scatterAtomicOp accumulates into its output, which holds the matrix already.
	scatterAtomicOp = row(&kernelOp{name: "scatter_add_rows_atomic", kernel: ptx.ScatterAddRowsAtomic, outs: 1, ins: 1, idx: 1,
		grid: strided(product(0, 2)), units: size(2),
		cpu: func(h *hostArgs, lo, hi int) {
			cpu.ScatterAddRowsAtomic(h.b[0], h.b[1], h.idx[0], h.s[1], h.s[2], lo, hi)
		}})
	// scatterSortedOp takes the indices as order and start (see sortedRows).
	scatterSortedOp = row(&kernelOp{name: "scatter_add_rows_sorted", kernel: ptx.ScatterAddRowsSorted, outs: 1, ins: 2, idx: 2,
		grid: strided(product(0, 1)), units: size(0),
		cpu: func(h *hostArgs, lo, hi int) {
			cpu.ScatterAddRowsSorted(h.b[0], h.b[1], h.b[2], h.idx[0], h.idx[1], h.s[0], h.s[1], lo, hi)
		}})
)

// Indices is an array of row indices prepared for one device: checked, converted to uint32 and
// uploaded once, so that a gather and the scatter-add of its backward pass (or many steps over
// the same batch) share one upload; the deterministic scatter's sorted form is built once per
// target row count and kept. Update refills them (and those sorted forms) in place, for a CUDA
// graph that reads them across replays. Release frees the device memory and the host copy (once the ops
// using them are done; a GC cleanup is a safety net). Indices are safe for concurrent use, like
// Buffers.
type Indices struct {
	dev  *Device
	n    int
	host []uint32 // from scratchU32, returned with buf's memory (newIndices)
	buf  *Buffer  // the indices' bits, one float32 slot each

	mu       sync.Mutex
	released bool
	sorted   map[int][2]*Indices // rows -> (order, start) of sortedRows
}

// NewIndices checks idx (a negative index or one above math.MaxUint32 is an error) and uploads
// it to d.
func NewIndices(d *Device, idx []int) (*Indices, error) { return prepareIndices("indices", d, idx) }

// prepareIndices checks and converts idx on all cores, then uploads it.
func prepareIndices(op string, d *Device, idx []int) (*Indices, error) {
	host, err := checkIndices(op, idx)
	if err != nil {
		return nil, err
	}
	ix, err := newIndices(d, host)
	return ix, opErr(op, err)
}

// checkIndices checks idx (a negative index or one above math.MaxUint32 is op's error) and
// returns it converted to uint32 in an array of scratchU32.
func checkIndices(op string, idx []int) ([]uint32, error) {
	host := scratchU32(len(idx))
	var bad atomic.Bool
	cpu.Parallel(len(idx), 1<<16, func(lo, hi int) {
		for j, i := range idx[lo:hi] {
			if i < 0 || uint64(i) > math.MaxUint32 {
				bad.Store(true)
				return
			}
			host[lo+j] = uint32(i)
		}
	})
	if bad.Load() {
		putScratchU32(host)
		for j, i := range idx {
			if i < 0 {
				return nil, fmt.Errorf("ops: %s: negative index %d at position %d", op, i, j)
			}
			if uint64(i) > math.MaxUint32 {
				return nil, fmt.Errorf("ops: %s: index %d at position %d does not fit in uint32", op, i, j)
			}
		}
	}
	return host, nil
}

// Update replaces the indices with idx, of the same length, in place: the device buffer, the
// host copy and every sorted form built so far for the deterministic scatter (recomputed on the
// host) keep their memory, so that a CUDA graph captured over ops reading these Indices reads
// the new values at its next replay. The checks are NewIndices' (a negative index or one above
// math.MaxUint32 is an error, and leaves the indices unchanged). Update uploads, ordered with the
// device's work (the ops queued before it read the old values): it is refused inside a capture
// (ops.ErrCapturing), like any upload, and is meant to run between replays.
func (ix *Indices) Update(idx []int) error {
	const op = "indices update"
	if err := ix.live(); err != nil {
		return err
	}
	if len(idx) != ix.n {
		return fmt.Errorf("ops: %s: %d indices for Indices of length %d", op, len(idx), ix.n)
	}
	host, err := checkIndices(op, idx)
	if err != nil {
		return err
	}
	defer putScratchU32(host)
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.released {
		return fmt.Errorf("ops: %s: %w (Indices)", op, ErrReleased)
	}
	if err := refill(op, ix, host); err != nil { // first: a refused upload changes nothing
		return err
	}
	for rows, s := range ix.sorted {
		o, st := sortedRows(ix.host, rows)
		o = padOrder(o, ix.n)
		err := refill(op, s[0], o)
		if err == nil {
			err = refill(op, s[1], st)
		}
		putScratchU32(o)
		putScratchU32(st)
		if err != nil {
			return err
		}
	}
	return nil
}

// refill uploads host (of ix's length) into ix's device buffer, then copies it into ix's host
// copy (which the CPU twins read).
func refill(op string, ix *Indices, host []uint32) error {
	if len(host) == 0 {
		return nil
	}
	if err := ix.buf.useIn(op); err != nil {
		return err
	}
	defer ix.buf.done()
	if err := ix.dev.be.uploadIndex(ix.buf.mem, host); err != nil {
		return opErr(op, err)
	}
	copy(ix.host, host)
	return nil
}

// padOrder returns the order array of sortedRows with n slots (the slots past its entries are
// zeros that no start range reaches), so that Update can refill it in place whatever the count
// of in-range indices; o goes back to the scratch pool when it is replaced.
func padOrder(o []uint32, n int) []uint32 {
	if len(o) >= n {
		return o
	}
	p := scratchU32(n)
	copy(p, o)
	clear(p[len(o):])
	putScratchU32(o)
	return p
}

// newIndices uploads host, which comes from scratchU32 and belongs to the result (or, on error,
// goes back).
func newIndices(d *Device, host []uint32) (*Indices, error) {
	buf, err := newBuffer(d, len(host))
	if err != nil {
		putScratchU32(host)
		return nil, err
	}
	if len(host) > 0 {
		if err := d.be.uploadIndex(buf.mem, host); err != nil {
			buf.Release()
			putScratchU32(host)
			return nil, err
		}
	}
	buf.freed = func() { putScratchU32(host) } // after the last op that reads host
	return &Indices{dev: d, n: len(host), host: host, buf: buf}, nil
}

// indexScratch recycles the host arrays of indices, of their sorted forms and of the sort: the
// ops that take Go indices prepare them in every call, and a fresh array of a few megabytes costs
// a page fault per page on first touch, more than checking and converting the indices. Pool k
// holds arrays of capacity 2^k.
var indexScratch [33]sync.Pool // of *[]uint32

// scratchU32 returns a length-n array with arbitrary contents.
func scratchU32(n int) []uint32 {
	k := bits.Len(uint(max(n, 1) - 1))
	if k >= len(indexScratch) {
		return make([]uint32, n)
	}
	if p, ok := indexScratch[k].Get().(*[]uint32); ok {
		return (*p)[:n]
	}
	return make([]uint32, n, 1<<k)
}

// putScratchU32 gives s back for reuse; s must not be used afterwards.
func putScratchU32(s []uint32) {
	c := cap(s)
	if k := bits.Len(uint(c)) - 1; c >= 1<<10 && c == 1<<k && k < len(indexScratch) {
		indexScratch[k].Put(&s)
	}
}

// Len returns the number of indices (0 for nil).
func (ix *Indices) Len() int {
	if ix == nil {
		return 0
	}
	return ix.n
}

// Device returns the device the indices live on (nil for nil).
func (ix *Indices) Device() *Device {
	if ix == nil {
		return nil
	}
	return ix.dev
}

// Release frees the indices and their sorted forms; true the first time (false for nil and for
// the zero Indices, which hold nothing).
func (ix *Indices) Release() bool {
	if ix == nil {
		return false
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.released || ix.buf == nil {
		return false
	}
	ix.released = true
	ix.buf.Release() // host goes back with the memory (newIndices)
	for _, s := range ix.sorted {
		s[0].Release()
		s[1].Release()
	}
	ix.sorted = nil
	return true
}

func (ix *Indices) live() error {
	if ix == nil || ix.buf == nil {
		return fmt.Errorf("ops: nil or zero indices (make them with NewIndices)")
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.released {
		return fmt.Errorf("%w (Indices)", ErrReleased)
	}
	return nil
}

// sortedFor returns the (order, start) arrays of sortedRows for a target of rows rows, building
// and uploading them on first use.
func (ix *Indices) sortedFor(rows int) (order, start *Indices, err error) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.released {
		return nil, nil, fmt.Errorf("%w (Indices)", ErrReleased)
	}
	if s, ok := ix.sorted[rows]; ok {
		return s[0], s[1], nil
	}
	o, st := sortedRows(ix.host, rows)
	o = padOrder(o, ix.n) // Update refills it in place
	if order, err = newIndices(ix.dev, o); err != nil {
		return nil, nil, err
	}
	if start, err = newIndices(ix.dev, st); err != nil {
		order.Release()
		return nil, nil, err
	}
	if ix.sorted == nil {
		ix.sorted = map[int][2]*Indices{}
	}
	ix.sorted[rows] = [2]*Indices{order, start}
	return order, start, nil
}

// withIndices runs f with idx prepared on d, and releases them afterwards.
func withIndices(op string, d *Device, idx []int, f func(ix *Indices) (*Buffer, error)) (*Buffer, error) {
	ix, err := prepareIndices(op, d, idx)
	if err != nil {
		return nil, err
	}
	defer ix.Release()
	return f(ix)
}

// GatherVec returns out[j] = vec[idx[j]] (length len(idx)), 0 where idx[j] >= n.
func GatherVec(vec *Buffer, n int, idx []int) (*Buffer, error) {
	if err := checkLen("gather_vec", vec, n, "the vector"); err != nil {
		return nil, err
	}
	return withIndices("gather_vec", vec.dev, idx, func(ix *Indices) (*Buffer, error) {
		return gather("gather_vec", vec, n, 1, ix)
	})
}

// GatherRows returns the (len(idx), cols) matrix of rows idx[j] of the (rows, cols) matrix mat,
// a zero row where idx[j] >= rows.
func GatherRows(mat *Buffer, rows, cols int, idx []int) (*Buffer, error) {
	if err := mat.liveIn("gather_rows"); err != nil {
		return nil, err
	}
	return withIndices("gather_rows", mat.dev, idx, func(ix *Indices) (*Buffer, error) {
		return gather("gather_rows", mat, rows, cols, ix)
	})
}

// GatherRowsIdx is GatherRows with prepared indices (a vector is a matrix of one column).
func GatherRowsIdx(mat *Buffer, rows, cols int, ix *Indices) (*Buffer, error) {
	return gather("gather_rows", mat, rows, cols, ix)
}

func gather(op string, mat *Buffer, rows, cols int, ix *Indices) (*Buffer, error) {
	if err := matrix(op, "mat", mat, rows, cols); err != nil {
		return nil, err
	}
	if err := ix.live(); err != nil {
		return nil, err
	}
	k := ix.Len()
	n, ok := mulFits(k, cols)
	if !ok {
		return nil, fmt.Errorf("ops: %s: the (%d, %d) result overflows", op, k, cols)
	}
	if err := sameDevice(op, []*Buffer{mat, ix.buf}); err != nil {
		return nil, err
	}
	out, err := gatherRowsOp.call1(n, []*Buffer{mat}, []*Indices{ix}, []int{k, rows, cols})
	return out, asOp(op, err)
}

// ScatterAdd returns a copy of x (length n) with values[j] added at idx[j] for every j
// (len(values) == len(idx)); indices >= n are ignored, repeated ones accumulate.
func ScatterAdd(x, values *Buffer, n int, idx []int) (*Buffer, error) {
	if err := checkLen("scatter_add", x, n, "the vector"); err != nil {
		return nil, err
	}
	if err := checkLen("scatter_add", values, len(idx), "values"); err != nil {
		return nil, err
	}
	return withIndices("scatter_add", x.dev, idx, func(ix *Indices) (*Buffer, error) {
		return scatter("scatter_add", x, values, n, 1, ix)
	})
}

// ScatterAddRow returns a copy of the (rows, cols) matrix mat with rowVec (length cols) added to
// row i. Like the other scatters it ignores a row i >= rows (the reference panicked there: a
// flaw it lists); a negative i or one above math.MaxUint32 is an error.
func ScatterAddRow(mat, rowVec *Buffer, rows, cols, i int) (*Buffer, error) {
	const op = "scatter_add_row"
	if err := matrix(op, "mat", mat, rows, cols); err != nil {
		return nil, err
	}
	if err := checkLen(op, rowVec, cols, "rowVec"); err != nil {
		return nil, err
	}
	switch {
	case i < 0:
		return nil, fmt.Errorf("ops: %s: negative row index %d", op, i)
	case uint64(i) > math.MaxUint32:
		return nil, fmt.Errorf("ops: %s: row index %d does not fit in uint32", op, i)
	}
	return scatterRows(op, mat, rowVec, rows, cols, []int{i})
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
	return scatterRows("scatter_add_rows", mat, values, rows, cols, idx)
}

// scatterRows is ScatterAddRows for the entry point op (named in its errors).
func scatterRows(op string, mat, values *Buffer, rows, cols int, idx []int) (*Buffer, error) {
	if err := mat.liveIn(op); err != nil {
		return nil, err
	}
	return withIndices(op, mat.dev, idx, func(ix *Indices) (*Buffer, error) {
		return scatter(op, mat, values, rows, cols, ix)
	})
}

// ScatterAddRowsIdx is ScatterAddRows with prepared indices (a vector is a matrix of one column).
// In deterministic mode the sorted form of the indices is built on first use for this row count
// and kept with them.
func ScatterAddRowsIdx(mat, values *Buffer, rows, cols int, ix *Indices) (*Buffer, error) {
	return scatter("scatter_add_rows", mat, values, rows, cols, ix)
}

func scatter(op string, mat, values *Buffer, rows, cols int, ix *Indices) (*Buffer, error) {
	if err := matrix(op, "mat", mat, rows, cols); err != nil {
		return nil, err
	}
	if err := ix.live(); err != nil {
		return nil, err
	}
	k := ix.Len()
	if err := matrix(op, "values", values, k, cols); err != nil {
		return nil, err
	}
	if err := sameDevice(op, []*Buffer{mat, values, ix.buf}); err != nil {
		return nil, err
	}
	if !Deterministic() {
		out, err := copyAs(op, mat)
		if err != nil || out.n == 0 || k == 0 {
			return out, err
		}
		if err := scatterAtomicOp.launch([]*Buffer{out}, []*Buffer{values}, []*Indices{ix}, []int{k, rows, cols}); err != nil {
			out.Release()
			return nil, asOp(op, err)
		}
		return out, nil
	}
	if rows*cols == 0 {
		return newBuffer(mat.dev, 0)
	}
	order, start, err := ix.sortedFor(rows)
	if err != nil {
		return nil, opErr(op, err)
	}
	out, err := scatterSortedOp.call1(rows*cols, []*Buffer{mat, values}, []*Indices{order, start}, []int{rows, cols})
	return out, asOp(op, err)
}

// sortedRows returns the j with idx[j] < rows sorted by (idx[j], j) (order) and, for every row
// i, the range start[i] .. start[i+1] of order whose index is i: a stable counting sort on all
// cores. The rows are cut into at most one bucket per core, 2^shift rows each; the indices are
// first partitioned, chunk by chunk of idx, into the buckets (within a bucket, chunk c's entries
// follow those of the chunks before it, so they stay in index order); then each bucket's rows
// are counted and placed by one core.
func sortedRows(idx []uint32, rows int) (order, start []uint32) {
	start = scratchU32(rows + 1)
	start[0] = 0
	if rows == 0 {
		return scratchU32(0), start
	}
	n := len(idx)
	parts := max(1, min(runtime.GOMAXPROCS(0), rows, n/sortGrain))
	shift := bits.Len(uint((rows+parts-1)/parts - 1))
	nb := (rows-1)>>shift + 1 // buckets, at most parts
	chunk := func(c int) (int, []uint32) { lo := c * n / parts; return lo, idx[lo : (c+1)*n/parts] }
	each := func(k int, f func(k int)) {
		cpu.Parallel(k, 1, func(lo, hi int) {
			for k := lo; k < hi; k++ {
				f(k)
			}
		})
	}
	// at[c*nb+w]: chunk c's entries of bucket w, then where they go in the buckets' arrays.
	at := make([]int, parts*nb)
	each(parts, func(c int) {
		_, ids := chunk(c)
		cnt := make([]int, nb) // not in at: the cores' counters would share cache lines
		for _, i := range ids {
			if int(i) < rows {
				cnt[i>>shift]++
			}
		}
		copy(at[c*nb:], cnt)
	})
	bucket := make([]int, nb+1) // bucket w is vals/pos[bucket[w]:bucket[w+1]]
	total := 0
	for w := range nb {
		bucket[w] = total
		for c := range parts {
			k := c*nb + w
			at[k], total = total, total+at[k]
		}
	}
	bucket[nb] = total
	vals, pos := scratchU32(total), scratchU32(total)
	each(parts, func(c int) {
		base, ids := chunk(c)
		next := append([]int(nil), at[c*nb:(c+1)*nb]...)
		for j, i := range ids {
			if int(i) < rows {
				w := i >> shift
				vals[next[w]], pos[next[w]] = i, uint32(base+j)
				next[w]++
			}
		}
	})
	order = scratchU32(total)
	next := scratchU32(rows)
	each(nb, func(w int) {
		r0, r1 := w<<shift, min((w+1)<<shift, rows)
		b0, b1 := bucket[w], bucket[w+1]
		cnt := start[r0+1 : r1+1] // cnt[r-r0]: the entries of row r, then where row r ends
		clear(cnt)
		for _, i := range vals[b0:b1] {
			cnt[int(i)-r0]++
		}
		nx := next[r0:r1]
		acc := uint32(b0)
		for r := range cnt {
			nx[r] = acc
			acc += cnt[r]
			cnt[r] = acc
		}
		for k, i := range vals[b0:b1] {
			order[nx[int(i)-r0]] = pos[b0+k]
			nx[int(i)-r0]++
		}
	})
	putScratchU32(next)
	putScratchU32(vals)
	putScratchU32(pos)
	return order, start
}

// sortGrain is the fewest indices for which sortedRows uses more than one core.
const sortGrain = 1 << 15
