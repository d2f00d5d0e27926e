// This file is the float32 math library of the arithmetic contract: elementary functions
// written as a fixed sequence of correctly rounded IEEE 754 binary32 operations (+ - * / and
// comparisons, integer and bit operations), so that the Go functions here and their CUDA twins
// in ptx/f32math.cuh return identical bits for every input.
//
// # The contract
//
// Every function's doc comment states its algorithm as the exact sequence of operations; the
// CUDA twin (tl_expf, tl_logf, ... in ptx/f32math.cuh) performs the same operations in the
// same order with the same constants and branches, line by line. The twins rely on:
//
//   - float32 + - * / correctly rounded to nearest-even, subnormals kept (Go always; CUDA
//     without fast-math and with -ftz=false, the default);
//   - no contraction of a*b+c into a fused multiply-add. CUDA: nvcc --fmad=false. Go: the
//     spec lets the compiler fuse x*y+z on some architectures (arm64, ppc64le, s390x, riscv64),
//     but an explicit conversion float32(x*y) forces the product to be rounded. Every product
//     in this package that feeds an addition or subtraction is written float32(x*y) for that
//     reason; keep it so when editing (a bare product feeding an addition would still pass the
//     tests on amd64 and break the contract on arm64);
//   - float32 -> int32 conversion truncating toward zero (Go conversion, CUDA cvt.rzi), used
//     only on values that are exact integers or well inside the int32 range.
//
// Constants are float32 values given both as Go hexadecimal literals here and as
// __uint_as_float(bits) in the .cuh; TestCUDAConstants checks that the two lists agree.
//
// NaN: every function returns the canonical NaN (bits 0x7fffffff, CanonicalNaN) whenever its
// result is NaN, whether a NaN came in or was produced (Logf(-1)). That is what NVIDIA GPUs
// produce for any NaN result of an arithmetic instruction, so Fmaf and Sqrtf (hardware
// instructions on the GPU) agree with the GPU too.
//
// Accuracy, measured against float64/big.Float references over all float32 inputs (see the
// tests): Expf, Expm1f, Logf, Log1pf, SinCos2Pif within 2 ulp (measured max: Expf 1.05, Expm1f
// 1.79, the others about 1), Tanhf and Sigmoidf within 3 ulp (measured max 2.46 and 2.83;
// Sigmoidf also in its subnormal range); Fmaf and Sqrtf are correctly rounded.
//
// Cost: Expf, Sigmoidf and Tanhf are written for GPU throughput. Expf's core (expCore: a
// Cody-Waite reduction and a degree-6 minimax polynomial, 18 operations) uses no fused
// operation, so that pure Go (arm64, -tags noasm, the tails of the vector kernels) computes it
// at full speed. Sigmoidf, Tanhf and the GELU rules use expCoreFused instead, the same
// reduction and polynomial with Fmaf (10 operations on the GPU): they are the activations a GPU
// evaluates at the memory's speed only when each element costs few instructions (a GPU held
// at its power limit ran the unfused ones below PyTorch: BENCHMARKS.md, "Figures behind the code"), and the vector kernels
// have the fused instruction. The common range costs one compare and a multiply (or fma) by 2^k; the rare
// inputs (NaN, ±Inf, overflow, results that need two-step scaling) take a branch that the GPU's
// warps almost never enter. Tanhf has a single formula, so a warp never runs two paths.

package cpu

import "math"

// CanonicalNaNBits is the bit pattern of the NaN that every function here returns.
const CanonicalNaNBits = 0x7fffffff

// CanonicalNaN returns the NaN with bits CanonicalNaNBits (the NaN of NVIDIA GPUs).
func CanonicalNaN() float32 { return math.Float32frombits(CanonicalNaNBits) }

