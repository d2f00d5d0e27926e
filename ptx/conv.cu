// conv.cu: N-D convolution (spatial rank 1..8), forward and backward, batched channel-first
// layout, with stride, zero padding, dilation and groups. Twin: cpu/conv.go, whose doc comments
// state the arithmetic as code; the summary:
//
//   geometry: geom holds 48 u32, six groups of CONV_MAX_RANK = 8 entries, the spatial axes
//   right-aligned (unused leading axes: size 1, kernel 1, stride 1, padding 0, dilation 1):
//   geom[0..8) input sizes, [8..16) output sizes, [16..24) kernel, [24..32) stride,
//   [32..40) padding, [40..48) dilation. Sizes: batch, cin, cout, groups, inProd, outProd,
//   kProd (products of the input, output and kernel sizes), hasBias. x is (batch, cin, in...),
//   y and dY (batch, cout, out...), w (cout, cin/groups, k...), bias (cout).
//
//   conv_fwd, one owner per y[n][co][o]: acc = +0; for c over the group's input channels
//   ascending, for each kernel offset in row-major order: acc = fmaf(xv, w[co][c][kk], acc),
//   xv the input at o*stride - padding + kk*dilation, or +0 where that cell is padding.
//   With bias: y = acc + bias[co] (added last, one rounding).
//
//   conv_bwd_input, one owner per dX[n][ci][i] (also the forward of a transposed convolution,
//   with its bias): acc = +0; for co over the group's output channels ascending, for each
//   kernel offset kk in row-major order whose every axis has (i + padding - kk*dilation) a
//   multiple of the stride: acc = fmaf(dv, w[co][ci_local][kk], acc), dv = dY at
//   (i + padding - kk*dilation)/stride, or +0 where that position is outside dY. Offsets
//   failing the stride test are skipped (not zero terms). With bias: acc + bias[ci].
//
//   conv_bwd_weight, one owner per dW[co][c][kk]: acc = +0; for n ascending, for each output
//   position o in row-major order: acc = fmaf(dY[n][co][o], xv, acc), xv as in conv_fwd.
//
//   conv_bwd_bias, one owner per dB[co]: acc = +0; for n ascending, for o ascending:
//   acc = acc + dY[n][co][o] (one rounding per add).
//
// No atomics, no split reductions: the bits depend only on the operands and the geometry.
// These are direct kernels (one thread per output, its K loop sequential, the geometry in shared
// memory); an implicit GEMM on the matmul family's FFMA tiles, with the same per-output
// arithmetic, is the planned next step.
#include "common.cuh"

#define CONV_MAX_RANK 8
#define CONV_GEOM_LEN 48

#define G_IN(d) sg[(d)]
#define G_OUT(d) sg[8 + (d)]
#define G_K(d) sg[16 + (d)]
#define G_S(d) sg[24 + (d)]
#define G_P(d) sg[32 + (d)]
#define G_D(d) sg[40 + (d)]

// conv_geom_load copies the geometry into the block's shared memory (every thread of the block
// reaches it before any grid-stride loop).
__device__ __forceinline__ void conv_geom_load(int* sg, const u32* __restrict__ geom) {
  for (int i = threadIdx.x; i < CONV_GEOM_LEN; i += blockDim.x) sg[i] = (int)geom[i];
  __syncthreads();
}

// conv_patch_dot continues acc over the kernel offsets of one input channel in row-major order:
// acc = fmaf(xv, wc[kk], acc) with xv = xc at base + kk*dilation per axis, +0 outside the input.
// The seven leading kernel axes advance as an odometer, the last one is the inner loop.
__device__ __forceinline__ float conv_patch_dot(float acc, const float* __restrict__ xc,
                                                const float* __restrict__ wc, const int* sg,
                                                const long long (&base)[8], u64 kProd) {
  int kc[7];
#pragma unroll
  for (int d = 0; d < 7; d++) kc[d] = 0;
  const int k7 = G_K(7), d7 = G_D(7), in7 = G_IN(7);
  const u64 kOuter = kProd / (u64)k7;
  u64 wi = 0;
  for (u64 t = 0; t < kOuter; t++) {
    long long off = 0;
    bool ok = true;
#pragma unroll
    for (int d = 0; d < 7; d++) {
      const long long i = base[d] + (long long)kc[d] * G_D(d);
      ok = ok && i >= 0 && i < G_IN(d);
      off = off * G_IN(d) + i;
    }
    off *= in7;
    long long i7 = base[7];
    for (int j = 0; j < k7; j++, wi++, i7 += d7) {
      float v = 0.0f;
      if (ok && i7 >= 0 && i7 < in7) v = xc[off + i7];
      acc = __fmaf_rn(v, wc[wi], acc);
    }
#pragma unroll
    for (int d = 6; d >= 0; d--) {
      if (++kc[d] < G_K(d)) break;
      kc[d] = 0;
    }
  }
  return acc;
}

extern "C" __global__ void conv_fwd(float* __restrict__ y, const float* __restrict__ x,
                                    const float* __restrict__ w, const float* __restrict__ bias,
                                    const u32* __restrict__ geom, u64 batch, u64 cin, u64 cout,
                                    u64 groups, u64 inProd, u64 outProd, u64 kProd, u64 hasBias) {
  __shared__ int sg[CONV_GEOM_LEN];
  conv_geom_load(sg, geom);
  const u64 cing = cin / groups, coutg = cout / groups;
  TL_FOR(u, batch * cout * outProd) {
    const u64 nc = u / outProd, co = nc % cout, n = nc / cout;
    const u64 grp = co / coutg;
    long long base[8];
    u64 r = u - nc * outProd;
#pragma unroll
    for (int d = 7; d >= 0; d--) {
      const u64 od = r % (u64)G_OUT(d);
      r /= (u64)G_OUT(d);
      base[d] = (long long)od * G_S(d) - G_P(d);
    }
    float acc = 0.0f;
    for (u64 c = 0; c < cing; c++) {
      const float* xc = x + (n * cin + grp * cing + c) * inProd;
      const float* wc = w + (co * cing + c) * kProd;
      acc = conv_patch_dot(acc, xc, wc, sg, base, kProd);
    }
    if (hasBias) acc = __fadd_rn(acc, bias[co]);
    y[u] = acc;
  }
}

