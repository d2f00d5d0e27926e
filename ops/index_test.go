package ops

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/torchlean-go/torchlean/cpu"
	"github.com/torchlean-go/torchlean/internal/testenv"
)

func TestIndexSemantics(t *testing.T) {
	defer SetDeterministic(Deterministic())
	for _, d := range devices(t) {
		vec := mustBuf(t, d, []float32{10, 20, 30})
		mat := mustBuf(t, d, []float32{1, 2, 3, 4, 5, 6}) // (3, 2)
		r, err := GatherVec(vec, 3, []int{2, 0, 3, testenv.Wide(math.MaxUint32), 2})
		expect(t, "gather_vec", download(t, r, err), 30, 10, 0, 0, 30)
		r, err = GatherRows(mat, 3, 2, []int{1, 7, 0})
		expect(t, "gather_rows", download(t, r, err), 3, 4, 0, 0, 1, 2)
		r, err = GatherRows(mat, 3, 2, nil)
		if got := download(t, r, err); len(got) != 0 {
			t.Errorf("gather of no rows: %v", got)
		}
		for _, det := range []bool{false, true} {
			SetDeterministic(det)
			vals := mustBuf(t, d, []float32{1, 2, 4, 8})
			r, err = ScatterAdd(vec, vals, 3, []int{2, 5, 2, 0})
			expect(t, "scatter_add", download(t, r, err), 18, 20, 35)
			r, err = ScatterAddRows(mat, vals, 3, 2, []int{2, 2})
			expect(t, "scatter_add_rows", download(t, r, err), 1, 2, 3, 4, 5+1+4, 6+2+8)
			r, err = ScatterAddRows(mat, vals, 3, 2, []int{9, 1})
			expect(t, "scatter_add_rows ignores out of range", download(t, r, err), 1, 2, 3+4, 4+8, 5, 6)
			row := mustBuf(t, d, []float32{100, 200})
			r, err = ScatterAddRow(mat, row, 3, 2, 1)
			expect(t, "scatter_add_row", download(t, r, err), 1, 2, 103, 204, 5, 6)
			r, err = ScatterAddRow(mat, row, 3, 2, 3)
			expect(t, "scatter_add_row ignores a row past the end", download(t, r, err), 1, 2, 3, 4, 5, 6)
			if _, err := ScatterAddRow(mat, row, 3, 2, -1); err == nil || !strings.Contains(err.Error(), "scatter_add_row: negative row index -1") {
				t.Errorf("scatter_add_row of row -1: %v", err)
			}
			// -0.0 in the matrix survives rows that receive nothing.
			z := mustBuf(t, d, []float32{float32(math.Copysign(0, -1)), 1})
			r, err = ScatterAdd(z, vals, 2, []int{1, 1, 1, 1})
			got := download(t, r, err)
			if !math.Signbit(float64(got[0])) || got[1] != 16 {
				t.Errorf("scatter_add (det %v) into [-0, 1]: %v", det, got)
			}
			vals.Release()
			row.Release()
			z.Release()
		}
		// Bad indices and sizes are errors.
		for _, c := range []struct {
			idx  []int
			want string
		}{{[]int{-1}, "negative index -1 at position 0"}, {[]int{testenv.Wide(math.MaxUint32 + 1)}, "does not fit in uint32"}} {
			idx := c.idx
			if idx[0] == math.MaxInt32 { // int has 32 bits: every index fits in uint32
				continue
			}
			if _, err := GatherVec(vec, 3, idx); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("gather with index %v: %v", idx, err)
			}
			one := mustBuf(t, d, []float32{1})
			if _, err := ScatterAdd(vec, one, 3, idx); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("scatter with index %v: %v", idx, err)
			}
			one.Release()
		}
		if _, err := ScatterAdd(vec, vec, 3, []int{0, 1}); err == nil {
			t.Error("scatter with 3 values for 2 indices accepted")
		}
		if _, err := GatherRows(mat, 2, 2, []int{0}); err == nil {
			t.Error("gather from a wrong shape accepted")
		}
		vec.Release()
		mat.Release()
	}
}

// TestSortedRows checks the stable counting sort behind the deterministic scatter.
func TestSortedRows(t *testing.T) {
	order, start := sortedRows([]uint32{3, 1, 3, 9, 0, 1, 3}, 4)
	want := []uint32{4, 1, 5, 0, 2, 6}
	wantStart := []uint32{0, 1, 3, 3, 6}
	if len(order) != len(want) || len(start) != len(wantStart) {
		t.Fatalf("order %v start %v", order, start)
	}
	for i := range want {
		if order[i] != want[i] {
			t.Fatalf("order %v, want %v", order, want)
		}
	}
	for i := range wantStart {
		if start[i] != wantStart[i] {
			t.Fatalf("start %v, want %v", start, wantStart)
		}
	}
}