// Constants. Each is an exact float32 value; the CUDA twin defines TLF_<name> with the same
// bits (TestCUDAConstants).
const (
	log2e  float32 = 0x1.715476p+00  // 1/ln 2 rounded
	magic  float32 = 0x1.8p+23       // 1.5*2^23: (v + magic) - magic rounds v to an integer
	ln2Hi  float32 = 0x1.62e4p-01    // ln 2 to 15 significant bits: k*ln2Hi is exact for |k| < 512
	ln2Lo  float32 = 0x1.7f7d1cp-20  // ln 2 - ln2Hi rounded
	expHi  float32 = 0x1.64p+06      // 89: Expf, Expm1f overflow to +Inf above it
	expLo  float32 = -0x1.ap+06      // -104: Expf underflows to +0 below it
	expMid float32 = 0x1.5ep+06      // 87.5: for |x| < 87.5, k = round(x/ln 2) is in [-126, 126]
	tanhHi float32 = 0x1.3p+03       // 9.5: Tanhf is ±1 above it in magnitude
	two23  float32 = 0x1p+23         // 2^23
	maxF32 float32 = 0x1.fffffep+127 // largest finite float32

	// expm1(r) ~= r + r^2 (Q0 + Q1 r + Q2 r^2 + Q3 r^3 + Q4 r^4) for |r| <= 0.3467: minimax
	// relative error of the quartic against (e^r - 1 - r)/r^2 (1.24e-7 before rounding the
	// coefficients; Q0 came out 0.5 to 9e-9), computed with a Remez exchange for this package.
	expQ0 float32 = 0x1p-01
	expQ1 float32 = 0x1.5554dep-03
	expQ2 float32 = 0x1.5555bap-05
	expQ3 float32 = 0x1.120b4ap-07
	expQ4 float32 = 0x1.6c6a02p-10

	// 2/(2n+1), n = 1..4: log(1+f) = 2 atanh(s) = 2s + s*(L1 s^2 + L2 s^4 + ...).
	logL1 float32 = 0x1.555556p-01
	logL2 float32 = 0x1.99999ap-02
	logL3 float32 = 0x1.24924ap-02
	logL4 float32 = 0x1.c71c72p-03

	// sin(2 pi r) = r*(S0 + S1 r^2 + ... + S5 r^10), S0 = 2 pi = sinS0h + sinS0l,
	// Sn = (-1)^n (2 pi)^(2n+1)/(2n+1)!; sinS0h has 8 significant bits.
	sinS0h float32 = 0x1.92p+02
	sinS0l float32 = 0x1.fb5444p-10
	sinS1  float32 = -0x1.4abbcep+05
	sinS2  float32 = 0x1.466bc6p+06
	sinS3  float32 = -0x1.32d2ccp+06
	sinS4  float32 = 0x1.507834p+05
	sinS5  float32 = -0x1.e3075p+03

	// cos(2 pi r) = 1 + C1 r^2 + ... + C5 r^10, Cn = (-1)^n (2 pi)^(2n)/(2n)!;
	// C1 = -2 pi^2 = cosC1h + cosC1l to about 36 bits, cosC1h with 12 significant bits.
	cosC1  float32 = -0x1.3bd3ccp+04
	cosC1h float32 = -0x1.3bcp+04
	cosC1l float32 = -0x1.3cc9bep-08
	cosC2  float32 = 0x1.03c1fp+06
	cosC3  float32 = -0x1.55d3c8p+06
	cosC4  float32 = 0x1.e1f506p+05
	cosC5  float32 = -0x1.a6d1f2p+04

	veltkamp float32 = 0x1.002p+12 // 2^12 + 1: splits a float32 into two halves of <= 12 bits
)

func f32bits(x float32) uint32     { return math.Float32bits(x) }
func f32frombits(b uint32) float32 { return math.Float32frombits(b) }

// pow2 returns 2^k for -126 <= k <= 127 (built from the exponent bits).
func pow2(k int32) float32 { return f32frombits(uint32(k+127) << 23) }

// scale returns s*2^k for -150 <= k <= 128 as (s*2^k1)*2^k2 with k1 = k>>1 (floor(k/2)) and
// k2 = k - k1, both in [-75, 64]: for s in [0.5, 2) the first product is exact and the second
// rounds once, so subnormal results are rounded once and overflow gives +Inf.
func scale(s float32, k int32) float32 {
	k1 := k >> 1
	k2 := k - k1
	return float32(float32(s*pow2(k1)) * pow2(k2))
}

// expCore is the argument reduction and polynomial shared by Expf, Expm1f, Tanhf and Sigmoidf,
// for |x| <= 104 (it computes garbage, without trapping, for other x, NaN and ±Inf included):
//
//	j  = (x*log2e) + magic               // magic + k, k = round(x/ln 2); bits(j) = bits(magic) + k
//	kf = j - magic                       // k as a float
//	r  = (x - kf*ln2Hi) - kf*ln2Lo       // x - k ln 2 (first subtraction exact), |r| <= 0.3467
//	q  = Q0 + r*(Q1 + r*(Q2 + r*(Q3 + r*Q4)))   // Horner
//	m  = r + r*(r*q)                     // expm1(r)
//
// so that e^x ~= 2^k (1 + m) and e^x - 1 ~= 2^k m + (2^k - 1).
func expCore(x float32) (j, m float32) {
	j = float32(x*log2e) + magic
	kf := j - magic
	r := (x - float32(kf*ln2Hi)) - float32(kf*ln2Lo)
	q := expQ4
	q = expQ3 + float32(r*q)
	q = expQ2 + float32(r*q)
	q = expQ1 + float32(r*q)
	q = expQ0 + float32(r*q)
	m = r + float32(r*float32(r*q))
	return j, m
}

