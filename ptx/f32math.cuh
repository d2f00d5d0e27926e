// f32math.cuh: float32 elementary functions of the arithmetic contract, the CUDA twin of the Go
// functions in cpu/f32math.go (package github.com/torchlean-go/torchlean/cpu).
//
// Each function here performs the same sequence of correctly rounded float32 operations as its
// Go twin (tl_expf = cpu.Expf, tl_logf = Logf, tl_log1pf = Log1pf, tl_expm1f = Expm1f,
// tl_tanhf = Tanhf, tl_sigmoidf = Sigmoidf, tl_sincos2pif = SinCos2Pif, tl_fmaf = Fmaf,
// tl_sqrtf = Sqrtf; tlf_exp_core = expCore, tlf_exp_core_fused = expCoreFused, tlf_exp_fused =
// expFused and so on for the helpers), with the same constants and branches, so both return
// identical bits for every input. Where Go computes a value another way that is provably the
// same (an fma whose product is exact), the Go doc comment says so. The Go doc comments state the algorithms; read the two files side by side.
//
// Requirements: compile with --fmad=false (no contraction of a*b+c) and without fast-math
// (-ftz=false, -prec-div=true, -prec-sqrt=true: the defaults). Only + - * / on float,
// comparisons, integer operations and __float_as_uint/__uint_as_float are used, except
// tl_fmaf (__fmaf_rn) and tl_sqrtf (__fsqrt_rn), which are correctly rounded instructions.
// Every NaN result is the canonical NaN 0x7fffffff (what the GPU's arithmetic produces).
//
// Constants: TLF_<name> has the bits of the Go constant <name> (checked by the Go test
// TestCUDAConstants, which parses the #define lines below: keep their form).
#pragma once

#define TLF_log2e __uint_as_float(0x3fb8aa3bu)
#define TLF_magic __uint_as_float(0x4b400000u)
#define TLF_ln2Hi __uint_as_float(0x3f317200u)
#define TLF_ln2Lo __uint_as_float(0x35bfbe8eu)
#define TLF_expHi __uint_as_float(0x42b20000u)
#define TLF_expLo __uint_as_float(0xc2d00000u)
#define TLF_expMid __uint_as_float(0x42af0000u)
#define TLF_tanhHi __uint_as_float(0x41180000u)
#define TLF_two23 __uint_as_float(0x4b000000u)
#define TLF_maxF32 __uint_as_float(0x7f7fffffu)
#define TLF_expQ0 __uint_as_float(0x3f000000u)
#define TLF_expQ1 __uint_as_float(0x3e2aaa6fu)
#define TLF_expQ2 __uint_as_float(0x3d2aaaddu)
#define TLF_expQ3 __uint_as_float(0x3c0905a5u)
#define TLF_expQ4 __uint_as_float(0x3ab63501u)
#define TLF_logL1 __uint_as_float(0x3f2aaaabu)
#define TLF_logL2 __uint_as_float(0x3ecccccdu)
#define TLF_logL3 __uint_as_float(0x3e924925u)
#define TLF_logL4 __uint_as_float(0x3e638e39u)
#define TLF_sinS0h __uint_as_float(0x40c90000u)
#define TLF_sinS0l __uint_as_float(0x3afdaa22u)
#define TLF_sinS1 __uint_as_float(0xc2255de7u)
#define TLF_sinS2 __uint_as_float(0x42a335e3u)
#define TLF_sinS3 __uint_as_float(0xc2996966u)
#define TLF_sinS4 __uint_as_float(0x42283c1au)
#define TLF_sinS5 __uint_as_float(0xc17183a8u)
#define TLF_cosC1 __uint_as_float(0xc19de9e6u)
#define TLF_cosC1h __uint_as_float(0xc19de000u)
#define TLF_cosC1l __uint_as_float(0xbb9e64dfu)
#define TLF_cosC2 __uint_as_float(0x4281e0f8u)
#define TLF_cosC3 __uint_as_float(0xc2aae9e4u)
#define TLF_cosC4 __uint_as_float(0x4270fa83u)
#define TLF_cosC5 __uint_as_float(0xc1d368f9u)
#define TLF_veltkamp __uint_as_float(0x45801000u)

