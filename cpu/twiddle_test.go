package cpu

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

const refPrec = 256 // bits of the math/big reference (the series is summed to 2^-210)

func bigF() *big.Float { return new(big.Float).SetPrec(refPrec) }

// bigAtanInv is atan(1/k) by its Taylor series.
func bigAtanInv(k int64) *big.Float {
	x := bigF().Quo(bigF().SetInt64(1), bigF().SetInt64(k))
	x2 := bigF().Mul(x, x)
	sum, pow := bigF(), bigF().Set(x)
	eps := bigF().SetMantExp(bigF().SetInt64(1), -refPrec-8)
	for i := int64(0); ; i++ {
		t := bigF().Quo(pow, bigF().SetInt64(2*i+1))
		if i%2 == 0 {
			sum.Add(sum, t)
		} else {
			sum.Sub(sum, t)
		}
		if t.Cmp(eps) < 0 {
			return sum
		}
		pow.Mul(pow, x2)
	}
}

// bigPi is π by Machin's formula, 16*atan(1/5) - 4*atan(1/239).
var bigPi = bigF().Sub(bigF().Mul(bigF().SetInt64(16), bigAtanInv(5)), bigF().Mul(bigF().SetInt64(4), bigAtanInv(239)))

// bigCosSin returns cos and sin of 2π*r/n by the Taylor series of exp(iθ) at refPrec bits,
// with θ taken in (-π, π] (r mod n, then minus n above n/2): no octant logic shared with
// UnitRoot.
func bigCosSin(r, n uint64) (c, s *big.Float) {
	r %= n
	num := bigF().SetUint64(r)
	if 2*r > n {
		num.Sub(num, bigF().SetUint64(n))
	}
	th := bigF().Quo(bigF().Mul(bigF().Mul(bigF().SetInt64(2), bigPi), num), bigF().SetUint64(n))
	c, s = bigF().SetInt64(1), bigF()
	term := bigF().SetInt64(1)
	eps := bigF().SetMantExp(bigF().SetInt64(1), -210)
	for k := int64(1); ; k++ {
		term.Mul(term, th)
		term.Quo(term, bigF().SetInt64(k))
		switch k % 4 {
		case 0:
			c.Add(c, term)
		case 1:
			s.Add(s, term)
		case 2:
			c.Sub(c, term)
		case 3:
			s.Sub(s, term)
		}
		if k > 8 && new(big.Float).Abs(term).Cmp(eps) < 0 {
			return c, s
		}
	}
}

// ulpErr64 returns |got - ref| in ulps of the float64 nearest to ref, and whether got is that
// float64 (the correctly rounded value).
func ulpErr64(got float64, ref *big.Float) (float64, bool) {
	near, _ := ref.Float64()
	e := math.Abs(near)
	ulp := math.Nextafter(e, math.Inf(1)) - e
	if e == math.Float64frombits(math.Float64bits(e)&^(1<<52-1)) && math.Abs(near) > 0 {
		// near is a power of two: ref may lie just below it, where the ulp is half as big.
		if new(big.Float).Abs(ref).Cmp(bigF().SetFloat64(e)) < 0 {
			ulp /= 2
		}
	}
	d := bigF().Sub(bigF().SetFloat64(got), ref)
	df, _ := d.Float64()
	return math.Abs(df) / ulp, got == near
}

// unitRootPoints lists the (r, n) of the accuracy test: every r of the FFT-shaped lengths and
// seeded random pairs, nine in ten with n up to 2^28, the others up to 2^53.
func unitRootPoints(random int) [][2]uint64 {
	var pts [][2]uint64
	ns := []uint64{97, 1000, 1024, 4096, 6000, 8192}
	for n := uint64(1); n <= 64; n++ {
		ns = append(ns, n)
	}
	for _, n := range ns {
		for r := range n {
			pts = append(pts, [2]uint64{r, n})
		}
	}
	rng := rand.New(rand.NewPCG(24, 2))
	for i := range random {
		n := 1 + rng.Uint64N(1<<28)
		if i%10 == 9 { // the rest of UnitRoot's domain
			n = 1 + rng.Uint64N(1<<53)
		}
		pts = append(pts, [2]uint64{rng.Uint64N(n), n})
	}
	return pts
}

