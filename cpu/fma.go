package cpu

import "math"

// Fmaf returns a*b + c computed with a single rounding to float32 (fmaf; the GPU's __fmaf_rn),
// for all inputs: infinities, NaN, overflow to ±Inf, subnormal and zero results. An exact
// zero result is -0 only when a*b and c are both -0 (IEEE 754 round to nearest); a result that
// rounds to zero keeps the sign of a*b + c. A NaN result is the canonical NaN.
//
// Algorithm (pure Go, float64 arithmetic):
//
//	p = float64(a) * float64(b)          // exact: 24+24 bits fit in 53, no under/overflow
//	s = p + float64(c)                   // rounded to nearest float64
//	if |s| >= 2^-126 and s is not a float32 rounding midpoint (low 29 significand bits != 1<<28) {
//	    return float32(s)                // the common case: one more rounding, the right one
//	}
//	NaN -> NaN; ±Inf -> ±Inf
//	bb = s - p;  e = (p - (s - bb)) + (float64(c) - bb)   // TwoSum: s + e = p + c exactly
//	if e != 0 and the last significand bit of s is 0 {
//	    move s one float64 ulp toward e   // now s = p + c rounded to odd
//	}
//	return float32(s)
//
// The shortcut: the midpoints between adjacent normal float32 values are float64 values, and
// rounding to the nearest float64 cannot carry p + c across one without landing on it, so
// unless s is a midpoint, p + c and s round to the same float32. Below 2^-126 (fewer float32
// bits) and at midpoints the exact path decides: rounding to odd in a format with at least 2
// more bits than the target (53 >= 24+2) and then rounding to nearest gives the correctly
// rounded result (Boldo and Melquiond), also for subnormal float32 results and at the overflow
// threshold. Cost: two float64 operations, a conversion and a test in the common case.
func Fmaf(a, b, c float32) float32 {
	p := float64(float64(a) * float64(b))
	cc := float64(c)
	s := p + cc
	if math.Float64bits(s)&(1<<29-1) != 1<<28 && math.Abs(s) >= 0x1p-126 {
		return float32(s) // also ±Inf; NaN fails the second test
	}
	if s != s {
		return CanonicalNaN()
	}
	if math.IsInf(s, 0) {
		return float32(s)
	}
	bb := s - p
	e := (p - (s - bb)) + (cc - bb)
	if e != 0 {
		sb := math.Float64bits(s)
		if sb&1 == 0 {
			if (e > 0) == (s > 0) {
				sb++
			} else {
				sb--
			}
			s = math.Float64frombits(sb)
		}
	}
	return float32(s)
}