#define TLF_CANONICAL_NAN_BITS 0x7fffffffu

__device__ __forceinline__ float tlf_nan() { return __uint_as_float(TLF_CANONICAL_NAN_BITS); }
__device__ __forceinline__ float tlf_inf() { return __uint_as_float(0x7f800000u); }

// tl_fmaf = FMA: a*b + c rounded once (the hardware fma.rn.f32).
__device__ __forceinline__ float tl_fmaf(float a, float b, float c) { return __fmaf_rn(a, b, c); }

// tlf_pow2 = pow2: 2^k for -126 <= k <= 127.
__device__ __forceinline__ float tlf_pow2(int k) {
  return __uint_as_float((unsigned int)(k + 127) << 23);
}

// tlf_scale = scale: s*2^k for -150 <= k <= 128, in two exact-then-rounding steps.
__device__ __forceinline__ float tlf_scale(float s, int k) {
  int k1 = k >> 1;
  int k2 = k - k1;
  return (s * tlf_pow2(k1)) * tlf_pow2(k2);
}

// tlf_exp_core = expCore: *j = magic + k, *m = expm1(x - k ln 2).
__device__ __forceinline__ void tlf_exp_core(float x, float* j, float* m) {
  float jj = (x * TLF_log2e) + TLF_magic;
  float kf = jj - TLF_magic;
  float r = (x - (kf * TLF_ln2Hi)) - (kf * TLF_ln2Lo);
  float q = TLF_expQ4;
  q = TLF_expQ3 + (r * q);
  q = TLF_expQ2 + (r * q);
  q = TLF_expQ1 + (r * q);
  q = TLF_expQ0 + (r * q);
  *j = jj;
  *m = r + (r * (r * q));
}

// tlf_exp_pow2 = expPow2: 2^k from j = magic + k, -126 <= k <= 127.
__device__ __forceinline__ float tlf_exp_pow2(float j) {
  return __uint_as_float((__float_as_uint(j) << 23) + 0x3f800000u);
}

// tlf_exp_k = expK: k from j = magic + k.
__device__ __forceinline__ int tlf_exp_k(float j) {
  return (int)(__float_as_uint(j) - __float_as_uint(TLF_magic));
}

// tlf_absf = absf32: the sign bit cleared.
__device__ __forceinline__ float tlf_absf(float x) {
  return __uint_as_float(__float_as_uint(x) & ~0x80000000u);
}

// tlf_exp_rare = expRare: e^x for non-NaN x with |x| >= 87.5.
__device__ __forceinline__ float tlf_exp_rare(float x, float j, float m) {
  if (x > TLF_expHi) {
    return tlf_inf();
  }
  if (x < TLF_expLo) {
    return 0.0f;
  }
  return tlf_scale(1.0f + m, tlf_exp_k(j));
}

// tl_expf = Exp.
__device__ __forceinline__ float tl_expf(float x) {
  float j, m;
  tlf_exp_core(x, &j, &m);
  if (tlf_absf(x) < TLF_expMid) {
    return (1.0f + m) * tlf_exp_pow2(j);
  }
  if (x != x) {
    return tlf_nan();
  }
  return tlf_exp_rare(x, j, m);
}

// tl_expm1f = Expm1.
__device__ __forceinline__ float tl_expm1f(float x) {
  float j, m;
  tlf_exp_core(x, &j, &m);
  if ((__float_as_uint(x) << 1) - 1u < (__float_as_uint(TLF_expMid) << 1) - 1u) {
    float p = tlf_exp_pow2(j);
    return (p * m) + (p - 1.0f);
  }
  if (x != x) {
    return tlf_nan();
  }
  if (x == 0.0f) {
    return x;
  }
  if (x > TLF_expHi) {
    return tlf_inf();
  }
  if (x < 0.0f) {
    return -1.0f;
  }
  return tlf_scale(1.0f + m, tlf_exp_k(j));
}

