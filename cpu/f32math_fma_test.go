package cpu

import (
	"math"
	"math/big"
	"runtime"
	"sync"
	"testing"
)

// fmaRef is the exact reference: a*b + c computed exactly with big.Float, then rounded once to
// float32 (big.Float.Float32 rounds to nearest even, subnormals and overflow included); the
// special cases (NaN, infinities, exact zero signs) follow IEEE 754.
func fmaRef(a, b, c float32) float32 {
	fa, fb, fc := float64(a), float64(b), float64(c)
	if a != a || b != b || c != c || math.IsInf(fa, 0) || math.IsInf(fb, 0) || math.IsInf(fc, 0) {
		r := fa*fb + fc // float64 gets every special case right
		if r != r {
			return CanonicalNaN()
		}
		return float32(r)
	}
	if a == 0 || b == 0 {
		// the product is an exact (signed) zero: zero + c follows the IEEE sum of zeros.
		p := fa * fb
		return float32(p + fc)
	}
	x := new(big.Float).SetPrec(2000).SetFloat64(fa)
	x.Mul(x, new(big.Float).SetFloat64(fb))
	x.Add(x, new(big.Float).SetFloat64(fc))
	if x.Sign() == 0 {
		return 0 // exact cancellation of nonzero terms: +0 in round to nearest
	}
	y, _ := x.Float32()
	return y
}

func sameBits(x, y float32) bool { return math.Float32bits(x) == math.Float32bits(y) }

// TestFMARefSelf checks the reference rounding at the places where a wrong one would hide a
// wrong Fmaf: subnormal rounding, ties to even, the overflow threshold.
func TestFMARefSelf(t *testing.T) {
	tiny := float32(math.SmallestNonzeroFloat32)
	cases := []struct{ a, b, c, want float32 }{
		{0x1p-75, 0x1p-75, 0, 0},                                         // 2^-150: tie, to even (0)
		{0x1.8p-75, 0x1p-75, 0, tiny},                                    // 1.5*2^-150 -> 2^-149
		{0x1.8p-75, 0x1p-74, 0, 2 * tiny},                                // 1.5*2^-149: tie, to even (2^-148)
		{0x1p-75, 0x1p-75, tiny, 2 * tiny},                               // 1.5*2^-149: tie, to even
		{0x1p52, 0x1p51, math.MaxFloat32, float32(math.Inf(1))},          // FLT_MAX + 2^103: tie -> Inf
		{0x1.000002p52, 0x1.fffffcp50, math.MaxFloat32, math.MaxFloat32}, // just below the tie
		{3, 5, -15, 0},
		{-3, 5, 15, 0},
	}
	for _, k := range cases {
		if got := fmaRef(k.a, k.b, k.c); !sameBits(got, k.want) {
			t.Errorf("fmaRef(%g, %g, %g) = %g, want %g", k.a, k.b, k.c, got, k.want)
		}
	}
}

func TestFMASpecial(t *testing.T) {
	inf := float32(math.Inf(1))
	nan := CanonicalNaN()
	negz := float32(math.Copysign(0, -1))
	tiny := float32(math.SmallestNonzeroFloat32)
	cases := []struct{ a, b, c, want float32 }{
		{2, 3, 4, 10},
		{negz, 1, negz, negz},
		{0, -1, 0, 0},
		{negz, negz, negz, 0},
		{0, 5, negz, 0},
		{3, 5, -15, 0},
		{-3, 5, 15, 0},
		{inf, 0, 1, nan},
		{inf, 1, -inf, nan},
		{inf, 2, 1, inf},
		{-inf, 2, 1, -inf},
		{1, 2, inf, inf},
		{1, 1, float32(math.Float32frombits(0x7fa00001)), nan},
		{math.MaxFloat32, 2, -math.MaxFloat32, math.MaxFloat32},
		{math.MaxFloat32, 2, 0, inf},
		{-math.MaxFloat32, 2, 0, -inf},
		{0x1p-75, 0x1p-75, 0, 0},
		{0x1p-75, -0x1p-75, 0, negz},
		{0x1.8p-75, 0x1p-75, 0, tiny},
		{0x1p52, 0x1p51, math.MaxFloat32, inf},
		{0x1.000002p52, 0x1.fffffcp50, math.MaxFloat32, math.MaxFloat32},
		// a*b = 2^-24 (1 - 2^-46): c + a*b rounds to a float64 tie of float32 (double-rounding
		// traps), the exact value lies below (resp. above, for -a*b) that tie.
		{0x1.000002p-24, 0x1.fffffcp-1, 1, 1},
		{0x1.000002p-24, 0x1.fffffcp-1, 0x1.000002p0, 0x1.000002p0},
		{-0x1.000002p-24, 0x1.fffffcp-1, 0x1.000006p0, 0x1.000006p0},
	}
	for _, k := range cases {
		got := Fmaf(k.a, k.b, k.c)
		if !sameBits(got, k.want) {
			t.Errorf("Fmaf(%g, %g, %g) = %g (%08x), want %g (%08x)", k.a, k.b, k.c,
				got, math.Float32bits(got), k.want, math.Float32bits(k.want))
		}
	}
}

