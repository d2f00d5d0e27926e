// fft.cu: our own exact FFT (cpu/fft.go holds the plans, the twins and, in their doc comments,
// the exact float32 arithmetic). A complex FFT of length n is a sequence of Stockham auto-sort
// stages (fft_stage, one launch per stage over the whole batch, one thread per radix-R
// butterfly) whose radices, spans and twiddles (a table computed on the host in float64 and
// rounded) are functions of n alone; lengths with a prime factor above FFT_MAX_PRIME go through
// Bluestein's chirp-z kernels. The real transforms wrap it: rfft_post / rfft_post_odd after the
// forward transform, irfft_pre / irfft_pre_odd before it and irfft_out / irfft_out_odd after it.
// Complex values are interleaved (re, im) float pairs. Every operation is one correctly rounded
// float + - * (nvcc runs with --fmad=false), in the twins' order.
#include "common.cuh"

// FFT_MAX_PRIME is cpu.FFTMaxPrime: the largest odd prime radix of fft_stage.
#define FFT_MAX_PRIME 13

// cmul is cpu.cmul: (a.re*b.re - a.im*b.im, a.re*b.im + a.im*b.re).
__device__ __forceinline__ float2 fft_cmul(float2 a, float2 b) {
  return make_float2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}

__device__ __forceinline__ float2 fft_ld(const float* p, u64 i) {
  return make_float2(p[2 * i], p[2 * i + 1]);
}

__device__ __forceinline__ void fft_st(float* p, u64 i, float2 v) {
  p[2 * i] = v.x;
  p[2 * i + 1] = v.y;
}

// cpu.fft2 and cpu.fft4.
__device__ __forceinline__ void fft_bfly2(float2* v) {
  float2 a = v[0], b = v[1];
  v[0] = make_float2(a.x + b.x, a.y + b.y);
  v[1] = make_float2(a.x - b.x, a.y - b.y);
}

__device__ __forceinline__ void fft_bfly4(float2* v) {
  float a0r = v[0].x + v[2].x, a0i = v[0].y + v[2].y;
  float a1r = v[0].x - v[2].x, a1i = v[0].y - v[2].y;
  float a2r = v[1].x + v[3].x, a2i = v[1].y + v[3].y;
  float a3r = v[1].x - v[3].x, a3i = v[1].y - v[3].y;
  v[0] = make_float2(a0r + a2r, a0i + a2i);
  v[2] = make_float2(a0r - a2r, a0i - a2i);
  v[1] = make_float2(a1r + a3i, a1i - a3r);
  v[3] = make_float2(a1r - a3i, a1i + a3r);
}

// cpu.fftOdd for the odd prime P: rc holds C(j, k), S(j, k) at 2*((j-1)*h + k-1).
template <int P>
__device__ __forceinline__ void fft_bfly_odd(float2* v, const float* __restrict__ rc) {
  const int h = (P - 1) / 2;
  float2 t[h + 1], d[h + 1];
  float2 y0 = v[0];
#pragma unroll
  for (int j = 1; j <= h; j++) {
    t[j] = make_float2(v[j].x + v[P - j].x, v[j].y + v[P - j].y);
    d[j] = make_float2(v[j].x - v[P - j].x, v[j].y - v[P - j].y);
    y0 = make_float2(y0.x + t[j].x, y0.y + t[j].y);
  }
  float2 y[P];
#pragma unroll
  for (int k = 1; k <= h; k++) {
    float c = rc[2 * (k - 1)], s = rc[2 * (k - 1) + 1];
    float ar = v[0].x + c * t[1].x, ai = v[0].y + c * t[1].y;
    float br = s * d[1].x, bi = s * d[1].y;
#pragma unroll
    for (int j = 2; j <= h; j++) {
      float cj = rc[2 * ((j - 1) * h + k - 1)], sj = rc[2 * ((j - 1) * h + k - 1) + 1];
      ar = ar + cj * t[j].x;
      ai = ai + cj * t[j].y;
      br = br + sj * d[j].x;
      bi = bi + sj * d[j].y;
    }
    y[k] = make_float2(ar + bi, ai - br);
    y[P - k] = make_float2(ar - bi, ai + br);
  }
  v[0] = y0;
#pragma unroll
  for (int k = 1; k < P; k++) v[k] = y[k];
}

