// fft.cu: our own exact FFT (cpu/fft.go holds the plans, the twins and, in their doc comments,
// the exact float32 arithmetic). A complex FFT of length n is a sequence of Stockham auto-sort
// stages whose radices, spans and twiddles (a table computed on the host in float64 and rounded)
// are functions of n alone; lengths with a prime factor above FFT_MAX_PRIME go through
// Bluestein's chirp-z kernels. The real transforms wrap it: rfft_post / rfft_post_odd after the
// forward transform, irfft_pre / irfft_pre_odd before it and irfft_out / irfft_out_odd after it.
// Complex values are interleaved (re, im) float pairs. Every operation is one correctly rounded
// float + - * (nvcc runs with --fmad=false), in the twins' order.
//
// Two ways run the same stages with the same bits. fft_stage is one stage over the whole batch
// (one launch per stage, one thread per butterfly, ping-ponging between global buffers). The row
// kernels fft_row, rfft_row and irfft_row run a whole row of a complex length up to FFT_ROW_MAX
// in one block: the row is loaded once into dynamic shared memory, every stage runs there in
// place (each thread holds its butterflies' values in registers across a barrier), and the row
// is stored once; rfft_row and irfft_row also do the real transform's packing (the rfft_post,
// irfft_pre and irfft_out formulas above, on the same operands in the same order). Each
// butterfly, twiddle product and packing formula is written once below (fft_butterfly,
// fft_post_bin, fft_pre_bin, fft_pre_odd_bin) and shared by both ways.
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