// TestFMAExact compares Fmaf with the exact reference on the fmaCase triples (random bits,
// cancellation, ties after rounding to float64, subnormal results, overflow, exact
// cancellation, special values): 2^22 of them, 2^24 with TORCHLEAN_EXHAUSTIVE=1, 2^17 with
// -short. It also checks that the naive float32(float64(a)*float64(b)+float64(c)) is wrong on
// some of them, i.e. that the hard cases are there.
func TestFMAExact(t *testing.T) {
	n := uint64(1 << 22)
	if testing.Short() {
		n = 1 << 17
	}
	if exhaustiveEnv() {
		n = 1 << 24
	}
	workers := runtime.GOMAXPROCS(0)
	bad := make([]int, workers)
	naiveWrong := make([]int, workers)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := uint64(w); i < n; i += uint64(workers) {
				a, b, c := fmaCaseF(i)
				want := fmaRef(a, b, c)
				got := Fmaf(a, b, c)
				if !sameBits(got, want) {
					bad[w]++
					if bad[w] <= 5 {
						mu.Lock()
						t.Errorf("case %d: Fmaf(%x, %x, %x) = %08x, want %08x", i,
							math.Float32bits(a), math.Float32bits(b), math.Float32bits(c),
							math.Float32bits(got), math.Float32bits(want))
						mu.Unlock()
					}
				}
				naive := float32(float64(a)*float64(b) + float64(c))
				if want == want && !sameBits(naive, want) {
					naiveWrong[w]++
				}
			}
		}(w)
	}
	wg.Wait()
	nb, nw := 0, 0
	for w := range workers {
		nb += bad[w]
		nw += naiveWrong[w]
	}
	t.Logf("%d triples, %d mismatches; naive double rounding wrong on %d", n, nb, nw)
	if nw == 0 {
		t.Errorf("no triple defeats the naive double rounding: the hard cases are missing")
	}
}

// TestFMARandomNear stresses the rounding step with a second generator: c is a random float32
// and a*b is drawn within a few ulps of a random multiple of ulp(c)/2 (c + a*b near a tie).
func TestFMARandomNear(t *testing.T) {
	n := 1 << 18
	if testing.Short() {
		n = 1 << 15
	}
	for i := 0; i < n; i++ {
		r := SplitMix64(uint64(i) + 0x5eed)
		r2 := SplitMix64(r)
		c := math.Float32frombits(uint32(r2)&0x807fffff | uint32(1+r%253)<<23)
		ec := int(math.Float32bits(c)>>23&0xff) - 127
		// a = 2^(ec-24-s) * (1 + i*2^-23), b = 2^s * (1 - j*2^-23) with small i, j
		s := int(r>>8%40) - 20
		ma := uint32(r >> 16 % 8)
		mb := uint32(r >> 24 % 8)
		ea := ec - 24 - s + int(r>>32%3) - 1
		a := math.Float32frombits(uint32(ea+127)<<23 | ma)
		b := math.Float32frombits(uint32(s+127)<<23 | (0x7fffff - mb))
		if r>>40&1 != 0 {
			a = -a
		}
		if ea+127 < 1 || ea+127 > 254 {
			continue
		}
		if got, want := Fmaf(a, b, c), fmaRef(a, b, c); !sameBits(got, want) {
			t.Fatalf("Fmaf(%x, %x, %x) = %08x, want %08x", math.Float32bits(a), math.Float32bits(b),
				math.Float32bits(c), math.Float32bits(got), math.Float32bits(want))
		}
	}
}