// One Stockham stage of radix R (cpu.FFTStage states it): rows of n complex values, one thread
// per butterfly j of a row.
template <int R>
__device__ __forceinline__ void fft_stage_r(float* __restrict__ dst, const float* __restrict__ src,
                                            const float* __restrict__ tw, const float* __restrict__ rc,
                                            u64 batch, u32 n, u32 span) {
  const u32 m = n / R;
  const u32 step = n / (span * R);
  TL_FOR(g, batch * m) {
    u64 row = g / m;
    u32 j = (u32)(g - row * m);
    const float* s = src + 2 * row * n;
    float* d = dst + 2 * row * n;
    u32 k = j % span;
    float2 v[R];
#pragma unroll
    for (int r = 0; r < R; r++) v[r] = fft_ld(s, j + r * m);
    if (k != 0) {
#pragma unroll
      for (int r = 1; r < R; r++) v[r] = fft_cmul(v[r], fft_ld(tw, (u32)r * k * step));
    }
    if (R == 4) {
      fft_bfly4(v);
    } else if (R == 2) {
      fft_bfly2(v);
    } else {
      fft_bfly_odd<R>(v, rc);
    }
    u32 base = (j / span) * span * R + k;
#pragma unroll
    for (int r = 0; r < R; r++) fft_st(d, base + r * span, v[r]);
  }
}

// fft_stage: parameters (dst, src, tw, rc, batch, n, span, radix); radix 2, 4 or an odd prime up
// to FFT_MAX_PRIME.
extern "C" __global__ void fft_stage(float* __restrict__ dst, const float* __restrict__ src,
                                     const float* __restrict__ tw, const float* __restrict__ rc, u64 batch,
                                     u64 n, u64 span, u64 radix) {
  switch (radix) {
    case 4: fft_stage_r<4>(dst, src, tw, rc, batch, (u32)n, (u32)span); break;
    case 2: fft_stage_r<2>(dst, src, tw, rc, batch, (u32)n, (u32)span); break;
    case 3: fft_stage_r<3>(dst, src, tw, rc, batch, (u32)n, (u32)span); break;
    case 5: fft_stage_r<5>(dst, src, tw, rc, batch, (u32)n, (u32)span); break;
    case 7: fft_stage_r<7>(dst, src, tw, rc, batch, (u32)n, (u32)span); break;
    case 11: fft_stage_r<11>(dst, src, tw, rc, batch, (u32)n, (u32)span); break;
    case 13: fft_stage_r<13>(dst, src, tw, rc, batch, (u32)n, (u32)span); break;
  }
}

// cpu.FFTWiden over count elements: dst[i] = (x[i], 0).
extern "C" __global__ void fft_widen(float* __restrict__ dst, const float* __restrict__ x, u64 count) {
  TL_FOR(i, count) {
    dst[2 * i] = x[i];
    dst[2 * i + 1] = 0.0f;
  }
}

// cpu.RfftPost: parameters (dst, z, w, batch, h), one thread per bin of the (batch, h+1) output.
extern "C" __global__ void rfft_post(float* __restrict__ dst, const float* __restrict__ z,
                                     const float* __restrict__ w, u64 batch, u64 h) {
  const u64 bins = h + 1;
  TL_FOR(g, batch * bins) {
    u64 row = g / bins;
    u64 k = g - row * bins;
    const float* zr = z + 2 * row * h;
    float* x = dst + 2 * g;
    if (k == 0) {
      x[0] = zr[0] + zr[1];
      x[1] = 0.0f;
    } else if (k == h) {
      x[0] = zr[0] - zr[1];
      x[1] = 0.0f;
    } else {
      float ar = zr[2 * k], ai = zr[2 * k + 1], br = zr[2 * (h - k)], bi = zr[2 * (h - k) + 1];
      float sr = ar + br, si = ai - bi;
      float er = ar - br, ei = ai + bi;
      float2 t = fft_cmul(make_float2(w[2 * k], w[2 * k + 1]), make_float2(ei, -er));
      x[0] = (sr + t.x) * 0.5f;
      x[1] = (si + t.y) * 0.5f;
    }
  }
}

// cpu.RfftPostOdd: parameters (dst, z, batch, n), one thread per output bin.
extern "C" __global__ void rfft_post_odd(float* __restrict__ dst, const float* __restrict__ z, u64 batch,
                                         u64 n) {
  const u64 bins = n / 2 + 1;
  TL_FOR(g, batch * bins) {
    u64 row = g / bins;
    u64 k = g - row * bins;
    dst[2 * g] = z[2 * (row * n + k)];
    dst[2 * g + 1] = z[2 * (row * n + k) + 1];
  }
}