// TestUnitRootAccuracy: against a 256-bit math/big evaluation of cos and sin of 2π*r/n, every
// result within 0.5 + 2^-12 ulp, at least 99.99% of them correctly rounded, and the values at
// multiples of π/2 exact (with +0, never -0).
func TestUnitRootAccuracy(t *testing.T) {
	random := 20000
	if testing.Short() {
		random = 2000
	}
	var maxErr float64
	var maxAt [2]uint64
	total, rounded := 0, 0
	for _, p := range unitRootPoints(random) {
		r, n := p[0], p[1]
		c, s := UnitRoot(r, n)
		if 4*r%n == 0 { // a multiple of π/2: exact values
			want := [4][2]float64{{1, 0}, {0, 1}, {-1, 0}, {0, -1}}[4*r/n]
			if math.Float64bits(c) != math.Float64bits(want[0]) || math.Float64bits(s) != math.Float64bits(want[1]) {
				t.Errorf("UnitRoot(%d, %d) = (%g, %g), want exactly %v", r, n, c, s, want)
			}
			continue
		}
		rc, rs := bigCosSin(r, n)
		for _, v := range []struct {
			got float64
			ref *big.Float
		}{{c, rc}, {s, rs}} {
			e, ok := ulpErr64(v.got, v.ref)
			total++
			if ok {
				rounded++
			}
			if e > maxErr {
				maxErr, maxAt = e, p
			}
		}
	}
	frac := float64(rounded) / float64(total)
	t.Logf("%d values: max error %.6f ulp at (r, n) = %v, %d (%.4f%%) not correctly rounded",
		total, maxErr, maxAt, total-rounded, 100*(1-frac))
	if maxErr > 0.5+0x1p-12 {
		t.Errorf("max error %.6f ulp at %v > 0.5 + 2^-12", maxErr, maxAt)
	}
	if frac < 0.9999 {
		t.Errorf("only %.4f%% correctly rounded", 100*frac)
	}
}

// TestUnitRootConstants checks the double-double constants and the series tails against
// math/big, and the truncation bounds stated in UnitRoot's doc comment.
func TestUnitRootConstants(t *testing.T) {
	pi4 := bigF().Quo(bigPi, bigF().SetInt64(4))
	sqrtHalfBig := bigF().Sqrt(bigF().SetFloat64(0.5))
	recip := func(d int64) *big.Float { return bigF().Quo(bigF().SetInt64(1), bigF().SetInt64(d)) }
	for _, c := range []struct {
		name   string
		hi, lo float64
		want   *big.Float
	}{
		{"pi/4", pi4Hi, pi4Lo, pi4},
		{"1/6", inv6Hi, inv6Lo, recip(6)},
		{"1/120", inv120Hi, inv120Lo, recip(120)},
		{"1/24", inv24Hi, inv24Lo, recip(24)},
		{"1/720", inv720Hi, inv720Lo, recip(720)},
	} {
		if h, _ := c.want.Float64(); h != c.hi {
			t.Errorf("%s: hi %x, want %x", c.name, c.hi, h)
		}
		if l, _ := bigF().Sub(c.want, bigF().SetFloat64(c.hi)).Float64(); l != c.lo {
			t.Errorf("%s: lo %x, want %x", c.name, c.lo, l)
		}
	}
	if h, _ := sqrtHalfBig.Float64(); h != sqrtHalf {
		t.Errorf("sqrtHalf %x, want %x", sqrtHalf, h)
	}
	fact := func(k int64) *big.Int { return new(big.Int).MulRange(1, k) }
	for k, got := range map[int64]float64{
		7: sinC7, 9: sinC9, 11: sinC11, 13: sinC13, 15: sinC15, 17: sinC17, 19: sinC19,
		8: cosC8, 10: cosC10, 12: cosC12, 14: cosC14, 16: cosC16, 18: cosC18, 20: cosC20,
	} {
		w, _ := new(big.Float).SetPrec(refPrec).Quo(bigF().SetInt64(1), bigF().SetInt(fact(k))).Float64()
		if (k/2)%2 == 1 {
			w = -w
		}
		if got != w {
			t.Errorf("coefficient of x^%d: %g, want %g", k, got, w)
		}
	}
	// The first omitted terms at x = π/4, against the stated bounds.
	for _, c := range []struct{ k, exp int64 }{{21, -72}, {22, -77}} {
		term := bigF().SetInt64(1)
		for range c.k {
			term.Mul(term, pi4)
		}
		term.Quo(term, bigF().SetInt(fact(c.k)))
		if term.Cmp(bigF().SetMantExp(bigF().SetInt64(1), int(c.exp))) >= 0 {
			t.Errorf("(π/4)^%d/%d! = %s >= 2^%d", c.k, c.k, term.Text('g', 5), c.exp)
		}
	}
}