// expPow2 returns 2^k for the j = magic + k of expCore and -126 <= k <= 127, built from the
// bits: bits(j) << 23 == k << 23 (mod 2^32) because the low 9 bits of bits(magic) are zero.
func expPow2(j float32) float32 { return f32frombits(f32bits(j)<<23 + 0x3f800000) }

// expK returns the integer k of expCore's j = magic + k.
func expK(j float32) int32 { return int32(f32bits(j) - f32bits(magic)) }

// expRare is e^x for the x that fail |x| < 87.5 and are not NaN, given expCore's j and m:
//
//	x > 89 -> +Inf; x < -104 -> +0
//	return scale(1 + m, k)               // (S*2^(k>>1)) * 2^(k-(k>>1)), k in [-150, 128]
func expRare(x, j, m float32) float32 {
	if x > expHi {
		return float32(math.Inf(1))
	}
	if x < expLo {
		return 0
	}
	return scale(1+m, expK(j))
}

// expCoreFused is expCore with fused operations (the core of Sigmoidf, Tanhf and GELU):
//
//	j  = Fmaf(x, log2e, magic)           // magic + k, k = round(x/ln 2) from the exact product
//	kf = j - magic
//	r  = Fmaf(kf, -ln2Lo, x - kf*ln2Hi)  // kf*ln2Hi and the subtraction are exact (expCore),
//	                                     // so the GPU's Fmaf(kf, -ln2Hi, x) is the same value
//	q  = Fmaf(r, Fmaf(r, Fmaf(r, Fmaf(r, Q4, Q3), Q2), Q1), Q0)
//	m  = Fmaf(r*r, q, r)                 // expm1(r)
func expCoreFused(x float32) (j, m float32) {
	j = Fmaf(x, log2e, magic)
	kf := j - magic
	r := Fmaf(kf, -ln2Lo, x-float32(kf*ln2Hi))
	q := Fmaf(r, expQ4, expQ3)
	q = Fmaf(r, q, expQ2)
	q = Fmaf(r, q, expQ1)
	q = Fmaf(r, q, expQ0)
	m = Fmaf(float32(r*r), q, r)
	return j, m
}

// expFused returns e^x through expCoreFused (within 1 ulp), the exponential of Sigmoidf and
// GELU:
//
//	j, m = expCoreFused(x)
//	if |x| < 87.5 { p = expPow2(j); return Fmaf(p, m, p) }   // 2^k (1 + m) rounded once
//	NaN -> NaN
//	return expRare(x, j, m)
//
// Go computes Fmaf(p, m, p) as (1 + m) * p wherever k > -126: the result is then normal, and
// rounding 2^k (1 + m) to 24 bits is 2^k times 1 + m rounded to 24 bits (identical bits).
func expFused(x float32) float32 {
	j, m := expCoreFused(x)
	if absf32(x) < expMid {
		p := expPow2(j)
		if expK(j) > -126 {
			return float32((1 + m) * p)
		}
		return Fmaf(p, m, p)
	}
	if x != x {
		return CanonicalNaN()
	}
	return expRare(x, j, m)
}

// Expf returns e^x (expf).
//
// Algorithm (constants in the const block; every step one rounded float32 operation):
//
//	j, m = expCore(x)
//	if |x| < 87.5 {                      // one compare; false for NaN and ±Inf
//	    return (1 + m) * expPow2(j)      // k in [-126, 126]: one rounding, also for subnormals
//	}
//	NaN -> NaN
//	return expRare(x, j, m)              // ±Inf, overflow, underflow, two-step scaling
//
// Max error about 1 ulp over all inputs; results in the subnormal range are rounded once.
// Overflow to +Inf starts at x = 0x1.62e43p+6 (88.7228394), the correctly rounded threshold.
func Expf(x float32) float32 {
	j, m := expCore(x)
	if absf32(x) < expMid {
		return float32((1 + m) * expPow2(j))
	}
	if x != x {
		return CanonicalNaN()
	}
	return expRare(x, j, m)
}

// absf32 clears the sign bit.
func absf32(x float32) float32 { return f32frombits(f32bits(x) &^ 0x80000000) }

