package cpu

import "math"

// UnitRoot returns cos(2π·r/n) and sin(2π·r/n) in float64 for 1 <= n <= 2^53 and any r (NaN,
// NaN for n outside that range), with the same bits on every GOARCH: the FFT's twiddles, its odd
// radices' constants and Bluestein's chirp are float32 roundings of these values, and they must
// not depend on the machine that builds the tables. math.Sin and math.Cos do: they are assembly
// on some architectures, and the compiler may fuse their products into FMAs (arm64, ppc64le,
// s390x, riscv64, amd64 with GOAMD64=v3: built so, they give other float64 bits for about 1% of
// the angles 2π*r/n, n <= 4096). Here every float64 operation is a +, -, / or a product wrapped
// in float64(...) (which the Go specification forbids fusing; TestNoFusableProducts checks it),
// on values that never underflow, and no function of package math is called (but NaN);
// TestUnitRootGolden pins the bits (the same with GOARCH=386 and with GOAMD64=v3).
//
// The arithmetic:
//
//  1. Exact reduction with integers: r' = r mod n, and 8r' = o*n + s (o < 8 the octant,
//     0 <= s < n). With v = s for an even octant and v = n - s for an odd one, the angle is
//     θ = k*π/2 + x (o even) or k*π/2 - x (o odd), k = ((o+1)/2) mod 4 and x = (π/4)*(v/n) in
//     [0, π/4]. v = 0 gives cos x = 1, sin x = 0 exactly; v = n gives cos x = sin x = the float64
//     nearest to √2/2; the symmetries of the circle then make every result at a multiple of π/4
//     one of ±1, 0 (always +0) and ±sqrtHalf, and r and n - r differ only in the sign of sin.
//
//  2. The reduced argument as a double-double: q = v/n is qh = fl(v/n) plus ql = fl(rem/n), where
//     rem = v - qh*n is computed exactly (qh*n as an exact two-product, Dekker's splitting, so
//     rem is the exact remainder of the correctly rounded quotient); x = xh + xl is (π/4)*q with
//     π/4 = pi4Hi + pi4Lo (106 bits), relative error below 2^-100.
//
//  3. z = x² in double-double, and the Taylor series (coefficients (-1)^k/(2k+1)! and
//     (-1)^k/(2k)!, the tails written as their exact fractions, rounded by the compiler):
//
//     sin x = x + x*z*(-1/6 + z*(1/120 + z*P(z))),   P(z) = -1/7! + z/9! - ... - z^6/19!
//     cos x = 1 + z*(-1/2 + z*(1/24 + z*(-1/720 + z*Q(z)))),   Q(z) = 1/8! - z/10! + ... + z^6/20!
//
//     P and Q by Horner in float64 on zh; the outer steps (1/120, 1/6, 1/24, 1/720 as
//     double-doubles, 1/2 and 1 exact) in double-double arithmetic; the result is the double-double
//     rounded once to float64. The first omitted terms, (π/4)^21/21! < 2^-72 and
//     (π/4)^22/22! < 2^-77, are far below half an ulp of the results (sin x >= 2/π*x on the
//     octant, cos x >= √2/2), and the float64 tails carry at most a few ulps of terms no larger
//     than 2^-14 (sin) and 2^-17 (cos) of the result.
//
// Accuracy: the analysis above bounds the error by 0.5 ulp plus about 2^-12 ulp (the rounding
// of the float64 tails), so only a value that close to a rounding midpoint can round the wrong
// way. Measured against 256-bit math/big Taylor evaluations of cos and sin of 2π*r/n
// (TestUnitRootAccuracy: every r of n = 1..64, 97, 1000, 1024, 4096, 6000 and 8192 and 20000
// seeded random (r, n), nine in ten with n <= 2^28, the others up to 2^53; 84680 values, not
// counting the exact ones at multiples of π/2): every value is the correctly rounded one, the
// largest error 0.499993 ulp; a run with 400000 random pairs (844680 values) found none
// misrounded either (largest error 0.499999 ulp). Within 1 ulp of math.Cos and math.Sin at the
// same reduced argument (identical in 75% of cases), and for the FFT's float32 tables (every r of
// n = 1..8192) its float32 roundings equal math's on the octant-reduced argument everywhere.
func UnitRoot(r, n uint64) (cos, sin float64) {
	if n == 0 || n > 1<<53 {
		return math.NaN(), math.NaN()
	}
	o, v := octant(r, n)
	c, s := octantCosSin(v, n)
	return unfold(o, c, s)
}