// tlf_log_core = logCore: log(x) + ext for finite x > 0.
__device__ __forceinline__ float tlf_log_core(float x, float ext) {
  unsigned int ix = __float_as_uint(x);
  int e = -127;
  if (ix < 0x00800000u) {
    x = x * TLF_two23;
    ix = __float_as_uint(x);
    e = -127 - 23;
  }
  e += (int)(ix >> 23);
  ix &= 0x007fffffu;
  if (ix > 0x003504f3u) {
    ix |= 0x3f000000u;
    e++;
  } else {
    ix |= 0x3f800000u;
  }
  float m = __uint_as_float(ix);
  float f = m - 1.0f;
  float s = f / (2.0f + f);
  float z = s * s;
  float q = TLF_logL4;
  q = TLF_logL3 + (z * q);
  q = TLF_logL2 + (z * q);
  q = TLF_logL1 + (z * q);
  float rr = z * q;
  float corr = s * (f - rr);
  float ef = (float)e;
  float eh = ef * TLF_ln2Hi;
  float el = ef * TLF_ln2Lo;
  float hi = eh + f;
  float fe = f - (hi - eh);
  float lo = (el + ext) - corr;
  return hi + (fe + lo);
}

// tl_logf = Log.
__device__ __forceinline__ float tl_logf(float x) {
  if (x != x || x < 0.0f) {
    return tlf_nan();
  }
  if (x == 0.0f) {
    return -tlf_inf();
  }
  if (x > TLF_maxF32) {
    return x;
  }
  return tlf_log_core(x, 0.0f);
}

// tl_log1pf = Log1p.
__device__ __forceinline__ float tl_log1pf(float x) {
  if (x != x) {
    return tlf_nan();
  }
  if (x == 0.0f) {
    return x;
  }
  if (x < -1.0f) {
    return tlf_nan();
  }
  if (x == -1.0f) {
    return -tlf_inf();
  }
  if (x > TLF_maxF32) {
    return x;
  }
  float u = 1.0f + x;
  float bb = u - 1.0f;
  float err = (1.0f - (u - bb)) + (x - bb);
  return tlf_log_core(u, err / u);
}

// tlf_exp_core_fused = expCoreFused: expCore's reduction and polynomial with fused operations.
__device__ __forceinline__ void tlf_exp_core_fused(float x, float* j, float* m) {
  float jj = tl_fmaf(x, TLF_log2e, TLF_magic);
  float kf = jj - TLF_magic;
  float r = tl_fmaf(kf, -TLF_ln2Lo, tl_fmaf(kf, -TLF_ln2Hi, x));
  float q = tl_fmaf(r, TLF_expQ4, TLF_expQ3);
  q = tl_fmaf(r, q, TLF_expQ2);
  q = tl_fmaf(r, q, TLF_expQ1);
  q = tl_fmaf(r, q, TLF_expQ0);
  *j = jj;
  *m = tl_fmaf(r * r, q, r);
}

// tlf_exp_fused = expFused.
__device__ __forceinline__ float tlf_exp_fused(float x) {
  float j, m;
  tlf_exp_core_fused(x, &j, &m);
  if (tlf_absf(x) < TLF_expMid) {
    float p = tlf_exp_pow2(j);
    return tl_fmaf(p, m, p);
  }
  if (x != x) {
    return tlf_nan();
  }
  return tlf_exp_rare(x, j, m);
}

// tl_tanhf = Tanh.
__device__ __forceinline__ float tl_tanhf(float x) {
  unsigned int sign = __float_as_uint(x) & 0x80000000u;
  float a = tlf_absf(x);
  if (!(a < TLF_tanhHi)) {
    if (a != a) {
      return tlf_nan();
    }
    return __uint_as_float(__float_as_uint(1.0f) | sign);
  }
  float j, m;
  tlf_exp_core_fused(a + a, &j, &m);
  float p = tlf_exp_pow2(j);
  float e = tl_fmaf(p, m, p - 1.0f);
  float y = e / (e + 2.0f);
  return __uint_as_float(__float_as_uint(y) | sign);
}