// Expm1f returns e^x - 1 (expm1f), accurate near 0.
//
// Algorithm:
//
//	j, m = expCore(x)
//	if (bits(x) << 1) - 1 < (bits(87.5) << 1) - 1 {   // 0 < |x| < 87.5 (uint32 arithmetic)
//	    p = expPow2(j)                   // 2^k, k in [-126, 126]
//	    return p*m + (p - 1)             // p - 1 exact for k >= -24, -1 below
//	}
//	NaN -> NaN; x == ±0 -> x; x > 89 -> +Inf; x < 0 (x <= -87.5) -> -1
//	return scale(1 + m, k)               // 87.5 <= x <= 89: e^x - 1 rounds as e^x
//
// For k == 0 this is m, the plain polynomial. Max error about 1 ulp.
func Expm1f(x float32) float32 {
	j, m := expCore(x)
	if f32bits(x)<<1-1 < f32bits(expMid)<<1-1 {
		p := expPow2(j)
		return float32(p*m) + (p - 1)
	}
	if x != x {
		return CanonicalNaN()
	}
	if x == 0 {
		return x
	}
	if x > expHi {
		return float32(math.Inf(1))
	}
	if x < 0 {
		return -1
	}
	return scale(1+m, expK(j))
}

// logCore returns log(x) + ext for finite x > 0 (normal or subnormal) and a small correction
// ext (|ext| <= 2^-23 |log x| or so). Shared by Logf and Log1pf:
//
//	ix = bits(x); e = -127
//	if ix < 0x00800000 { x = x*2^23; ix = bits(x); e = -150 }     // subnormal: exact scaling
//	e += ix >> 23;  ix &= 0x007fffff
//	if ix > 0x003504f3 { ix |= 0x3f000000; e += 1 } else { ix |= 0x3f800000 }
//	m = float(ix)                        // x = 2^e m, m in (0.7071, 1.4143]
//	f = m - 1                            // exact
//	s = f / (2 + f)                      // log(1+f) = f - s*(f - R), R = 2 atanh(s)/s - 2
//	z = s*s
//	R = z*(L1 + z*(L2 + z*(L3 + z*L4)))
//	corr = s*(f - R)
//	ef = float(e);  eh = ef*ln2Hi (exact);  el = ef*ln2Lo
//	hi = eh + f;  fe = f - (hi - eh)     // Fast2Sum (|eh| >= |f| or eh == 0)
//	lo = (el + ext) - corr
//	return hi + (fe + lo)
func logCore(x, ext float32) float32 {
	ix := f32bits(x)
	e := int32(-127)
	if ix < 0x00800000 {
		x = float32(x * two23)
		ix = f32bits(x)
		e = -127 - 23
	}
	e += int32(ix >> 23)
	ix &= 0x007fffff
	if ix > 0x003504f3 {
		ix |= 0x3f000000
		e++
	} else {
		ix |= 0x3f800000
	}
	m := f32frombits(ix)
	f := m - 1
	s := f / (2 + f)
	z := float32(s * s)
	q := logL4
	q = logL3 + float32(z*q)
	q = logL2 + float32(z*q)
	q = logL1 + float32(z*q)
	rr := float32(z * q)
	corr := float32(s * (f - rr))
	ef := float32(e)
	eh := float32(ef * ln2Hi)
	el := float32(ef * ln2Lo)
	hi := eh + f
	fe := f - (hi - eh)
	lo := (el + ext) - corr
	return hi + (fe + lo)
}

// Logf returns the natural logarithm of x (logf).
//
// Algorithm: NaN -> NaN; x < 0 (including -Inf) -> NaN; ±0 -> -Inf; +Inf -> +Inf;
// otherwise logCore(x, 0) (see logCore for the steps). Max error about 1 ulp.
func Logf(x float32) float32 {
	if x != x || x < 0 {
		return CanonicalNaN()
	}
	if x == 0 {
		return float32(math.Inf(-1))
	}
	if x > maxF32 {
		return x
	}
	return logCore(x, 0)
}

// Log1pf returns log(1 + x) (log1pf), accurate near 0.
//
// Algorithm:
//
//	NaN -> NaN; x == ±0 -> x; x < -1 (including -Inf) -> NaN; x == -1 -> -Inf; +Inf -> +Inf
//	u = 1 + x;  bb = u - 1;  err = (1 - (u - bb)) + (x - bb)   // TwoSum: u + err = 1 + x
//	return logCore(u, err / u)           // log(u + err) ~= log(u) + err/u
//
// Max error about 1 ulp.
func Log1pf(x float32) float32 {
	if x != x {
		return CanonicalNaN()
	}
	if x == 0 {
		return x
	}
	if x < -1 {
		return CanonicalNaN()
	}
	if x == -1 {
		return float32(math.Inf(-1))
	}
	if x > maxF32 {
		return x
	}
	u := 1 + x
	bb := u - 1
	err := (1 - (u - bb)) + (x - bb)
	return logCore(u, err/u)
}