// TestUnitRootSymmetry: the exact values at multiples of π/4, the reduction of r modulo n,
// r and n - r differing only in the sign of sin, the quarter turn swapping cos and sin, no -0,
// and NaN for n outside [1, 2^53].
func TestUnitRootSymmetry(t *testing.T) {
	for _, n := range []uint64{8, 16, 24, 1000, 8192, 1 << 40, 1 << 53} {
		for j := range uint64(8) {
			c, s := UnitRoot(j*n/8, n)
			wc := [8]float64{1, sqrtHalf, 0, -sqrtHalf, -1, -sqrtHalf, 0, sqrtHalf}[j]
			ws := [8]float64{0, sqrtHalf, 1, sqrtHalf, 0, -sqrtHalf, -1, -sqrtHalf}[j]
			if math.Float64bits(c) != math.Float64bits(wc) || math.Float64bits(s) != math.Float64bits(ws) {
				t.Errorf("UnitRoot(%d/8 of %d) = (%g, %g), want (%g, %g)", j, n, c, s, wc, ws)
			}
		}
	}
	rng := rand.New(rand.NewPCG(1, 24))
	for range 20000 {
		n := 1 + rng.Uint64N(1<<30)
		if rng.IntN(4) == 0 {
			n = 4 * (1 + rng.Uint64N(1<<20))
		}
		r := rng.Uint64N(n)
		c, s := UnitRoot(r, n)
		if c2, s2 := UnitRoot(r+n*(1+rng.Uint64N(1000)), n); c2 != c || s2 != s {
			t.Fatalf("UnitRoot(%d + multiple of n, %d) = (%g, %g) != (%g, %g)", r, n, c2, s2, c, s)
		}
		c3, s3 := UnitRoot((n-r)%n, n)
		negZero := func(a float64) bool { return a == 0 && math.Signbit(a) }
		if math.Float64bits(c3) != math.Float64bits(c) || math.Float64bits(s3) != math.Float64bits(0-s) ||
			negZero(c) || negZero(s) || negZero(s3) {
			t.Fatalf("UnitRoot(%d, %d) = (%g, %g), UnitRoot(n-r) = (%g, %g)", r, n, c, s, c3, s3)
		}
		if n%4 == 0 {
			c4, s4 := UnitRoot(r+n/4, n)
			if c4 != 0-s || s4 != c {
				t.Fatalf("UnitRoot(%d + n/4, %d) = (%g, %g), want (%g, %g)", r, n, c4, s4, -s, c)
			}
		}
	}
	for _, n := range []uint64{0, 1<<53 + 1, math.MaxUint64} {
		if c, s := UnitRoot(1, n); !math.IsNaN(c) || !math.IsNaN(s) {
			t.Errorf("UnitRoot(1, %d) = (%g, %g), want NaN", n, c, s)
		}
	}
}

