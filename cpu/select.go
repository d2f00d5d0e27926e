package cpu

import (
	"math"
	"slices"
)

// Row sorts, the scatter of their gradient and multinomial sampling: the twins of ptx/select.cu.
// Sorts involve no arithmetic: every row is ordered by its composites
// uint64(SortKey(x[r, c], desc))<<32 | c, ascending, which are distinct within a row, so that any
// correct sort (these use slices.Sort and a two-way merge; the GPU bitonic networks and a merge
// by bisection) gives the same order. Column indices are stored as uint32 bits in float32 slots
// (math.Float32frombits), and the composites of the long-row path in pairs of slots, the low
// word first (as a uint64 in GPU memory).

// SortTile is the number of elements one GPU block sorts in shared memory (SORT_TILE): rows of at
// most SortTile elements take SortRows, longer ones SortRowsTile, SortRowsMerge and SortRowsEmit.
const SortTile = 2048

// SortKey is the order key of v (tl_sort_key): NaN (any payload) -> 0xffffffff; ±0 ->
// 0x80000000; a negative v -> ^bits(v); a positive v -> bits(v) | 0x80000000. Keys compare as
// the values do, with NaN above +Inf and -0 equal to +0. desc complements the key.
func SortKey(v float32, desc bool) uint32 {
	b := math.Float32bits(v)
	var k uint32
	switch {
	case v != v:
		k = 0xffffffff
	case v == 0:
		k = 0x80000000
	case b&0x80000000 != 0:
		k = ^b
	default:
		k = b | 0x80000000
	}
	if desc {
		return ^k
	}
	return k
}

// composite is the sort composite of column c of a row.
func composite(v float32, c int, desc bool) uint64 {
	return uint64(SortKey(v, desc))<<32 | uint64(uint32(c))
}

// idxBits is column c as the float32 whose bits are c.
func idxBits(c uint32) float32 { return math.Float32frombits(c) }

// keyAt and setKey read and write composite i of a pair-of-slots array.
func keyAt(s []float32, i int) uint64 {
	return uint64(math.Float32bits(s[2*i])) | uint64(math.Float32bits(s[2*i+1]))<<32
}

func setKey(s []float32, i int, v uint64) {
	s[2*i], s[2*i+1] = math.Float32frombits(uint32(v)), math.Float32frombits(uint32(v>>32))
}

// SortRows is the twin of sort_rows, for rows [lo, hi) of a (rows, cols) x with 1 <= cols <=
// SortTile: with c_0, c_1, ... the columns of row r in the ascending order of their composites,
// vals[r, j] = x[r, c_j] and idx[r, j] = c_j (bits) for j < k.
func SortRows(vals, idx, x []float32, cols, k int, desc bool, lo, hi int) {
	keys := make([]uint64, cols)
	for r := lo; r < hi; r++ {
		xr := x[r*cols : (r+1)*cols]
		for c, v := range xr {
			keys[c] = composite(v, c, desc)
		}
		slices.Sort(keys)
		for j, key := range keys[:k] {
			c := uint32(key)
			vals[r*k+j], idx[r*k+j] = xr[c], idxBits(c)
		}
	}
}

// SortRowsTile is the twin of sort_rows_tile, for the tiles [lo, hi) (tile b is tile b % tiles of
// row b / tiles, tiles = ceil(cols / SortTile)): the composites of the tile's columns, ascending,
// into keys at the tile's columns.
func SortRowsTile(keys, x []float32, cols int, desc bool, lo, hi int) {
	tiles := (cols + SortTile - 1) / SortTile
	s := make([]uint64, SortTile)
	for b := lo; b < hi; b++ {
		r, c0 := b/tiles, b%tiles*SortTile
		n := min(SortTile, cols-c0)
		t := s[:n]
		for i := range t {
			t[i] = composite(x[r*cols+c0+i], c0+i, desc)
		}
		slices.Sort(t)
		for i, v := range t {
			setKey(keys, r*cols+c0+i, v)
		}
	}
}

// SortRowsMerge is the twin of sort_rows_merge, for the run pairs [lo, hi) (pair b is pair b %
// pairs of row b / pairs, pairs = ceil(cols / (2 width))): the sorted runs [2m width, (2m+1) width)
// and [(2m+1) width, (2m+2) width) of the row (cut at cols) in src, merged into dst.
func SortRowsMerge(dst, src []float32, cols, width, lo, hi int) {
	pairs := (cols + 2*width - 1) / (2 * width)
	for b := lo; b < hi; b++ {
		r, base := b/pairs, b%pairs*2*width
		mid, end := min(base+width, cols), min(base+2*width, cols)
		off := r * cols
		i, j := base, mid
		for o := base; o < end; o++ {
			if j >= end || (i < mid && keyAt(src, off+i) < keyAt(src, off+j)) {
				setKey(dst, off+o, keyAt(src, off+i))
				i++
			} else {
				setKey(dst, off+o, keyAt(src, off+j))
				j++
			}
		}
	}
}