// TestSortedRowsParallel compares the parallel sort with a sequential stable counting sort on
// inputs large enough to be split, with indices out of range and rows nobody hits.
func TestSortedRowsParallel(t *testing.T) {
	for _, c := range []struct{ n, rows int }{{1 << 20, 65536}, {300000, 7}, {200000, 1 << 20}, {70000, 1}, {5, 0}} {
		idx := make([]uint32, c.n)
		x := uint64(c.n)
		for j := range idx {
			x = cpu.SplitMix64(x)
			idx[j] = uint32(x % uint64(c.rows+c.rows/8+1)) // about 1 in 9 out of range
		}
		start := make([]uint32, c.rows+1)
		for _, i := range idx {
			if int(i) < c.rows {
				start[i+1]++
			}
		}
		for i := range c.rows {
			start[i+1] += start[i]
		}
		order := make([]uint32, start[c.rows])
		next := append([]uint32(nil), start[:c.rows]...)
		for j, i := range idx {
			if int(i) < c.rows {
				order[next[i]] = uint32(j)
				next[i]++
			}
		}
		gotOrder, gotStart := sortedRows(idx, c.rows)
		if !slices.Equal(gotOrder, order) || !slices.Equal(gotStart, start) {
			t.Errorf("n=%d rows=%d: parallel sort differs from the sequential one", c.n, c.rows)
		}
	}
}

func TestIndicesReuse(t *testing.T) {
	defer SetDeterministic(Deterministic())
	for _, d := range devices(t) {
		ix, err := NewIndices(d, []int{2, 0, 2, 7})
		if err != nil {
			t.Fatal(err)
		}
		mat := mustBuf(t, d, []float32{1, 2, 3, 4, 5, 6}) // (3, 2)
		g := dl(t, func() (*Buffer, error) { return GatherRowsIdx(mat, 3, 2, ix) })
		expect(t, "gather", g, 5, 6, 1, 2, 5, 6, 0, 0)
		vals := mustBuf(t, d, g)
		for _, det := range []bool{true, true, false} { // the second deterministic call reuses the sort
			SetDeterministic(det)
			r := dl(t, func() (*Buffer, error) { return ScatterAddRowsIdx(mat, vals, 3, 2, ix) })
			expect(t, "scatter", r, 1+1, 2+2, 3, 4, 5+5+5, 6+6+6)
		}
		if !ix.Release() || ix.Release() {
			t.Error("Release not true exactly once")
		}
		if _, err := GatherRowsIdx(mat, 3, 2, ix); err == nil || !strings.Contains(err.Error(), "released") {
			t.Errorf("gather with released indices: %v", err)
		}
		if _, err := NewIndices(d, []int{1, -2}); err == nil {
			t.Error("negative index accepted")
		}
		// Indices are checked in parallel chunks; the error names the first bad one.
		big := make([]int, 300000)
		big[200001], big[250000] = -5, testenv.Wide(math.MaxUint32+7)
		if _, err := NewIndices(d, big); err == nil || !strings.Contains(err.Error(), "index -5 at position 200001") {
			t.Errorf("indices with bad entries at 200001 and 250000: %v", err)
		}
		big[200001], big[250000] = 0, 1
		if bix, err := NewIndices(d, big); err != nil || bix.Len() != len(big) || !bix.Release() || bix.Len() != len(big) {
			t.Errorf("300000 good indices: %v", err)
		}
		mat.Release()
		vals.Release()
	}
}

// BenchmarkSortedRows times the deterministic scatter's sort of 1M indices into 65536 rows.
func BenchmarkSortedRows(b *testing.B) {
	const n, rows = 1 << 20, 65536
	idx := make([]uint32, n)
	x := uint64(1)
	for j := range idx {
		x = cpu.SplitMix64(x)
		idx[j] = uint32(x % rows)
	}
	for b.Loop() {
		order, start := sortedRows(idx, rows)
		putScratchU32(order)
		putScratchU32(start)
	}
}

// TestNilAndZeroIndices: the methods of a nil *Indices answer without panicking, the zero
// Indices holds nothing to release, and ops given either fail with an error.
func TestNilAndZeroIndices(t *testing.T) {
	var nilIx *Indices
	if nilIx.Len() != 0 || nilIx.Device() != nil || nilIx.Release() {
		t.Error("nil Indices: Len, Device or Release")
	}
	if (&Indices{}).Release() {
		t.Error("the zero Indices released something")
	}
	mat, _ := FromFloat32(CPU(), []float32{1, 2, 3, 4})
	defer mat.Release()
	for _, ix := range []*Indices{nilIx, {}} {
		if out, err := GatherRowsIdx(mat, 2, 2, ix); err == nil || !strings.Contains(err.Error(), "NewIndices") {
			t.Errorf("GatherRowsIdx with %#v: %v, %v", ix, out, err)
		}
	}
}
