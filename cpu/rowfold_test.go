package cpu

import (
	"math"
	"slices"
	"testing"
)

// TestRowFoldLevels checks that every kernel set folds rows as the pure-Go loops do (rowFold's
// sums and maxima, rowSubSq's centred row and sum of squares), partials included, on rows of
// whole and partial 256-element chunks holding signed zeros, infinities and NaNs.
func TestRowFoldLevels(t *testing.T) {
	specials := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 1e-45, -3.3e38}
	rowOf := func(n, kind int) []float32 {
		row := make([]float32, n)
		for i := range row {
			r := float32(SplitMix64(uint64(kind)<<32+uint64(i))>>40) / (1 << 24)
			switch kind {
			case 0: // ordinary values
				row[i] = 8*r - 4
			case 1: // signed zeros only: max and sum depend on the order of +0 and -0
				row[i] = specials[i*7%2]
			default: // ordinary values with specials sprinkled (one in 97)
				row[i] = 8*r - 4
				if i%97 == kind {
					row[i] = specials[(i/97)%len(specials)]
				}
			}
		}
		return row
	}
	type result struct {
		sum, max, sq float32
		ps, pm, pq   [rowThreads]float32
		d            []float32
	}
	fold := func(row []float32) (r result) {
		r.sum = rowFold(&r.ps, row, false)
		r.max = rowFold(&r.pm, row, true)
		r.d = make([]float32, len(row))
		r.sq = rowSubSq(&r.pq, r.d, row, 0.75)
		return r
	}
	for _, n := range []int{1, 255, 256, 257, 4096, 4099, 8192 + 13} {
		for kind := 0; kind < 6; kind++ {
			row := rowOf(n, kind)
			want := func() result { prev := useVecLevel("go"); defer useVecLevel(prev); return fold(row) }()
			for _, l := range vecLevels() {
				got := func() result { prev := useVecLevel(l); defer useVecLevel(prev); return fold(row) }()
				same := sameVec(got.sum, want.sum) && sameVec(got.max, want.max) && sameVec(got.sq, want.sq)
				for i := range rowThreads {
					same = same && sameVec(got.ps[i], want.ps[i]) && sameVec(got.pm[i], want.pm[i]) && sameVec(got.pq[i], want.pq[i])
				}
				for i := range row {
					same = same && sameVec(got.d[i], want.d[i])
				}
				if !same {
					t.Errorf("%s, n=%d, rows of kind %d: sum %v max %v squares %v, want %v %v %v (or partials differ)",
						l, n, kind, got.sum, got.max, got.sq, want.sum, want.max, want.sq)
				}
			}
		}
	}
}

// TestRowFoldFastUsed: the register-held AVX-512 row folds run under every kernel set built on
// AVX-512 (a set that silently fell back to the Go loop would still give the same bits).
func TestRowFoldFastUsed(t *testing.T) {
	x := make([]float32, 2*rowThreads)
	d := make([]float32, len(x))
	for _, l := range vecLevels() {
		if l != "avx512" && l != "mixed" {
			continue
		}
		prev := useVecLevel(l)
		var p [rowThreads]float32
		n1, n2, n3 := rowFoldFast(&p, x, false), rowFoldFast(&p, x, true), rowSubSqFast(&p, d, x, 1)
		useVecLevel(prev)
		if n1 != len(x) || n2 != len(x) || n3 != len(x) {
			t.Errorf("%s: the fast row folds did %d, %d and %d of %d elements", l, n1, n2, n3, len(x))
		}
	}
}

// TestRowFoldShortRows checks rowFold on rows shorter than a chunk, where only the first
// treeWidth partials are set and the tree starts at the level that reads them, against the full
// 256-partial fold (every partial set, every level of the tree), with stale partials left in p
// by a longer row before; and the whole-row SGD step on vector lanes against its scalar formula.
func TestRowFoldShortRows(t *testing.T) {
	specials := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())}
	full := func(row []float32, isMax bool) float32 {
		var q [rowThreads]float32
		for i := range q {
			q[i] = negZero
			if isMax {
				q[i] = negInf
			}
		}
		for i, v := range row {
			if isMax {
				q[i%rowThreads] = Maxf(q[i%rowThreads], v)
			} else {
				q[i%rowThreads] += v
			}
		}
		for s := rowThreads / 2; s >= 1; s /= 2 {
			for i := range s {
				if isMax {
					q[i] = Maxf(q[i], q[i+s])
				} else {
					q[i] += q[i+s]
				}
			}
		}
		return q[0]
	}
	var p [rowThreads]float32
	for n := 0; n <= rowThreads+3; n++ {
		for kind := range 3 {
			row := make([]float32, n)
			for i := range row {
				row[i] = float32(SplitMix64(uint64(n)<<20+uint64(kind)<<16+uint64(i))>>40)/(1<<22) - 2
				if kind == 1 {
					row[i] = specials[i%2] // signed zeros
				} else if kind == 2 && i%5 == 3 {
					row[i] = specials[(i/5)%len(specials)]
				}
			}
			for _, isMax := range []bool{false, true} {
				for i := range p { // stale partials of an earlier row
					p[i] = float32(i) + 0.5
				}
				if got, want := rowFold(&p, row, isMax), full(row, isMax); !sameVec(got, want) {
					t.Errorf("n=%d kind %d max %v: rowFold %v, the full fold %v", n, kind, isMax, got, want)
				}
			}
		}
	}

	for _, l := range vecLevels() {
		prev := useVecLevel(l)
		for _, n := range []int{1, 15, 16, 17, 100003} {
			param, grad := make([]float32, n), make([]float32, n)
			for i := range param {
				param[i] = float32(SplitMix64(uint64(i))>>40)/(1<<23) - 1
				grad[i] = float32(SplitMix64(uint64(i)+1<<40)>>40)/(1<<20) - 8
				if i%7 == 3 {
					grad[i] = specials[(i/7)%len(specials)]
				}
			}
			want := slices.Clone(param)
			for i, p := range want {
				want[i] = p - float32(0.0625*grad[i])
			}
			SGDStep(param, grad, 0.0625, 0)
			for i := range param {
				if !sameVec(param[i], want[i]) {
					t.Errorf("%s: SGDStep element %d of %d: %v, want %v", l, i, n, param[i], want[i])
					break
				}
			}
		}
		useVecLevel(prev)
	}
}