// octant is step 1's reduction: the octant o of 2π*(r mod n)/n and the numerator v of the
// reduced argument x = (π/4)*(v/n), 0 <= v <= n.
func octant(r, n uint64) (o, v uint64) {
	r %= n
	o, s := 8*r/n, 8*r%n
	if o%2 == 1 {
		return o, n - s
	}
	return o, s
}

// octantCosSin returns cos x and sin x of x = (π/4)*(v/n), 0 <= v <= n: exact at v = 0, the
// float64 nearest to √2/2 for both at v = n, else cosSinOctant.
func octantCosSin(v, n uint64) (cos, sin float64) {
	switch v {
	case 0:
		return 1, 0
	case n:
		return sqrtHalf, sqrtHalf
	}
	return cosSinOctant(v, n)
}

// unfold maps cos x and sin x to cos θ and sin θ, θ = k*π/2 ± x in octant o (step 1): only
// swaps and negations, so that it commutes with rounding to float32. Negation is written 0 - a,
// so that an exact zero stays +0 (UnitRoot never returns -0).
func unfold[F float32 | float64](o uint64, c, s F) (F, F) {
	if o%2 == 1 {
		s = 0 - s
	}
	switch (o + 1) / 2 % 4 {
	case 0:
		return c, s
	case 1:
		return 0 - s, c
	case 2:
		return 0 - c, 0 - s
	default:
		return s, 0 - c
	}
}

// appendRoots appends W_n^k = exp(-2πi*k/n) for k < count (1 <= n <= 2^53) to dst as (re, im)
// pairs of F: bit for bit F(c), F(s) of c, s = UnitRoot((n-k) mod n, n). For an even n, whose
// reduced numerators v are the multiples of g = gcd(n, 8), cosSinOctant runs once per v
// (n/g + 1 times) instead of once per entry.
func appendRoots[F float32 | float64](dst []F, n, count int) []F {
	un := uint64(n)
	g := uint64(1)
	for g < 8 && un%(2*g) == 0 {
		g *= 2
	}
	if g == 1 {
		for k := range count {
			c, s := UnitRoot(uint64((n-k)%n), un)
			dst = append(dst, F(c), F(s))
		}
		return dst
	}
	memo := make([]F, 2*(un/g+1))
	for j := range un/g + 1 {
		c, s := octantCosSin(j*g, un)
		memo[2*j], memo[2*j+1] = F(c), F(s)
	}
	for k := range count {
		o, v := octant(uint64((n-k)%n), un)
		c, s := unfold(o, memo[2*(v/g)], memo[2*(v/g)+1])
		dst = append(dst, c, s)
	}
	return dst
}

// The double-double constants (hi + lo, |lo| <= ulp(hi)/2), checked against math/big in
// TestUnitRootConstants.
const (
	pi4Hi    = 0x1.921fb54442d18p-01 // π/4
	pi4Lo    = 0x1.1a62633145c07p-55
	inv6Hi   = 0x1.5555555555555p-03 // 1/6
	inv6Lo   = 0x1.5555555555555p-57
	inv120Hi = 0x1.1111111111111p-07 // 1/120
	inv120Lo = 0x1.1111111111111p-63
	inv24Hi  = 0x1.5555555555555p-05 // 1/24
	inv24Lo  = 0x1.5555555555555p-59
	inv720Hi = 0x1.6c16c16c16c17p-10 // 1/720
	inv720Lo = -0x1.f49f49f49f49fp-65
	sqrtHalf = 0x1.6a09e667f3bcdp-01 // √2/2 rounded to nearest
)

// The float64 tails of the series: (-1)^k/(2k+1)! for k = 3..9 and (-1)^k/(2k)! for k = 4..10,
// exact fractions rounded to float64 by the compiler.
const (
	sinC7  = -1.0 / 5040
	sinC9  = 1.0 / 362880
	sinC11 = -1.0 / 39916800
	sinC13 = 1.0 / 6227020800
	sinC15 = -1.0 / 1307674368000
	sinC17 = 1.0 / 355687428096000
	sinC19 = -1.0 / 121645100408832000
	cosC8  = 1.0 / 40320
	cosC10 = -1.0 / 3628800
	cosC12 = 1.0 / 479001600
	cosC14 = -1.0 / 87178291200
	cosC16 = 1.0 / 20922789888000
	cosC18 = -1.0 / 6402373705728000
	cosC20 = 1.0 / 2432902008176640000
)