// fft_butterfly is butterfly j of a Stockham stage of radix R (cpu.FFTStage states it), on the
// R values v[r] = src[j + r*m] of the butterfly, with k = j mod span and step = n / (span*R):
// the twiddle products (none when k == 0), then the radix-R butterfly. The caller stores v[r]
// at (j/span)*span*R + k + r*span.
template <int R>
__device__ __forceinline__ void fft_butterfly(float2* v, u32 k, u32 step, const float* __restrict__ tw,
                                              const float* __restrict__ rc) {
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
    fft_butterfly<R>(v, k, step, tw, rc);
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

// fft_post_bin writes bin k (x[0], x[1]) of cpu.RfftPost from zr, the FFT of a row of h complex
// values read as floats, and w[k] = W_{2h}^k.
__device__ __forceinline__ void fft_post_bin(float* __restrict__ x, const float* zr,
                                             const float* __restrict__ w, u32 h, u32 k) {
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

// fft_pre_bin returns P[k] of cpu.IrfftPre from xr, a half spectrum of h+1 bins, and w[k] =
// W_{2h}^k.
__device__ __forceinline__ float2 fft_pre_bin(const float* __restrict__ xr, const float* __restrict__ w,
                                              u32 h, u32 k) {
  if (k == 0) return make_float2(xr[0] + xr[2 * h], -(xr[0] - xr[2 * h]));
  float ar = xr[2 * k], ai = xr[2 * k + 1], br = xr[2 * (h - k)], bi = xr[2 * (h - k) + 1];
  float er = ar + br, ei = ai - bi;
  float dr = ar - br, di = ai + bi;
  float wr = w[2 * k], wi = w[2 * k + 1];
  float odr = dr * wr + di * wi;
  float odi = di * wr - dr * wi;
  return make_float2(er - odi, -(ei + odr));
}

// fft_pre_odd_bin returns P[k] of cpu.IrfftPreOdd from xr, a half spectrum of n/2+1 bins (n odd).
__device__ __forceinline__ float2 fft_pre_odd_bin(const float* __restrict__ xr, u32 n, u32 k) {
  if (k == 0) return make_float2(xr[0], 0.0f);
  if (k < n / 2 + 1) return make_float2(xr[2 * k], -xr[2 * k + 1]);
  return make_float2(xr[2 * (n - k)], xr[2 * (n - k) + 1]);
}

// fft_out_val is element i of cpu.IrfftOut: e*s, negated for odd i.
__device__ __forceinline__ float fft_out_val(float e, float s, u64 i) {
  float v = e * s;
  return (i & 1) ? -v : v;
}

// cpu.RfftPost: parameters (dst, z, w, batch, h), one thread per bin of the (batch, h+1) output.
extern "C" __global__ void rfft_post(float* __restrict__ dst, const float* __restrict__ z,
                                     const float* __restrict__ w, u64 batch, u64 h) {
  const u64 bins = h + 1;
  TL_FOR(g, batch * bins) {
    u64 row = g / bins;
    u64 k = g - row * bins;
    fft_post_bin(dst + 2 * g, z + 2 * row * h, w, (u32)h, (u32)k);
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
    fft_st(dst, g, fft_pre_bin(x + 2 * row * (h + 1), w, (u32)h, (u32)k));
  }
}

// cpu.IrfftPreOdd: parameters (dst, x, batch, n), one thread per element of P (batch, n).
extern "C" __global__ void irfft_pre_odd(float* __restrict__ dst, const float* __restrict__ x, u64 batch,
                                         u64 n) {
  const u64 bins = n / 2 + 1;
  TL_FOR(g, batch * n) {
    u64 row = g / n;
    u64 k = g - row * n;
    fft_st(dst, g, fft_pre_odd_bin(x + 2 * row * bins, (u32)n, (u32)k));
  }
}

// cpu.IrfftOut: parameters (dst, e, count, s): dst[i] = e[i]*s, negated for odd i.
extern "C" __global__ void irfft_out(float* __restrict__ dst, const float* __restrict__ e, u64 count,
                                     float s) {
  TL_FOR(i, count) { dst[i] = fft_out_val(e[i], s, i); }
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

// The row kernels. FFT_ROW_MAX is the longest complex FFT they run (ops: fftRowMax): a row of
// FFT_ROW_MAX float2 fills 64 KiB of dynamic shared memory, which every GPU of compute capability
// 7.0 or above lets a block opt in to. A block for a complex length c has at least
// ceil(c / FFT_ROW_VALUES) threads (ops: fftRowValues), so that in a stage of radix R each
// thread runs at most ceil(FFT_ROW_VALUES / R) butterflies, whose values it holds in registers;
// at most FFT_ROW_THREADS (ops: fftRowMaxThreads), the kernels' launch bound, which keeps their
// registers within what a block of that many threads may use (without it ptxas gives the odd
// radices' butterflies some 255 registers a thread). Each stage is a function of its own
// (__noinline__), so that ptxas fits each radix's registers alone.
// The plan's stages come packed in two words (ops: fftRowPlan): stage s has the radix
// (radices >> (FFT_ROW_RADIX_BITS*s)) & 15, a zero radix ending the plan, and its odd radix's
// constants at rc + ((rcs >> (FFT_ROW_RC_BITS*s)) & 255); its span is the product of the radices
// before it; at most FFT_ROW_STAGES stages (every length up to FFT_ROW_MAX has at most 8: the
// shortest with 9 is 2*3^8).
#define FFT_ROW_MAX 8192
#define FFT_ROW_VALUES 8
#define FFT_ROW_STAGES 8
#define FFT_ROW_RADIX_BITS 4
#define FFT_ROW_RC_BITS 8
#define FFT_ROW_THREADS (FFT_ROW_MAX / FFT_ROW_VALUES)

// The block's row: c float2 (8*c bytes of dynamic shared memory).
extern __shared__ float2 fft_sm[];

// fft_row_stage runs one Stockham stage of radix R on the block's row sm of n complex values, in
// place: every thread reads and transforms its butterflies j = threadIdx.x + b*blockDim.x
// (fft_butterfly, as fft_stage_r), the block waits, every thread stores them, the block waits.
template <int R>
__device__ __noinline__ void fft_row_stage(float2* sm, const float* __restrict__ tw,
                                              const float* __restrict__ rc, u32 n, u32 span) {
  const int B = (FFT_ROW_VALUES + R - 1) / R;
  const u32 m = n / R;
  const u32 step = n / (span * R);
  float2 v[B][R];
#pragma unroll
  for (int b = 0; b < B; b++) {
    u32 j = threadIdx.x + (u32)b * blockDim.x;
    if (j < m) {
#pragma unroll
      for (int r = 0; r < R; r++) v[b][r] = sm[j + r * m];
      fft_butterfly<R>(v[b], j % span, step, tw, rc);
    }
  }
  __syncthreads();
#pragma unroll
  for (int b = 0; b < B; b++) {
    u32 j = threadIdx.x + (u32)b * blockDim.x;
    if (j < m) {
      u32 k = j % span;
      u32 base = (j / span) * span * R + k;
#pragma unroll
      for (int r = 0; r < R; r++) sm[base + r * span] = v[b][r];
    }
  }
  __syncthreads();
}

// fft_row_run runs the packed stages on the block's row sm of n complex values (loaded, and the
// block synchronized, by the caller), leaving the block synchronized.
__device__ void fft_row_run(float2* sm, const float* __restrict__ tw, const float* __restrict__ rc, u32 n,
                            u64 radices, u64 rcs) {
  u32 span = 1;
  for (int s = 0; s < FFT_ROW_STAGES; s++) {
    const u32 r = (u32)(radices >> (FFT_ROW_RADIX_BITS * s)) & ((1u << FFT_ROW_RADIX_BITS) - 1);
    const float* c = rc + ((rcs >> (FFT_ROW_RC_BITS * s)) & ((1u << FFT_ROW_RC_BITS) - 1));
    switch (r) {
      case 4: fft_row_stage<4>(sm, tw, c, n, span); break;
      case 2: fft_row_stage<2>(sm, tw, c, n, span); break;
      case 3: fft_row_stage<3>(sm, tw, c, n, span); break;
      case 5: fft_row_stage<5>(sm, tw, c, n, span); break;
      case 7: fft_row_stage<7>(sm, tw, c, n, span); break;
      case 11: fft_row_stage<11>(sm, tw, c, n, span); break;
      case 13: fft_row_stage<13>(sm, tw, c, n, span); break;
      default: return;
    }
    span *= r;
  }
}

// fft_row: parameters (dst, src, tw, rc, batch, n, radices, rcs): the complex FFTs of the
// (batch, n) complex src into dst, n <= FFT_ROW_MAX, one block per row (grid-stride), the
// stages of fft_stage in order.
extern "C" __global__ void __launch_bounds__(FFT_ROW_THREADS)
    fft_row(float* __restrict__ dst, const float* __restrict__ src, const float* __restrict__ tw,
            const float* __restrict__ rc, u64 batch, u64 n, u64 radices, u64 rcs) {
  float2* sm = fft_sm;
  const u32 c = (u32)n;
  for (u64 row = blockIdx.x; row < batch; row += gridDim.x) {
    const float* s = src + 2 * row * n;
    for (u32 i = threadIdx.x; i < c; i += blockDim.x) sm[i] = fft_ld(s, i);
    __syncthreads();
    fft_row_run(sm, tw, rc, c, radices, rcs);
    float* d = dst + 2 * row * n;
    for (u32 i = threadIdx.x; i < c; i += blockDim.x) fft_st(d, i, sm[i]);
    __syncthreads();
  }
}

// rfft_row: parameters (dst, x, tw, rc, w, batch, n, radices, rcs): the whole forward real
// transform of the (batch, n) real x into the (batch, n/2+1, 2) dst, one block per row. An even
// n: the row read as c = n/2 complex values, the stages, then rfft_post's bins (w: W_n^k). An
// odd n: the row widened to c = n complex values (fft_widen), the stages, then its first n/2+1
// values (rfft_post_odd; w is not read). c <= FFT_ROW_MAX.
extern "C" __global__ void __launch_bounds__(FFT_ROW_THREADS)
    rfft_row(float* __restrict__ dst, const float* __restrict__ x, const float* __restrict__ tw,
             const float* __restrict__ rc, const float* __restrict__ w, u64 batch, u64 n, u64 radices,
             u64 rcs) {
  float2* sm = fft_sm;
  const bool even = n % 2 == 0;
  const u32 c = (u32)(even ? n / 2 : n);
  const u32 bins = (u32)(n / 2 + 1);
  for (u64 row = blockIdx.x; row < batch; row += gridDim.x) {
    const float* xr = x + row * n;
    for (u32 i = threadIdx.x; i < c; i += blockDim.x) {
      sm[i] = even ? fft_ld(xr, i) : make_float2(xr[i], 0.0f);
    }
    __syncthreads();
    fft_row_run(sm, tw, rc, c, radices, rcs);
    float* out = dst + 2 * row * bins;
    for (u32 k = threadIdx.x; k < bins; k += blockDim.x) {
      if (even) {
        fft_post_bin(out + 2 * k, (const float*)sm, w, c, k);
      } else {
        fft_st(out, k, sm[k]);
      }
    }
    __syncthreads();
  }
}

// irfft_row: parameters (dst, spec, tw, rc, w, batch, n, radices, rcs, s): the whole inverse
// real transform of the (batch, n/2+1, 2) spec into the (batch, n) real dst, one block per row.
// An even n: irfft_pre's c = n/2 values (w: W_n^k), the stages, then irfft_out's n floats. An
// odd n: irfft_pre_odd's c = n values, the stages, then irfft_out_odd's (w is not read).
// c <= FFT_ROW_MAX.
extern "C" __global__ void __launch_bounds__(FFT_ROW_THREADS)
    irfft_row(float* __restrict__ dst, const float* __restrict__ spec, const float* __restrict__ tw,
              const float* __restrict__ rc, const float* __restrict__ w, u64 batch, u64 n, u64 radices,
              u64 rcs, float s) {
  float2* sm = fft_sm;
  const bool even = n % 2 == 0;
  const u32 c = (u32)(even ? n / 2 : n);
  const u64 bins = n / 2 + 1;
  for (u64 row = blockIdx.x; row < batch; row += gridDim.x) {
    const float* xr = spec + 2 * row * bins;
    for (u32 k = threadIdx.x; k < c; k += blockDim.x) {
      sm[k] = even ? fft_pre_bin(xr, w, c, k) : fft_pre_odd_bin(xr, c, k);
    }
    __syncthreads();
    fft_row_run(sm, tw, rc, c, radices, rcs);
    float* y = dst + row * n;
    const float* e = (const float*)sm;
    for (u32 i = threadIdx.x; i < (u32)n; i += blockDim.x) {
      y[i] = even ? fft_out_val(e[i], s, i) : e[2 * i] * s;
    }
    __syncthreads();
  }
}