extern "C" __global__ void conv_bwd_input(float* __restrict__ dx, const float* __restrict__ dy,
                                          const float* __restrict__ w, const float* __restrict__ bias,
                                          const u32* __restrict__ geom, u64 batch, u64 cin, u64 cout,
                                          u64 groups, u64 inProd, u64 outProd, u64 kProd,
                                          u64 hasBias) {
  __shared__ int sg[CONV_GEOM_LEN];
  conv_geom_load(sg, geom);
  const u64 cing = cin / groups, coutg = cout / groups;
  TL_FOR(u, batch * cin * inProd) {
    const u64 nc = u / inProd, ci = nc % cin, n = nc / cin;
    const u64 grp = ci / cing, cil = ci - grp * cing;
    long long top[8];  // i + padding per axis
    u64 r = u - nc * inProd;
#pragma unroll
    for (int d = 7; d >= 0; d--) {
      const u64 id = r % (u64)G_IN(d);
      r /= (u64)G_IN(d);
      top[d] = (long long)id + G_P(d);
    }
    float acc = 0.0f;
    for (u64 co = grp * coutg; co < (grp + 1) * coutg; co++) {
      const float* dyc = dy + (n * cout + co) * outProd;
      const float* wc = w + (co * cing + cil) * kProd;
      int kc[8];
#pragma unroll
      for (int d = 0; d < 8; d++) kc[d] = 0;
      for (u64 kk = 0; kk < kProd; kk++) {
        bool take = true, ok = true;
        long long off = 0;
#pragma unroll
        for (int d = 0; d < 8; d++) {
          const long long t = top[d] - (long long)kc[d] * G_D(d);
          const long long q = t / G_S(d);
          take = take && q * G_S(d) == t;
          ok = ok && t >= 0 && q < G_OUT(d);
          off = off * G_OUT(d) + q;
        }
        if (take) {
          const float v = ok ? dyc[off] : 0.0f;
          acc = __fmaf_rn(v, wc[kk], acc);
        }
#pragma unroll
        for (int d = 7; d >= 0; d--) {
          if (++kc[d] < G_K(d)) break;
          kc[d] = 0;
        }
      }
    }
    if (hasBias) acc = __fadd_rn(acc, bias[ci]);
    dx[u] = acc;
  }
}

extern "C" __global__ void conv_bwd_weight(float* __restrict__ dw, const float* __restrict__ x,
                                           const float* __restrict__ dy, const u32* __restrict__ geom,
                                           u64 batch, u64 cin, u64 cout, u64 groups, u64 inProd,
                                           u64 outProd, u64 kProd) {
  __shared__ int sg[CONV_GEOM_LEN];
  conv_geom_load(sg, geom);
  const u64 cing = cin / groups, coutg = cout / groups;
  TL_FOR(u, cout * cing * kProd) {
    const u64 cc = u / kProd, c = cc % cing, co = cc / cing;
    const u64 grp = co / coutg;
    long long koff[8];  // kk * dilation - padding per axis
    u64 r = u - cc * kProd;
#pragma unroll
    for (int d = 7; d >= 0; d--) {
      const u64 kd = r % (u64)G_K(d);
      r /= (u64)G_K(d);
      koff[d] = (long long)kd * G_D(d) - G_P(d);
    }
    const int o7n = G_OUT(7), s7 = G_S(7), in7 = G_IN(7);
    const u64 oOuter = outProd / (u64)o7n;
    float acc = 0.0f;
    for (u64 n = 0; n < batch; n++) {
      const float* xc = x + (n * cin + grp * cing + c) * inProd;
      const float* dyc = dy + (n * cout + co) * outProd;
      int oc[7];
#pragma unroll
      for (int d = 0; d < 7; d++) oc[d] = 0;
      u64 oi = 0;
      for (u64 t = 0; t < oOuter; t++) {
        long long off = 0;
        bool ok = true;
#pragma unroll
        for (int d = 0; d < 7; d++) {
          const long long i = (long long)oc[d] * G_S(d) + koff[d];
          ok = ok && i >= 0 && i < G_IN(d);
          off = off * G_IN(d) + i;
        }
        off *= in7;
        long long i7 = koff[7];
        for (int j = 0; j < o7n; j++, oi++, i7 += s7) {
          float v = 0.0f;
          if (ok && i7 >= 0 && i7 < in7) v = xc[off + i7];
          acc = __fmaf_rn(dyc[oi], v, acc);
        }
#pragma unroll
        for (int d = 6; d >= 0; d--) {
          if (++oc[d] < G_OUT(d)) break;
          oc[d] = 0;
        }
      }
    }
    dw[u] = acc;
  }
}

extern "C" __global__ void conv_bwd_bias(float* __restrict__ db, const float* __restrict__ dy,
                                         u64 batch, u64 cout, u64 outProd) {
  TL_FOR(co, cout) {
    float acc = 0.0f;
    for (u64 n = 0; n < batch; n++) {
      const float* dyc = dy + (n * cout + co) * outProd;
      for (u64 o = 0; o < outProd; o++) acc = __fadd_rn(acc, dyc[o]);
    }
    db[co] = acc;
  }
}