// Tanhf returns the hyperbolic tangent of x (tanhf). It is odd: Tanhf(-x) == -Tanhf(x) bit for
// bit, Tanhf(-0) = -0.
//
// Algorithm: one formula over the whole range (no divergent branches on the GPU):
//
//	a = |x| (sign bit cleared)
//	if !(a < 9.5) { NaN -> NaN; y = 1 }   // NaN, |x| >= 9.5
//	else {
//	    j, m = expCoreFused(a + a);  p = expPow2(j)   // k in [0, 27]
//	    E = Fmaf(p, m, p - 1)            // expm1(2a); p*m is exact, so Go adds p*m + (p - 1)
//	    y = E / (E + 2)
//	}
//	return y with the sign bit of x
//
// Max error within 3 ulp.
func Tanhf(x float32) float32 {
	sign := f32bits(x) & 0x80000000
	a := absf32(x)
	if !(a < tanhHi) {
		if a != a {
			return CanonicalNaN()
		}
		return f32frombits(f32bits(1) | sign)
	}
	j, m := expCoreFused(a + a)
	p := expPow2(j)
	e := float32(p*m) + (p - 1)
	y := e / (e + 2)
	return f32frombits(f32bits(y) | sign)
}

// Sigmoidf returns the logistic function 1/(1 + e^-x).
//
// Algorithm: one exponential of -|x| (never overflows), one reciprocal:
//
//	t = expFused(-|x|)                   // NaN -> NaN
//	s = 1 / (1 + t)
//	return x >= 0 ? s : t * s            // e^x/(1 + e^x) for x < 0
//
// Within 3 ulp over all inputs. In the subnormal range (x < -87.3) s is 1 and the result is t,
// e^x rounded once (by the fused branch's Fmaf or expRare's scaling).
func Sigmoidf(x float32) float32 {
	t := expFused(-absf32(x))
	if t != t {
		return CanonicalNaN()
	}
	s := 1 / (1 + t)
	if x >= 0 {
		return s
	}
	return float32(t * s)
}

// sinCosKernel returns sin(2 pi r) and cos(2 pi r) for |r| <= 1/8:
//
//	p = r*4097;  rh = p - (p - r);  rl = r - rh   // Veltkamp: r = rh + rl, rh <= 12 bits
//	z = r*r
//	qs = S1 + z*(S2 + z*(S3 + z*(S4 + z*S5)))
//	sin = rh*S0h + (((r*(z*qs)) + r*S0l) + rl*S0h)  // rh*S0h and rl*S0h are exact
//	zh = rh*rh (exact);  zl = rl*(rh + r)         // r*r ~= zh + zl
//	p2 = zh*4097;  zhh = p2 - (p2 - zh);  zhl = zh - zhh
//	a1 = C1h*zhh (exact);  a2 = C1h*zhl + C1l*zhh;  a3 = C1l*zhl  // C1*zh ~= a1 + a2 + a3
//	b = 1 + a1;  be = a1 - (b - 1)                // Fast2Sum
//	qc = C2 + z*(C3 + z*(C4 + z*C5))
//	cos = b + (be + (a2 + (a3 + (C1*zl + z*(z*qc)))))
func sinCosKernel(r float32) (s, c float32) {
	p := float32(r * veltkamp)
	rh := p - (p - r)
	rl := r - rh
	z := float32(r * r)
	qs := sinS5
	qs = sinS4 + float32(z*qs)
	qs = sinS3 + float32(z*qs)
	qs = sinS2 + float32(z*qs)
	qs = sinS1 + float32(z*qs)
	t4 := float32(r * float32(z*qs))
	t3 := float32(r * sinS0l)
	t2 := float32(rl * sinS0h)
	t1 := float32(rh * sinS0h)
	s = t1 + ((t4 + t3) + t2)
	zh := float32(rh * rh)
	zl := float32(rl * (rh + r))
	p2 := float32(zh * veltkamp)
	zhh := p2 - (p2 - zh)
	zhl := zh - zhh
	a1 := float32(cosC1h * zhh)
	a2 := float32(cosC1h*zhl) + float32(cosC1l*zhh)
	a3 := float32(cosC1l * zhl)
	b := 1 + a1
	be := a1 - (b - 1)
	qc := cosC5
	qc = cosC4 + float32(z*qc)
	qc = cosC3 + float32(z*qc)
	qc = cosC2 + float32(z*qc)
	c = b + (be + (a2 + (a3 + (float32(cosC1*zl) + float32(z*float32(z*qc))))))
	return s, c
}