// TestUnitRootAgainstMath: within 1 ulp of math.Cos and math.Sin at the same reduced argument
// x in [0, π/4] (x = (π/4)*(v/n) from math/big as xh + xl, math's value corrected to first
// order by xl), over every octant of seeded random (r, n).
func TestUnitRootAgainstMath(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 24))
	pi4 := bigF().Quo(bigPi, bigF().SetInt64(4))
	same, total := 0, 0
	for range 20000 {
		n := 8 + rng.Uint64N(1<<28)
		r := rng.Uint64N(n)
		o, s := 8*r/n, 8*r%n
		v := s
		if o%2 == 1 {
			v = n - s
		}
		x := bigF().Quo(bigF().Mul(pi4, bigF().SetUint64(v)), bigF().SetUint64(n))
		xh, _ := x.Float64()
		xl, _ := bigF().Sub(x, bigF().SetFloat64(xh)).Float64()
		mc := math.Cos(xh) - xl*math.Sin(xh)
		ms := math.Sin(xh) + xl*math.Cos(xh)
		// The octant's values from UnitRoot: undo the symmetry (cos and sin of θ = k*π/2 ± x).
		c, sn := UnitRoot(r, n)
		ac, as := math.Abs(c), math.Abs(sn)
		if k := (o + 1) / 2 % 4; k == 1 || k == 3 {
			ac, as = as, ac
		}
		for _, p := range [][2]float64{{ac, mc}, {as, ms}} {
			total++
			if p[0] == p[1] {
				same++
				continue
			}
			if u := math.Abs(p[0]-p[1]) / (math.Nextafter(p[1], math.Inf(1)) - p[1]); u > 1 {
				t.Fatalf("UnitRoot(%d, %d): %v differs from math's %v by %.2f ulp", r, n, p[0], p[1], u)
			}
		}
	}
	t.Logf("%d of %d values identical to math.Cos/math.Sin's", same, total)
}

// TestUnitRootFloat32Tables counts the float32 table entries (cos and sin of 2π*r/n, every
// r < n, n = 1..8192) that change from those of math.Cos and math.Sin, both for the angle
// float64(2π*r)/n (the committed table builder before UnitRoot) and for the octant-reduced
// argument (the same reduction as UnitRoot's, math's functions on it): every change must be
// one float32 ulp, or a value at a multiple of π/2 that UnitRoot makes exact.
func TestUnitRootFloat32Tables(t *testing.T) {
	maxN := 8192
	if testing.Short() {
		maxN = 1024
	}
	var direct, directExact, reduced, entries int
	for n := 1; n <= maxN; n++ {
		for r := range n {
			c, s := UnitRoot(uint64(r), uint64(n))
			got := [2]float32{float32(c), float32(s)}
			a := float64(2*math.Pi*float64(r)) / float64(n)
			old := [2]float32{float32(math.Cos(a)), float32(math.Sin(a))}
			red := reducedMath(uint64(r), uint64(n))
			for i := range 2 {
				entries++
				if got[i] != old[i] {
					if got[i] == 0 && math.Abs(float64(old[i])) < 1e-12 {
						directExact++
					} else {
						direct++
						checkOneUlp32(t, r, n, got[i], old[i])
					}
				}
				if got[i] != red[i] {
					reduced++
					checkOneUlp32(t, r, n, got[i], red[i])
				}
			}
		}
	}
	t.Logf("n = 1..%d, %d float32 entries: %d differ from the unreduced math.Cos/Sin by one ulp "+
		"and %d at multiples of π/2 are now exact zeros; %d differ from math on the octant-reduced argument",
		maxN, entries, direct, directExact, reduced)
}

// reducedMath is cos and sin of 2π*r/n by math.Cos and math.Sin of the octant-reduced argument
// (π/4)*(v/n) in float64, rounded to float32.
func reducedMath(r, n uint64) [2]float32 {
	o, s := 8*r/n, 8*r%n
	v := s
	if o%2 == 1 {
		v = n - s
	}
	x := float64(math.Pi/4*float64(v)) / float64(n)
	c, sn := math.Cos(x), math.Sin(x)
	if v == n {
		c, sn = sqrtHalf, sqrtHalf
	}
	if o%2 == 1 {
		sn = 0 - sn
	}
	switch (o + 1) / 2 % 4 {
	case 1:
		c, sn = 0-sn, c
	case 2:
		c, sn = 0-c, 0-sn
	case 3:
		c, sn = sn, 0-c
	}
	return [2]float32{float32(c), float32(sn)}
}