// tl_sigmoidf = Sigmoid. Go's explicit NaN test is left out: a NaN t gives the canonical NaN
// through 1 + t, the reciprocal and t * s alike.
__device__ __forceinline__ float tl_sigmoidf(float x) {
  float t = tlf_exp_fused(-tlf_absf(x));
  float s = 1.0f / (1.0f + t);
  return x >= 0.0f ? s : t * s;
}

// tlf_sincos_kernel = sinCosKernel: sin(2 pi r), cos(2 pi r) for |r| <= 1/8.
__device__ __forceinline__ void tlf_sincos_kernel(float r, float* s, float* c) {
  float p = r * TLF_veltkamp;
  float rh = p - (p - r);
  float rl = r - rh;
  float z = r * r;
  float qs = TLF_sinS5;
  qs = TLF_sinS4 + (z * qs);
  qs = TLF_sinS3 + (z * qs);
  qs = TLF_sinS2 + (z * qs);
  qs = TLF_sinS1 + (z * qs);
  float t4 = r * (z * qs);
  float t3 = r * TLF_sinS0l;
  float t2 = rl * TLF_sinS0h;
  float t1 = rh * TLF_sinS0h;
  *s = t1 + ((t4 + t3) + t2);
  float zh = rh * rh;
  float zl = rl * (rh + r);
  float p2 = zh * TLF_veltkamp;
  float zhh = p2 - (p2 - zh);
  float zhl = zh - zhh;
  float a1 = TLF_cosC1h * zhh;
  float a2 = (TLF_cosC1h * zhl) + (TLF_cosC1l * zhh);
  float a3 = TLF_cosC1l * zhl;
  float b = 1.0f + a1;
  float be = a1 - (b - 1.0f);
  float qc = TLF_cosC5;
  qc = TLF_cosC4 + (z * qc);
  qc = TLF_cosC3 + (z * qc);
  qc = TLF_cosC2 + (z * qc);
  *c = b + (be + (a2 + (a3 + ((TLF_cosC1 * zl) + (z * (z * qc))))));
}

// tl_sincos2pif = SinCos2Pi: *s = sin(2 pi u), *c = cos(2 pi u).
__device__ __forceinline__ void tl_sincos2pif(float u, float* s, float* c) {
  if ((__float_as_uint(u) & 0x7fffffffu) >= 0x7f800000u) {
    *s = tlf_nan();
    *c = tlf_nan();
    return;
  }
  int q = 0;
  float r = 0.0f;
  if (__uint_as_float(__float_as_uint(u) & ~0x80000000u) < TLF_two23) {
    float v = u * 4.0f;
    q = (int)v;
    float f = v - (float)q;
    if (f > 0.5f) {
      q++;
      f = f - 1.0f;
    } else if (f < -0.5f) {
      q--;
      f = f + 1.0f;
    }
    r = f * 0.25f;
  }
  float sr, cr;
  tlf_sincos_kernel(r, &sr, &cr);
  float so, co;
  switch (q & 3) {
    case 0:
      so = sr;
      co = cr;
      break;
    case 1:
      so = cr;
      co = -sr;
      break;
    case 2:
      so = -sr;
      co = -cr;
      break;
    default:
      so = -cr;
      co = sr;
      break;
  }
  if (so == 0.0f) {
    so = __uint_as_float(__float_as_uint(u) & 0x80000000u);
  }
  if (co == 0.0f) {
    co = 0.0f;
  }
  *s = so;
  *c = co;
}


// tl_sqrtf = Sqrt: the correctly rounded square root (sqrt.rn.f32).
__device__ __forceinline__ float tl_sqrtf(float x) { return __fsqrt_rn(x); }