// SinCos2Pif returns sin(2 pi u) and cos(2 pi u), for Box-Muller and FFT twiddles.
//
// The reduction by quarter turns is exact for every finite u, so the accuracy (within 2 ulp,
// measured about 1) holds over the whole float32 range, not only [-1, 1]; zeros of sin and
// cos come out exactly.
//
// Algorithm:
//
//	NaN, ±Inf -> (NaN, NaN)
//	if |u| < 2^23 {
//	    v = u*4 (exact);  q = int32(v) (truncation);  f = v - float(q) (exact, |f| < 1)
//	    if f > 0.5 { q++; f = f - 1 } else if f < -0.5 { q--; f = f + 1 }   // exact
//	    r = f*0.25                       // u = q/4 + r exactly, |r| <= 1/8
//	} else { q = 0; r = 0 }              // u is an integer
//	sr, cr = sinCosKernel(r)
//	q&3 == 0: (sr, cr); 1: (cr, -sr); 2: (-sr, -cr); 3: (-cr, sr)
//	a zero sine gets the sign of u; a zero cosine is +0
func SinCos2Pif(u float32) (s, c float32) {
	if f32bits(u)&0x7fffffff >= 0x7f800000 {
		return CanonicalNaN(), CanonicalNaN()
	}
	var q int32
	var r float32
	if f32frombits(f32bits(u)&^0x80000000) < two23 {
		v := float32(u * 4)
		q = int32(v)
		f := v - float32(q)
		if f > 0.5 {
			q++
			f = f - 1
		} else if f < -0.5 {
			q--
			f = f + 1
		}
		r = float32(f * 0.25)
	}
	sr, cr := sinCosKernel(r)
	switch q & 3 {
	case 0:
		s, c = sr, cr
	case 1:
		s, c = cr, -sr
	case 2:
		s, c = -sr, -cr
	default:
		s, c = -cr, sr
	}
	if s == 0 {
		s = f32frombits(f32bits(u) & 0x80000000)
	}
	if c == 0 {
		c = 0
	}
	return s, c
}

// Sqrtf returns the correctly rounded square root of x (the GPU's __fsqrt_rn).
//
// Algorithm: NaN or x < 0 -> NaN; otherwise float32(math.Sqrt(float64(x))). math.Sqrt is
// correctly rounded in float64, and rounding a correctly rounded float64 square root of a
// float32 to float32 again gives the correctly rounded float32 square root (double rounding is
// innocuous for sqrt when the wider format has at least 2p+2 bits: 53 >= 2*24+2), so this is
// exactly IEEE sqrt in float32; ±0 and +Inf map to themselves.
func Sqrtf(x float32) float32 {
	if x != x || x < 0 {
		return CanonicalNaN()
	}
	return float32(math.Sqrt(float64(x)))
}

// Constants of Powf (the CUDA twin, ptx/f32pow.cuh, defines TLP_<name> with the same bits:
// TestPowCUDAConstants).
const (
	// 2/3 = third2Hi + third2Lo to about 48 bits.
	third2Hi float32 = 0x1.555556p-01
	third2Lo float32 = -0x1.555556p-26
	// 2/(2n+1), n = 2..6: 2 atanh(s) = 2s + (2/3)s^3 + s^5 (P0 + P1 s^2 + ... + P4 s^8) + O(s^15).
	powP0 float32 = 0x1.99999ap-02
	powP1 float32 = 0x1.24924ap-02
	powP2 float32 = 0x1.c71c72p-03
	powP3 float32 = 0x1.745d18p-03
	powP4 float32 = 0x1.3b13b2p-03
)