// cosSinOctant returns cos and sin of x = (π/4)*(v/n), 0 < v < n <= 2^53 (steps 2 and 3 of
// UnitRoot).
func cosSinOctant(v, n uint64) (cos, sin float64) {
	fv, fn := float64(v), float64(n) // exact: both <= 2^53
	qh := fv / fn
	p, pe := twoProd(qh, fn)
	ql := ((fv - p) - pe) / fn // fv - p is exact (Sterbenz), and so is the remainder
	xh, xl := twoProd(pi4Hi, qh)
	xl += float64(pi4Hi*ql) + float64(pi4Lo*qh)
	xh, xl = fastTwoSum(xh, xl)

	zh, zl := twoProd(xh, xh)
	zl += float64((xh + xh) * xl)
	zh, zl = fastTwoSum(zh, zl)

	ps := sinC19
	ps = sinC17 + float64(zh*ps)
	ps = sinC15 + float64(zh*ps)
	ps = sinC13 + float64(zh*ps)
	ps = sinC11 + float64(zh*ps)
	ps = sinC9 + float64(zh*ps)
	ps = sinC7 + float64(zh*ps)
	ah, al := ddAdd(inv120Hi, inv120Lo, float64(zh*ps), 0)
	ah, al = ddMul(ah, al, zh, zl)
	ah, al = ddAdd(ah, al, -inv6Hi, -inv6Lo)
	ah, al = ddMul(ah, al, zh, zl)
	ah, al = ddMul(ah, al, xh, xl)
	sin, _ = ddAdd(xh, xl, ah, al)

	pc := cosC20
	pc = cosC18 + float64(zh*pc)
	pc = cosC16 + float64(zh*pc)
	pc = cosC14 + float64(zh*pc)
	pc = cosC12 + float64(zh*pc)
	pc = cosC10 + float64(zh*pc)
	pc = cosC8 + float64(zh*pc)
	ah, al = ddAdd(-inv720Hi, -inv720Lo, float64(zh*pc), 0)
	ah, al = ddMul(ah, al, zh, zl)
	ah, al = ddAdd(ah, al, inv24Hi, inv24Lo)
	ah, al = ddMul(ah, al, zh, zl)
	ah, al = ddAdd(ah, al, -0.5, 0)
	ah, al = ddMul(ah, al, zh, zl)
	cos, _ = ddAdd(1, 0, ah, al)
	return cos, sin
}

// twoSum returns s = fl(a+b) and the exact error a + b - s (Knuth).
func twoSum(a, b float64) (s, e float64) {
	s = a + b
	bb := s - a
	return s, (a - (s - bb)) + (b - bb)
}

// fastTwoSum returns s = fl(a+b) and the exact error a + b - s, for |a| >= |b| or a = 0.
func fastTwoSum(a, b float64) (s, e float64) {
	s = a + b
	return s, b - (s - a)
}

// split returns hi + lo = a with hi and lo of at most 26 significant bits (Veltkamp).
func split(a float64) (hi, lo float64) {
	c := float64(0x1p27*a) + a // (2^27+1)*a rounded: 2^27*a is exact, the sum rounds once
	hi = c - (c - a)
	return hi, a - hi
}

// twoProd returns p = fl(a*b) and the exact error a*b - p (Dekker), without an fma.
func twoProd(a, b float64) (p, e float64) {
	p = float64(a * b)
	ah, al := split(a)
	bh, bl := split(b)
	e = ((float64(ah*bh) - p) + float64(ah*bl) + float64(al*bh)) + float64(al*bl)
	return p, e
}

// ddAdd returns the double-double sum (ah + al) + (bh + bl), normalized.
func ddAdd(ah, al, bh, bl float64) (float64, float64) {
	s, e := twoSum(ah, bh)
	t, f := twoSum(al, bl)
	e += t
	s, e = fastTwoSum(s, e)
	e += f
	return fastTwoSum(s, e)
}

// ddMul returns the double-double product (ah + al) * (bh + bl), normalized (al*bl dropped).
func ddMul(ah, al, bh, bl float64) (float64, float64) {
	p, e := twoProd(ah, bh)
	e += float64(ah*bl) + float64(al*bh)
	return fastTwoSum(p, e)
}