// SortRowsEmit is the twin of sort_rows_emit, for rows [lo, hi): vals[r, j] = x[r, c] and
// idx[r, j] = c (bits) for the column c of the composite keys[r, j], j < k.
func SortRowsEmit(vals, idx, keys, x []float32, cols, k, lo, hi int) {
	for r := lo; r < hi; r++ {
		for j := range k {
			c := uint32(keyAt(keys, r*cols+j))
			vals[r*k+j], idx[r*k+j] = x[r*cols+int(c)], idxBits(c)
		}
	}
}

// SortRowsBwd is the twin of sort_rows_bwd, for rows [lo, hi): dx[r, idx[r, j]] = g[r, j] for
// j < k, into a dx that holds zeros (unless k == cols, idx then being a permutation of each
// row). The columns of a row must be distinct and below cols.
func SortRowsBwd(dx, g []float32, idx []uint32, cols, k, lo, hi int) {
	for r := lo; r < hi; r++ {
		for j, c := range idx[r*k : (r+1)*k] {
			dx[r*cols+int(c)] = g[r*k+j]
		}
	}
}

// maxFloat32 is FLT_MAX.
const maxFloat32 = math.MaxFloat32

// MultinomialScan is the twin of multinomial_scan, for rows [lo, hi) of the (rows, cols) weights
// p: cdf[r, 0] = p[r, 0], cdf[r, c] = cdf[r, c-1] + p[r, c] (float32, in column order); stat[3r]
// = 1 + the first column whose weight is not in [0, FLT_MAX] (0: none), stat[3r+1] = the number
// of zero weights (±0), stat[3r+2] = 1 when cdf[r, cols-1] > FLT_MAX, else 0 (uint32 bits).
func MultinomialScan(cdf, stat, p []float32, cols, lo, hi int) {
	for r := lo; r < hi; r++ {
		var bad, zeros uint32
		var acc float32
		for c, v := range p[r*cols : (r+1)*cols] {
			if !(v >= 0 && v <= maxFloat32) && bad == 0 {
				bad = uint32(c + 1)
			}
			if v == 0 {
				zeros++
			}
			if c == 0 {
				acc = v
			} else {
				acc += v
			}
			cdf[r*cols+c] = acc
		}
		var inf uint32
		if acc > maxFloat32 {
			inf = 1
		}
		stat[3*r], stat[3*r+1], stat[3*r+2] = idxBits(bad), idxBits(zeros), idxBits(inf)
	}
}

// MultinomialDraw is the twin of multinomial_draw, for samples e in [lo, hi) (e = r*samples +
// s): out[e] = the first column c with cdf[r, c] > t, t = Uniformf(SplitMix64(key + e)) *
// cdf[r, cols-1] (one float32 product), found by bisection of [0, cols): a, b = 0, cols; while
// a < b { m = a + (b-a)/2; if cdf[r, m] > t { b = m } else { a = m + 1 } }; out = min(a, cols-1)
// (bits).
func MultinomialDraw(out, cdf []float32, cols, samples int, key uint64, lo, hi int) {
	for e := lo; e < hi; e++ {
		cr := cdf[e/samples*cols : (e/samples+1)*cols]
		t := float32(Uniformf(SplitMix64(key+uint64(e))) * cr[cols-1])
		a, b := 0, cols
		for a < b {
			m := a + (b-a)/2
			if cr[m] > t {
				b = m
			} else {
				a = m + 1
			}
		}
		out[e] = idxBits(uint32(min(a, cols-1)))
	}
}

// MultinomialKeys is the twin of multinomial_keys, for elements e in [lo, hi) of the weights p:
// keys[e] = p[e] > 0 ? -Logf(u) / p[e] : NaN (0x7fc00000), u = (float32(low32(SplitMix64(key +
// e)) >> 9) + 0.5) * 2^-23. Sampling without replacement draws the columns of the smallest keys
// of a row (the exponential race: -log u is an exponential draw, and the smallest of the
// exponentials of rates p[c] falls on c with probability proportional to p[c]).
func MultinomialKeys(keys, p []float32, key uint64, lo, hi int) {
	for e := lo; e < hi; e++ {
		v := p[e]
		if !(v > 0) {
			keys[e] = math.Float32frombits(0x7fc00000)
			continue
		}
		z := uint32(SplitMix64(key + uint64(e)))
		u := float32((float32(z>>9) + 0.5) * 0x1p-23)
		keys[e] = -Logf(u) / v
	}
}

// KeyHalves splits a key into the two float32 scalars (low and high 32 bits) that
// multinomial_draw and multinomial_keys take; JoinKey is the inverse.
func KeyHalves(key uint64) (lo, hi float32) { return idxBits(uint32(key)), idxBits(uint32(key >> 32)) }

// JoinKey joins the halves of KeyHalves.
func JoinKey(lo, hi float32) uint64 {
	return uint64(math.Float32bits(lo)) | uint64(math.Float32bits(hi))<<32
}