// powParity reports whether the non-NaN y is an integer and whether it is an odd one (±Inf
// counts as an even integer), from its bits: with b = bits(|y|) and ex its unbiased exponent,
//
//	ex < 0  (|y| < 1): integer only for 0, never odd
//	ex > 23 (|y| >= 2^24, Inf): an even integer
//	ex == 23: an integer, odd when b & 1
//	otherwise: integer when b << (9 + ex) == 0 (no bit below the units place), odd when also
//	(b >> (23 - ex)) & 1 (the units bit; for ex == 0 the exponent's lowest bit, 1)
func powParity(y float32) (integer, odd bool) {
	b := f32bits(y) & 0x7fffffff
	ex := int32(b>>23) - 127
	switch {
	case ex < 0:
		return b == 0, false
	case ex > 23:
		return true, false
	case ex == 23:
		return true, b&1 == 1
	}
	integer = b<<uint32(9+ex) == 0
	return integer, integer && (b>>uint32(23-ex))&1 == 1
}

// powLog returns ln(a) as the unevaluated sum hi + lo (|lo| below about 2^-12 |hi|, relative
// error about 2^-35), for finite a > 0. It is logCore's reduction carried in double-float:
//
//	ix = bits(a); e = -127
//	if ix < 0x00800000 { a = a*2^23; ix = bits(a); e = -150 }     // subnormal: exact scaling
//	e += ix >> 23;  ix &= 0x007fffff
//	if ix > 0x003504f3 { ix |= 0x3f000000; e += 1 } else { ix |= 0x3f800000 }
//	m = float(ix);  f = m - 1            // a = 2^e m, m in (0.7071, 1.4143], f exact
//	d = 2 + f;  dl = f - (d - 2)         // Fast2Sum: d + dl = 2 + f exactly
//	sh = f / d;  rem = Fmaf(-sh, d, f)   // rem = f - sh*d exactly
//	sl = (rem - sh*dl) / d               // s = f/(2 + f) = sh + sl, |s| <= 0.1716
//	zh = sh*sh;  zl = Fmaf(sh, sh, -zh)  // sh^2 = zh + zl exactly
//	ch = sh*zh;  cl = Fmaf(sh, zh, -ch)  // sh*zh = ch + cl exactly
//	cl = cl + sh*(zl + (3*sh)*sl)        // s^3 = ch + cl
//	ph = H*ch;  pl = Fmaf(H, ch, -ph) + (H*cl + L*ch)   // (2/3)s^3 = ph + pl, H + L = 2/3
//	q = P0 + zh*(P1 + zh*(P2 + zh*(P3 + zh*P4)))        // Horner
//	t5 = (ch*zh)*q                       // s^5 (2/5 + 2/7 s^2 + ...)
//	ef = float(e);  eh = ef*ln2Hi (exact);  el = ef*ln2Lo
//	s2 = 2*sh;  h1 = eh + s2;  e1 = s2 - (h1 - eh)      // Fast2Sum (|eh| >= |s2| or eh == 0)
//	hi = h1 + ph;  e2 = ph - (hi - h1)   // Fast2Sum (|h1| >= |ph|)
//	lo = (e1 + e2) + (((2*sl + pl) + t5) + el)
//
// ln m = 2 atanh(s) = 2s + (2/3)s^3 + t5 + O(s^15): the two leading terms in double-float, the
// series tail (at most 2^-12.5 of the whole) in float32.
func powLog(a float32) (hi, lo float32) {
	ix := f32bits(a)
	e := int32(-127)
	if ix < 0x00800000 {
		a = float32(a * two23)
		ix = f32bits(a)
		e = -127 - 23
	}
	e += int32(ix >> 23)
	ix &= 0x007fffff
	if ix > 0x003504f3 {
		ix |= 0x3f000000
		e++
	} else {
		ix |= 0x3f800000
	}
	m := f32frombits(ix)
	f := m - 1
	d := 2 + f
	dl := f - (d - 2)
	sh := f / d
	rem := Fmaf(-sh, d, f)
	sl := (rem - float32(sh*dl)) / d
	zh := float32(sh * sh)
	zl := Fmaf(sh, sh, -zh)
	ch := float32(sh * zh)
	cl := Fmaf(sh, zh, -ch)
	cl = cl + float32(sh*(zl+float32(float32(3*sh)*sl)))
	ph := float32(third2Hi * ch)
	pl := Fmaf(third2Hi, ch, -ph) + (float32(third2Hi*cl) + float32(third2Lo*ch))
	q := powP4
	q = powP3 + float32(zh*q)
	q = powP2 + float32(zh*q)
	q = powP1 + float32(zh*q)
	q = powP0 + float32(zh*q)
	t5 := float32(float32(ch*zh) * q)
	ef := float32(e)
	eh := float32(ef * ln2Hi)
	el := float32(ef * ln2Lo)
	s2 := float32(2 * sh)
	h1 := eh + s2
	e1 := s2 - (h1 - eh)
	hi = h1 + ph
	e2 := ph - (hi - h1)
	lo = (e1 + e2) + (((float32(2*sl) + pl) + t5) + el)
	return hi, lo
}

