// f32pow.cuh: the float32 power function of the arithmetic contract, the CUDA twin of Powf in
// cpu/f32math.go (tlp_parity = powParity, tlp_log = powLog, tlp_exp = powExp, tl_powf = Powf),
// built on the helpers of f32math.cuh. Each function performs the same sequence of correctly
// rounded float32 operations as its Go twin, with the same constants and branches; the Go doc
// comments state the algorithms. It is a header of its own (not part of f32math.cuh) so that
// only the families that use it (elementwise_math.cu) depend on it.
//
// Requirements as for f32math.cuh: --fmad=false, no fast-math; only + - * / on float,
// comparisons, integer operations, bit casts and tl_fmaf.
//
// Constants: TLP_<name> has the bits of the Go constant <name> (checked by the Go test
// TestPowCUDAConstants, which parses the #define lines below: keep their form).
#pragma once
#include "f32math.cuh"

#define TLP_third2Hi __uint_as_float(0x3f2aaaabu)
#define TLP_third2Lo __uint_as_float(0xb2aaaaabu)
#define TLP_powP0 __uint_as_float(0x3ecccccdu)
#define TLP_powP1 __uint_as_float(0x3e924925u)
#define TLP_powP2 __uint_as_float(0x3e638e39u)
#define TLP_powP3 __uint_as_float(0x3e3a2e8cu)
#define TLP_powP4 __uint_as_float(0x3e1d89d9u)

// tlp_parity = powParity: *integer, *odd for the non-NaN y (±Inf: an even integer).
__device__ __forceinline__ void tlp_parity(float y, bool* integer, bool* odd) {
  unsigned int b = __float_as_uint(y) & 0x7fffffffu;
  int ex = (int)(b >> 23) - 127;
  if (ex < 0) {
    *integer = b == 0u;
    *odd = false;
    return;
  }
  if (ex > 23) {
    *integer = true;
    *odd = false;
    return;
  }
  if (ex == 23) {
    *integer = true;
    *odd = (b & 1u) == 1u;
    return;
  }
  bool in = (b << (unsigned int)(9 + ex)) == 0u;
  *integer = in;
  *odd = in && ((b >> (unsigned int)(23 - ex)) & 1u) == 1u;
}

// tlp_log = powLog: ln(a) = *hi + *lo for finite a > 0.
__device__ __forceinline__ void tlp_log(float a, float* hi, float* lo) {
  unsigned int ix = __float_as_uint(a);
  int e = -127;
  if (ix < 0x00800000u) {
    a = a * TLF_two23;
    ix = __float_as_uint(a);
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
  float d = 2.0f + f;
  float dl = f - (d - 2.0f);
  float sh = f / d;
  float rem = tl_fmaf(-sh, d, f);
  float sl = (rem - sh * dl) / d;
  float zh = sh * sh;
  float zl = tl_fmaf(sh, sh, -zh);
  float ch = sh * zh;
  float cl = tl_fmaf(sh, zh, -ch);
  cl = cl + sh * (zl + (3.0f * sh) * sl);
  float ph = TLP_third2Hi * ch;
  float pl = tl_fmaf(TLP_third2Hi, ch, -ph) + (TLP_third2Hi * cl + TLP_third2Lo * ch);
  float q = TLP_powP4;
  q = TLP_powP3 + zh * q;
  q = TLP_powP2 + zh * q;
  q = TLP_powP1 + zh * q;
  q = TLP_powP0 + zh * q;
  float t5 = (ch * zh) * q;
  float ef = (float)e;
  float eh = ef * TLF_ln2Hi;
  float el = ef * TLF_ln2Lo;
  float s2 = 2.0f * sh;
  float h1 = eh + s2;
  float e1 = s2 - (h1 - eh);
  float h = h1 + ph;
  float e2 = ph - (h - h1);
  *hi = h;
  *lo = (e1 + e2) + (((2.0f * sl + pl) + t5) + el);
}

// tlp_exp = powExp: e^(yh + yl) for -104 <= yh <= 89.
__device__ __forceinline__ float tlp_exp(float yh, float yl) {
  float j = (yh * TLF_log2e) + TLF_magic;
  float kf = j - TLF_magic;
  float a = yh - kf * TLF_ln2Hi;
  float b = yl - kf * TLF_ln2Lo;
  float r = a + b;
  float bb = r - a;
  float rl = (a - (r - bb)) + (b - bb);
  float q = TLF_expQ4;
  q = TLF_expQ3 + (r * q);
  q = TLF_expQ2 + (r * q);
  q = TLF_expQ1 + (r * q);
  q = TLF_expQ0 + (r * q);
  float u = 1.0f + r;
  float ue = (1.0f - u) + r;
  float w = u + (ue + (rl + r * (r * q)));
  if (tlf_absf(yh) < TLF_expMid) {
    return w * tlf_exp_pow2(j);
  }
  return tlf_scale(w, tlf_exp_k(j));
}

// tl_powf = Powf: x^y with C99's special cases.
__device__ __forceinline__ float tl_powf(float x, float y) {
  if (y == 0.0f || x == 1.0f) {
    return 1.0f;
  }
  if (x != x || y != y) {
    return tlf_nan();
  }
  bool integer, odd;
  tlp_parity(y, &integer, &odd);
  float a = tlf_absf(x);
  if (x < 0.0f && !integer && a <= TLF_maxF32) {
    return tlf_nan();
  }
  unsigned int sign = odd ? (__float_as_uint(x) & 0x80000000u) : 0u;
  float r;
  if (a == 1.0f) {
    r = 1.0f;
  } else if (a == 0.0f) {
    r = y > 0.0f ? 0.0f : tlf_inf();
  } else if (a > TLF_maxF32) {
    r = y > 0.0f ? tlf_inf() : 0.0f;
  } else {
    float hi, lo;
    tlp_log(a, &hi, &lo);
    float yh = y * hi;
    if (yh > TLF_expHi) {
      r = tlf_inf();
    } else if (yh < TLF_expLo) {
      r = 0.0f;
    } else {
      float yl = tl_fmaf(y, hi, -yh) + y * lo;
      r = tlp_exp(yh, yl);
    }
  }
  return __uint_as_float(__float_as_uint(r) | sign);
}