func checkOneUlp32(t *testing.T, r, n int, got, other float32) {
	t.Helper()
	if math.Nextafter32(other, got) != got {
		t.Errorf("UnitRoot(%d, %d) rounds to %v, math to %v: more than one float32 ulp apart", r, n, got, other)
	}
}

// TestAppendRoots: the memoized tables are bit for bit UnitRoot's values per entry (float64) and
// their float32 roundings.
func TestAppendRoots(t *testing.T) {
	for _, n := range append([]int{1000, 1024, 4096, 6000, 8190, 8192}, func() []int {
		var s []int
		for n := 1; n <= 300; n++ {
			s = append(s, n)
		}
		return s
	}()...) {
		got := appendRoots([]float32{7}, n, n)
		got64 := appendRoots([]float64(nil), n, n)
		if len(got) != 1+2*n || got[0] != 7 {
			t.Fatalf("n=%d: appended %d values to a slice of 1", n, len(got)-1)
		}
		for k := range n {
			c, s := UnitRoot(uint64((n-k)%n), uint64(n))
			if math.Float32bits(got[1+2*k]) != math.Float32bits(float32(c)) ||
				math.Float32bits(got[2+2*k]) != math.Float32bits(float32(s)) {
				t.Fatalf("n=%d k=%d: (%v, %v), UnitRoot rounds to (%v, %v)", n, k, got[1+2*k], got[2+2*k], float32(c), float32(s))
			}
			if math.Float64bits(got64[2*k]) != math.Float64bits(c) || math.Float64bits(got64[2*k+1]) != math.Float64bits(s) {
				t.Fatalf("n=%d k=%d: (%v, %v), UnitRoot gives (%v, %v)", n, k, got64[2*k], got64[2*k+1], c, s)
			}
		}
	}
}

// unitRootGolden is the FNV-1a hash of the float64 bits of UnitRoot(r, n), cos then sin, little
// endian, for every r < n of n = 1..600, then r = 0, 1, 12345 of n = 2^53, 2^53 - 1, 10^15 + 37.
// It was recorded on linux/amd64 and checked with GOARCH=386 and with GOAMD64=v3 (where the
// compiler fuses unwrapped products into FMAs); every GOARCH must give it.
const unitRootGolden = 0xf13cd7a68d55b88f

// TestUnitRootGolden: the same bits on every machine (run it on any GOARCH).
func TestUnitRootGolden(t *testing.T) {
	h := fnv.New64a()
	put := func(r, n uint64) {
		c, s := UnitRoot(r, n)
		var b [16]byte
		for i := range 8 {
			b[i] = byte(math.Float64bits(c) >> (8 * i))
			b[8+i] = byte(math.Float64bits(s) >> (8 * i))
		}
		h.Write(b[:])
	}
	for n := uint64(1); n <= 600; n++ {
		for r := range n {
			put(r, n)
		}
	}
	for _, n := range []uint64{1 << 53, 1<<53 - 1, 1e15 + 37} {
		for _, r := range []uint64{0, 1, 12345} {
			put(r, n)
		}
	}
	if got := h.Sum64(); got != unitRootGolden {
		t.Errorf("hash of UnitRoot's bits %#016x, want %#016x", got, uint64(unitRootGolden))
	}
}

func ExampleUnitRoot() {
	c, s := UnitRoot(1, 8) // 2π/8 = π/4
	fmt.Println(c, s, c == s)
	c, s = UnitRoot(3, 4) // 3π/2: exact, no rounding residue
	fmt.Println(c, s)
	c, s = UnitRoot(1, 12) // π/6
	fmt.Println(c, s)
	// Output:
	// 0.7071067811865476 0.7071067811865476 true
	// 0 -1
	// 0.8660254037844386 0.5
}

func BenchmarkUnitRoot(b *testing.B) {
	var sc, ss float64
	for i := range b.N {
		c, s := UnitRoot(uint64(i), 8191)
		sc, ss = sc+c, ss+s
	}
	_, _ = sc, ss
}