// powExp returns e^(yh + yl) for -104 <= yh <= 89 and |yl| <= 2^-20 |yh| or so: expCore's
// reduction with the low part folded into the reduced argument, and 1 + expm1(r) summed in
// double-float before the one rounding:
//
//	j = (yh*log2e) + magic;  kf = j - magic              // k = round(yh/ln 2), in [-150, 128]
//	a = yh - kf*ln2Hi                    // exact (expCore)
//	b = yl - kf*ln2Lo
//	r = a + b;  bb = r - a;  rl = (a - (r - bb)) + (b - bb)   // TwoSum: r + rl = a + b
//	q = Q0 + r*(Q1 + r*(Q2 + r*(Q3 + r*Q4)))           // expCore's polynomial
//	u = 1 + r;  ue = (1 - u) + r         // Fast2Sum (|r| < 1)
//	w = u + (ue + (rl + r*(r*q)))        // e^r rounded once, in [0.70, 1.42]
//	|yh| < 87.5: return w * expPow2(j)   // k in [-126, 126]
//	else return scale(w, k)              // overflow to +Inf, subnormal results
func powExp(yh, yl float32) float32 {
	j := float32(yh*log2e) + magic
	kf := j - magic
	a := yh - float32(kf*ln2Hi)
	b := yl - float32(kf*ln2Lo)
	r := a + b
	bb := r - a
	rl := (a - (r - bb)) + (b - bb)
	q := expQ4
	q = expQ3 + float32(r*q)
	q = expQ2 + float32(r*q)
	q = expQ1 + float32(r*q)
	q = expQ0 + float32(r*q)
	u := 1 + r
	ue := (1 - u) + r
	w := u + (ue + (rl + float32(r*float32(r*q))))
	if absf32(yh) < expMid {
		return float32(w * expPow2(j))
	}
	return scale(w, expK(j))
}

// Powf returns x^y (powf, with C99's special cases): the exponential of y ln|x| computed in
// double-float (powLog, powExp), the sign from the parity of y.
//
// Algorithm:
//
//	y == 0 or x == 1 -> 1 (also for NaN); x or y NaN -> NaN
//	integer, odd = powParity(y)
//	x < 0, finite, and y not an integer -> NaN
//	sign = odd ? the sign bit of x : 0
//	a = |x|
//	a == 1 -> 1;  a == 0 -> y > 0 ? 0 : +Inf;  a == +Inf -> y > 0 ? +Inf : 0
//	otherwise:
//	    hi, lo = powLog(a)
//	    yh = y*hi                        // ±Inf for huge y
//	    yh > 89 -> +Inf;  yh < -104 -> 0
//	    yl = Fmaf(y, hi, -yh) + y*lo     // y ln a = yh + yl
//	    powExp(yh, yl)
//	return the magnitude with the sign bit set to sign
//
// So Powf(-8, 1/3) is NaN, Powf(-2, 3) = -8, Powf(-0, -1) = -Inf, Powf(x, ±Inf) follows C
// (0 or +Inf by |x| < 1, 1 for x = -1). Accuracy: TestPowfAccuracy measures the error against
// math.Pow in float64 over millions of inputs: below 1 ulp (max about 0.8) for normal results.
// Results in the subnormal range are rounded twice (w, then the scaling), as Expf's.
func Powf(x, y float32) float32 {
	if y == 0 || x == 1 {
		return 1
	}
	if x != x || y != y {
		return CanonicalNaN()
	}
	integer, odd := powParity(y)
	a := absf32(x)
	if x < 0 && !integer && a <= maxF32 {
		return CanonicalNaN()
	}
	var sign uint32
	if odd {
		sign = f32bits(x) & 0x80000000
	}
	var r float32
	switch {
	case a == 1:
		r = 1
	case a == 0:
		if y > 0 {
			r = 0
		} else {
			r = float32(math.Inf(1))
		}
	case a > maxF32:
		if y > 0 {
			r = float32(math.Inf(1))
		} else {
			r = 0
		}
	default:
		hi, lo := powLog(a)
		yh := float32(y * hi)
		switch {
		case yh > expHi:
			r = float32(math.Inf(1))
		case yh < expLo:
			r = 0
		default:
			yl := Fmaf(y, hi, -yh) + float32(y*lo)
			r = powExp(yh, yl)
		}
	}
	return f32frombits(f32bits(r) | sign)
}
