package cpu

import (
	"math"
	"slices"
	"testing"
)

// TestSortKeyOrder: the keys of an ascending list of floats (NaN last, ±0 together) ascend, and
// descending keys are their complements.
func TestSortKeyOrder(t *testing.T) {
	inf := float32(math.Inf(1))
	negZero := float32(math.Copysign(0, -1))
	up := []float32{-inf, -math.MaxFloat32, -1, -math.SmallestNonzeroFloat32, negZero, 0,
		math.SmallestNonzeroFloat32, 1, math.MaxFloat32, inf, float32(math.NaN())}
	for i := 1; i < len(up); i++ {
		a, b := SortKey(up[i-1], false), SortKey(up[i], false)
		if up[i-1] == up[i] { // ±0
			if a != b {
				t.Errorf("%v and %v: keys %#x, %#x differ", up[i-1], up[i], a, b)
			}
		} else if a >= b {
			t.Errorf("%v < %v but keys %#x >= %#x", up[i-1], up[i], a, b)
		}
		if SortKey(up[i], true) != ^b {
			t.Errorf("descending key of %v", up[i])
		}
	}
	if SortKey(math.Float32frombits(0xffc00001), false) != 0xffffffff {
		t.Errorf("a negative NaN does not sort last")
	}
}

// TestSortLongPath: tiles, merge passes of doubling width and the emit give what SortRows'
// single sort gives, on rows of several tiles (ragged last tile) with ties and specials.
func TestSortLongPath(t *testing.T) {
	const rows, cols = 3, 3*SortTile + 77
	x := make([]float32, rows*cols)
	few := []float32{float32(math.NaN()), float32(math.Inf(-1)), 0, float32(math.Copysign(0, -1)), 1, 2}
	for i := range x {
		x[i] = few[SplitMix64(uint64(i))%uint64(len(few))]
		if i%3 == 0 {
			x[i] = float32(SplitMix64(uint64(i))%1000) / 7
		}
	}
	for _, desc := range []bool{false, true} {
		for _, k := range []int{cols, 5} {
			wantV, wantI := make([]float32, rows*k), make([]float32, rows*k)
			SortRows(wantV, wantI, x, cols, k, desc, 0, rows) // SortRows works on any cols
			keys := make([]float32, 2*rows*cols)
			tiles := (cols + SortTile - 1) / SortTile
			SortRowsTile(keys, x, cols, desc, 0, rows*tiles)
			for w := SortTile; w < cols; w *= 2 {
				next := make([]float32, len(keys))
				SortRowsMerge(next, keys, cols, w, 0, rows*((cols+2*w-1)/(2*w)))
				keys = next
			}
			gotV, gotI := make([]float32, rows*k), make([]float32, rows*k)
			SortRowsEmit(gotV, gotI, keys, x, cols, k, 0, rows)
			if !slices.Equal(bitsOf(gotV), bitsOf(wantV)) || !slices.Equal(bitsOf(gotI), bitsOf(wantI)) {
				t.Errorf("desc=%v k=%d: the long path differs from SortRows", desc, k)
			}
		}
	}
}

func bitsOf(x []float32) []uint32 {
	out := make([]uint32, len(x))
	for i, v := range x {
		out[i] = math.Float32bits(v)
	}
	return out
}

// TestMultinomialDrawZeros: a zero weight is never drawn in 10000 draws, the scan's checks count
// zeros and flag the first bad weight, and keys round-trip through their halves.
func TestMultinomialDrawZeros(t *testing.T) {
	p := []float32{0, 2, 0, 0, 1, 0}
	cdf, stat := make([]float32, 6), make([]float32, 3)
	MultinomialScan(cdf, stat, p, 6, 0, 1)
	if z := math.Float32bits(stat[1]); z != 4 || math.Float32bits(stat[0]) != 0 || math.Float32bits(stat[2]) != 0 {
		t.Errorf("stat %v", bitsOf(stat))
	}
	out := make([]float32, 10000)
	MultinomialDraw(out, cdf, 6, len(out), 5, 0, len(out))
	for e, v := range out {
		if c := math.Float32bits(v); p[c] == 0 {
			t.Fatalf("draw %d took column %d of weight 0", e, c)
		}
	}
	MultinomialScan(cdf, stat, []float32{1, float32(math.NaN()), -1, 0, 1, 1}, 6, 0, 1)
	if b := math.Float32bits(stat[0]); b != 2 {
		t.Errorf("first bad weight reported at %d, want column 1 (+1)", b)
	}
	lo, hi := KeyHalves(0xfff0000000000001)
	if JoinKey(lo, hi) != 0xfff0000000000001 {
		t.Errorf("key halves do not round-trip")
	}
}