// cpu.IrfftPre: parameters (dst, x, w, batch, h), one thread per element of P (batch, h).
extern "C" __global__ void irfft_pre(float* __restrict__ dst, const float* __restrict__ x,
                                     const float* __restrict__ w, u64 batch, u64 h) {
  TL_FOR(g, batch * h) {
    u64 row = g / h;
    u64 k = g - row * h;
    const float* xr = x + 2 * row * (h + 1);
    float* p = dst + 2 * g;
    if (k == 0) {
      p[0] = xr[0] + xr[2 * h];
      p[1] = -(xr[0] - xr[2 * h]);
    } else {
      float ar = xr[2 * k], ai = xr[2 * k + 1], br = xr[2 * (h - k)], bi = xr[2 * (h - k) + 1];
      float er = ar + br, ei = ai - bi;
      float dr = ar - br, di = ai + bi;
      float wr = w[2 * k], wi = w[2 * k + 1];
      float odr = dr * wr + di * wi;
      float odi = di * wr - dr * wi;
      p[0] = er - odi;
      p[1] = -(ei + odr);
    }
  }
}

// cpu.IrfftPreOdd: parameters (dst, x, batch, n), one thread per element of P (batch, n).
extern "C" __global__ void irfft_pre_odd(float* __restrict__ dst, const float* __restrict__ x, u64 batch,
                                         u64 n) {
  const u64 bins = n / 2 + 1;
  TL_FOR(g, batch * n) {
    u64 row = g / n;
    u64 k = g - row * n;
    const float* xr = x + 2 * row * bins;
    float* p = dst + 2 * g;
    if (k == 0) {
      p[0] = xr[0];
      p[1] = 0.0f;
    } else if (k < bins) {
      p[0] = xr[2 * k];
      p[1] = -xr[2 * k + 1];
    } else {
      p[0] = xr[2 * (n - k)];
      p[1] = xr[2 * (n - k) + 1];
    }
  }
}

// cpu.IrfftOut: parameters (dst, e, count, s): dst[i] = e[i]*s, negated for odd i.
extern "C" __global__ void irfft_out(float* __restrict__ dst, const float* __restrict__ e, u64 count,
                                     float s) {
  TL_FOR(i, count) {
    float v = e[i] * s;
    dst[i] = (i & 1) ? -v : v;
  }
}

// cpu.IrfftOutOdd: parameters (dst, e, count, s): dst[i] = e[2i]*s.
extern "C" __global__ void irfft_out_odd(float* __restrict__ dst, const float* __restrict__ e, u64 count,
                                         float s) {
  TL_FOR(i, count) { dst[i] = e[2 * i] * s; }
}

// cpu.BluesteinPre: parameters (dst, x, c, batch, n, m), one thread per element of (batch, m).
extern "C" __global__ void bluestein_pre(float* __restrict__ dst, const float* __restrict__ x,
                                         const float* __restrict__ c, u64 batch, u64 n, u64 m) {
  TL_FOR(g, batch * m) {
    u64 row = g / m;
    u64 t = g - row * m;
    float2 v = make_float2(0.0f, 0.0f);
    if (t < n) v = fft_cmul(fft_ld(x, row * n + t), fft_ld(c, t));
    fft_st(dst, g, v);
  }
}

// cpu.BluesteinMul: parameters (dst, a, b, batch, m): D = conj(mul(A, B)).
extern "C" __global__ void bluestein_mul(float* __restrict__ dst, const float* __restrict__ a,
                                         const float* __restrict__ b, u64 batch, u64 m) {
  TL_FOR(g, batch * m) {
    float2 p = fft_cmul(fft_ld(a, g), fft_ld(b, g % m));
    fft_st(dst, g, make_float2(p.x, -p.y));
  }
}

// cpu.BluesteinPost: parameters (dst, e, c, batch, n, m): X[k] = mul(c[k], conj(E[k])).
extern "C" __global__ void bluestein_post(float* __restrict__ dst, const float* __restrict__ e,
                                          const float* __restrict__ c, u64 batch, u64 n, u64 m) {
  TL_FOR(g, batch * n) {
    u64 row = g / n;
    u64 k = g - row * n;
    float2 v = fft_ld(e, row * m + k);
    fft_st(dst, g, fft_cmul(fft_ld(c, k), make_float2(v.x, -v.y)));
  }
}
