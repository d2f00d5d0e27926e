package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// attnSame reports whether x and y have the same bits (any NaN matches any NaN, as in the mirror
// test).
func attnSame(x, y float32) bool {
	return math.Float32bits(x) == math.Float32bits(y) || (x != x && y != y)
}

func attnCompare(t *testing.T, what string, got, want []float32) {
	t.Helper()
	bad := 0
	for i := range want {
		if !attnSame(got[i], want[i]) {
			if bad < 3 {
				t.Errorf("%s[%d] = %g (%#08x), want %g (%#08x)", what, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
			}
			bad++
		}
	}
	if bad > 3 {
		t.Errorf("%s: %d of %d differ", what, bad, len(want))
	}
}

// attnRandom returns n values of spread about 2, with NaN and ±Inf sprinkled in when special.
func attnRandom(r *rand.Rand, n int, special bool) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64() * 2)
		if special && r.IntN(97) == 0 {
			x[i] = []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 0, float32(math.Copysign(0, -1))}[r.IntN(5)]
		}
	}
	return x
}

type attnCase struct {
	bh, nq, nk, d, flags int
	shared, special      bool
	scale                float32
}

// attnCases covers odd and fast-path head dims, tile and block edges, every mask kind, shared and
// per-sequence masks, fully blocked rows and NaN/Inf operands.
func attnCases() []attnCase {
	var cs []attnCase
	r := rand.New(rand.NewPCG(7, 25))
	ds := []int{1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 127, 128, 129, 200, 255, 256}
	ns := []int{1, 2, 5, 15, 16, 17, 31, 33, 64, 65, 100, 129, 300}
	flagSets := []int{0, AttnCausal, AttnFill, AttnHard, AttnHard | AttnCausal, AttnFill | AttnCausal}
	for i, d := range ds {
		for j := 0; j < 4; j++ {
			nq := ns[r.IntN(len(ns))]
			nk := nq
			if j%2 == 1 {
				nk = ns[r.IntN(len(ns))]
			}
			if d > 128 && nq*nk > 100*100 {
				nq, nk = min(nq, 65), min(nk, 100)
			}
			cs = append(cs, attnCase{bh: 1 + r.IntN(3), nq: nq, nk: nk, d: d, flags: flagSets[(i+j)%len(flagSets)],
				shared: r.IntN(2) == 0, special: (i+j)%5 == 0, scale: float32(1 / math.Sqrt(float64(d)))})
		}
	}
	cs = append(cs,
		attnCase{bh: 2, nq: 300, nk: 300, d: 32, flags: AttnCausal, scale: 0.17},
		attnCase{bh: 1, nq: 300, nk: 257, d: 64, flags: AttnHard, scale: 0.125},
		attnCase{bh: 1, nq: 40, nk: 290, d: 16, flags: AttnFill | AttnHard, scale: 0.25},
		attnCase{bh: 3, nq: 70, nk: 70, d: 63, flags: AttnFill, special: true, scale: 3},
	)
	return cs
}

// runAttn runs the forward and both backwards of the current code (fwd, kv, qf) or of the
// reference twins, each over units split in two ranges.
func runAttn(c attnCase, q, k, v, mask, dout []float32, ref bool) (o, lse, dq, dk, dv []float32) {
	o, lse = make([]float32, c.bh*c.nq*c.d), make([]float32, c.bh*c.nq)
	dq, dk, dv = make([]float32, len(q)), make([]float32, len(k)), make([]float32, len(v))
	mstride := c.nq * c.nk
	if c.shared {
		mstride = 0
	}
	dd := make([]float32, c.bh*c.nq)
	uq, uk := AttnUnits(c.bh, c.nq), AttnUnits(c.bh, c.nk)
	for _, r := range [][2]int{{0, uq / 2}, {uq / 2, uq}} {
		if ref {
			refFlashAttentionFwd(o, lse, q, k, v, mask, c.bh, c.nq, c.nk, c.d, mstride, c.flags, c.scale, r[0], r[1])
		} else {
			FlashAttentionFwd(o, lse, q, k, v, mask, c.bh, c.nq, c.nk, c.d, mstride, c.flags, c.scale, r[0], r[1])
		}
	}
	FlashAttentionRowDot(dd, dout, o, c.d, 0, c.bh*c.nq)
	for _, r := range [][2]int{{0, uk / 2}, {uk / 2, uk}} {
		if ref {
			refFlashAttentionBwdKV(dk, dv, q, k, v, mask, dout, lse, dd, c.bh, c.nq, c.nk, c.d, mstride, c.flags, c.scale, r[0], r[1])
		} else {
			FlashAttentionBwdKV(dk, dv, q, k, v, mask, dout, lse, dd, c.bh, c.nq, c.nk, c.d, mstride, c.flags, c.scale, r[0], r[1])
		}
	}
	for _, r := range [][2]int{{0, uq / 2}, {uq / 2, uq}} {
		if ref {
			refFlashAttentionBwdQ(dq, q, k, v, mask, dout, lse, dd, c.bh, c.nq, c.nk, c.d, mstride, c.flags, c.scale, r[0], r[1])
		} else {
			FlashAttentionBwdQ(dq, q, k, v, mask, dout, lse, dd, c.bh, c.nq, c.nk, c.d, mstride, c.flags, c.scale, r[0], r[1])
		}
	}
	return
}

// TestAttentionMatchesReference: the tiled SIMD twins give the bits of the committed one-row-at-a-
// time twins (attention_ref_test.go) on every case, with every kernel set of this machine
// (AVX-512 and the pure-Go loops; -tags noasm runs the loops alone).
func TestAttentionMatchesReference(t *testing.T) {
	for _, level := range vecLevels() {
		t.Run(level, func(t *testing.T) {
			defer useVecLevel(useVecLevel(level))
			for ci, c := range attnCases() {
				if testing.Short() && ci%4 != 0 {
					continue
				}
				r := rand.New(rand.NewPCG(uint64(ci), 3))
				q := attnRandom(r, c.bh*c.nq*c.d, c.special)
				k := attnRandom(r, c.bh*c.nk*c.d, c.special)
				v := attnRandom(r, c.bh*c.nk*c.d, c.special)
				dout := attnRandom(r, c.bh*c.nq*c.d, c.special)
				var mask []float32
				if c.flags&(AttnFill|AttnHard) != 0 {
					mb := c.bh
					if c.shared {
						mb = 1
					}
					mask = make([]float32, mb*c.nq*c.nk)
					for i := range mask {
						if r.IntN(3) != 0 {
							mask[i] = 1
						}
					}
					for i := 0; i < c.nq; i += 3 { // fully blocked rows
						clear(mask[i*c.nk : (i+1)*c.nk])
					}
				}
				name := fmt.Sprintf("case %d %+v", ci, c)
				o, lse, dq, dk, dv := runAttn(c, q, k, v, mask, dout, false)
				ro, rlse, rdq, rdk, rdv := runAttn(c, q, k, v, mask, dout, true)
				attnCompare(t, name+" O", o, ro)
				attnCompare(t, name+" LSE", lse, rlse)
				attnCompare(t, name+" dQ", dq, rdq)
				attnCompare(t, name+" dK", dk, rdk)
				attnCompare(t, name+" dV", dv, rdv)
			}
		})
	}
}
