package ops

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/torchlean-go/torchlean/cpu"
)

// TestIndicesUpdate: Indices refilled with Update give the gathers and scatters (both modes,
// sorted forms built before the update for several row counts, in-range counts that change)
// of fresh Indices with the new values, bit for bit, in the same device memory; bad updates
// are errors that change nothing.
func TestIndicesUpdate(t *testing.T) {
	defer SetDeterministic(Deterministic())
	const n, rows, cols = 70000, 997, 3 // n above sortGrain: the parallel sort
	draw := func(seed uint64, hi int) []int {
		idx := make([]int, n)
		x := seed
		for j := range idx {
			x = cpu.SplitMix64(x)
			idx[j] = int(x % uint64(hi))
		}
		return idx
	}
	for _, d := range devices(t) {
		matVals := make([]float32, rows*cols)
		for i := range matVals {
			matVals[i] = float32(i%13) - 6.5
		}
		mat := mustBuf(t, d, matVals)
		mat2 := mustBuf(t, d, matVals[:(rows-500)*cols])
		valVals := make([]float32, n*cols)
		for i := range valVals {
			valVals[i] = float32(i%29)*0.37 - 5
		}
		vals := mustBuf(t, d, valVals)
		first := draw(1, rows)
		ix, err := NewIndices(d, first)
		if err != nil {
			t.Fatal(err)
		}
		run := func(ix *Indices) (g, fast, det, det2 []float32) {
			SetDeterministic(false)
			g = dl(t, func() (*Buffer, error) { return GatherRowsIdx(mat, rows, cols, ix) })
			fast = dl(t, func() (*Buffer, error) { return ScatterAddRowsIdx(mat, vals, rows, cols, ix) })
			SetDeterministic(true)
			det = dl(t, func() (*Buffer, error) { return ScatterAddRowsIdx(mat, vals, rows, cols, ix) })
			det2 = dl(t, func() (*Buffer, error) { return ScatterAddRowsIdx(mat2, vals, rows-500, cols, ix) })
			return
		}
		run(ix) // builds the sorted forms for rows and rows-500
		buf := ix.buf
		sorted := map[int][2]*Indices{}
		for r, s := range ix.sorted {
			sorted[r] = s
		}
		for k, next := range [][]int{draw(2, rows+300), draw(3, 10), draw(4, rows)} { // out of range, then in range again
			if err := ix.Update(next); err != nil {
				t.Fatal(err)
			}
			fresh, err := NewIndices(d, next)
			if err != nil {
				t.Fatal(err)
			}
			g, fast, det, det2 := run(ix)
			wg, wfast, wdet, wdet2 := run(fresh)
			fresh.Release()
			for _, c := range []struct {
				name      string
				got, want []float32
			}{{"gather", g, wg}, {"fast scatter", fast, wfast}, {"sorted scatter", det, wdet}, {"sorted scatter, fewer rows", det2, wdet2}} {
				if !slices.EqualFunc(c.got, c.want, func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }) {
					t.Errorf("%s: update %d: %s differs from fresh indices'", d, k, c.name)
				}
			}
			if ix.buf != buf || len(ix.sorted) != 2 {
				t.Errorf("%s: update %d moved the indices or changed their sorted forms (%d)", d, k, len(ix.sorted))
			}
			for r, s := range ix.sorted {
				if sorted[r] != s || s[0].Len() != n {
					t.Errorf("%s: update %d: the sorted form for %d rows is not the one refilled in place", d, k, r)
				}
			}
		}
		// Bad updates change nothing.
		before := slices.Clone(ix.host)
		bad := draw(5, rows)
		bad[4000] = -3
		for _, c := range []struct {
			idx  []int
			want string
		}{{bad, "negative index -3 at position 4000"}, {bad[:5], "5 indices for Indices of length 70000"}} {
			if err := ix.Update(c.idx); err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "ops: indices update") {
				t.Errorf("%s: Update: %v, want an error containing %q", d, err, c.want)
			}
		}
		if !slices.Equal(ix.host, before) {
			t.Errorf("%s: a refused update changed the indices", d)
		}
		ix.Release()
		if err := ix.Update(first); !errors.Is(err, ErrReleased) {
			t.Errorf("%s: Update of released indices: %v", d, err)
		}
		var nilIx *Indices
		if err := nilIx.Update(nil); err == nil {
			t.Error("Update of nil Indices succeeded")
		}
		empty, err := NewIndices(d, nil)
		if err != nil || empty.Update([]int{}) != nil {
			t.Errorf("%s: Update of empty indices: %v", d, err)
		}
		empty.Release()
		mat.Release()
		mat2.Release()
		vals.Release()
	}
}

// ExampleIndices_Update refills the indices of a gather between two uses, in place (as a captured
// graph that reads them needs).
func ExampleIndices_Update() {
	d := CPU()
	table, _ := FromFloat32(d, []float32{10, 11, 20, 21, 30, 31}) // (3, 2)
	defer table.Release()
	ix, _ := NewIndices(d, []int{2, 0})
	defer ix.Release()
	a, _ := GatherRowsIdx(table, 3, 2, ix)
	_ = ix.Update([]int{1, 1})
	b, _ := GatherRowsIdx(table, 3, 2, ix)
	av, _ := a.Float32s()
	bv, _ := b.Float32s()
	fmt.Println(av, bv)
	// Output: [30 31 10 11] [20 21 20 21]
}
