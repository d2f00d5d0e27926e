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
// conv_fwd, conv_bwd_input and conv_bwd_weight are direct kernels (one thread per output, its K
// loop sequential, the geometry in shared memory); conv_fwd_tile, conv_bwd_input_tile and
// conv_bwd_weight_tile (below) compute the same sums, term for term, as tiled implicit GEMMs.
// ops picks one or the other from the sizes alone (ops.convTileFwd and its siblings).
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

// ---- tiled implicit-GEMM kernels ----
//
// conv_fwd_tile, conv_bwd_input_tile and conv_bwd_weight_tile compute exactly the sums of
// conv_fwd, conv_bwd_input and conv_bwd_weight above (same parameters, same terms in the same
// order, one fma each from +0, the bias added last), as implicit GEMMs on FFMA register tiles:
//
//   conv_fwd_tile: per group, C (rows = (n, o) row-major, columns = the group's output
//     channels) = A · B with K = (c, kk): A(row, k) = x at o*stride - padding + kk*dilation in
//     channel c (+0 on padding: a term, as in conv_fwd), B(k, co) = w[co][c][kk].
//   conv_bwd_input_tile: the rows split by residue class (i mod stride on every axis); within a
//     class the offsets passing the stride test are the same for every row, so K = (co, the
//     class's valid kk in row-major order) and the offsets failing the test are no terms at
//     all. A(row, k) = dY at (i + padding - kk*dilation)/stride (+0 past dY's edges, a term),
//     B(k, ci) = w[co][ci][kk]. A class with no valid offset gives +0 (+ bias).
//   conv_bwd_weight_tile: per group, C (rows = output channels, columns = (c, kk)) = A · B with
//     K = (n, o) (batch ascending, then output positions row-major): A(co, k) = dY[n][co][o],
//     B(k, (c, kk)) = conv_fwd's operand x (+0 on padding).
//
// A block computes a BM x BN tile of C, its threads a TM x TN register tile each (4 x 4 pieces
// SA rows and SB columns apart, read from shared memory as 16-byte vectors); K advances in steps
// of BK, the operands gathered from global memory (no im2col buffer) into registers one step
// ahead, stored k-major into double-buffered shared tiles (one barrier per step). The last,
// partial step runs only its k < K terms, so every output's sum is exactly its kernel's chain:
// acc = fmaf(a_k, b_k, acc) for k ascending, never a padding term of the tiling, no split-K.
// Rows and columns past the problem load clamped (in-range) operands and are never stored.
//
// They need (ops checks it, sizes only): the five leading geometry axes trivial (spatial rank
// <= 3), kProd <= CT_KMAX, every spatial index and K below 2^30 as 32-bit ints (see
// ops.convGeom.tileFits); the grid is any number of blocks of exactly NT threads, each walking the
// tiles grid-stride. Tile orders and sizes change no bit: each output's sum is fixed by the
// geometry alone.
#define CT_KMAX 512
#define CT_PAD 4
// conv_fwd_tile and conv_bwd_input_tile: 128 x 64 tiles, K steps of 8, 8 x 8 per thread
// (128 threads).
#define CT_X_BM 128
#define CT_X_BN 64
#define CT_X_BK 8
#define CT_X_TM 8
#define CT_X_TN 8
// conv_bwd_weight_tile: 32 x 32 tiles, K steps of 16, 4 x 4 per thread (64 threads): few
// outputs with long sums, so small tiles for more owners.
#define CT_W_BM 32
#define CT_W_BN 32
#define CT_W_BK 16
#define CT_W_TM 4
#define CT_W_TN 4

// ct_steps runs the K steps kk < BK (kk < kc when PARTIAL) of a thread's register tile: as
// and bs point at the thread's first row and column of the k-major shared tiles.
template <bool PARTIAL, int BK, int LDA, int LDB, int TM, int TN, int SA, int SB>
__device__ __forceinline__ void ct_steps(float (&acc)[TM][TN], const float* as, const float* bs,
                                         int kc) {
#pragma unroll
  for (int kk = 0; kk < BK; kk++) {
    if (PARTIAL && kk >= kc) break;
    float a[TM], b[TN];
#pragma unroll
    for (int i = 0; i < TM / 4; i++) {
      const float4 v = *reinterpret_cast<const float4*>(as + kk * LDA + i * SA);
      a[4 * i + 0] = v.x;
      a[4 * i + 1] = v.y;
      a[4 * i + 2] = v.z;
      a[4 * i + 3] = v.w;
    }
#pragma unroll
    for (int j = 0; j < TN / 4; j++) {
      const float4 v = *reinterpret_cast<const float4*>(bs + kk * LDB + j * SB);
      b[4 * j + 0] = v.x;
      b[4 * j + 1] = v.y;
      b[4 * j + 2] = v.z;
      b[4 * j + 3] = v.w;
    }
#pragma unroll
    for (int i = 0; i < TM; i++)
#pragma unroll
      for (int j = 0; j < TN; j++) acc[i][j] = __fmaf_rn(a[i], b[j], acc[i][j]);
  }
}

// ct_run walks the tiles g = blockIdx.x, + gridDim.x, ... of problem P (P::total of them):
// P::begin(g) sets the tile up (uniform over the block; it may use barriers) and returns its K,
// or -1 for a tile with no rows; P::load gathers the K step at k0 into registers (k >= K not
// read), P::store puts them into shared tiles, P::epilogue writes the thread's outputs.
template <class P>
__device__ __forceinline__ void ct_run(P& p, float* sA, float* sB) {
  constexpr int BM = P::BM, BN = P::BN, BK = P::BK, TM = P::TM, TN = P::TN;
  constexpr int LDA = BM + CT_PAD, LDB = BN + CT_PAD;
  constexpr int SA = (BM / TM) * 4, SB = (BN / TN) * 4;
  const int t = threadIdx.x;
  const int rt = (t / (BN / TN)) * 4, ct = (t % (BN / TN)) * 4;
  for (u64 g = blockIdx.x; g < p.total; g += gridDim.x) {
    __syncthreads();  // the previous tile's shared reads are done
    const int K = p.begin(g);
    if (K < 0) continue;
    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; i++)
#pragma unroll
      for (int j = 0; j < TN; j++) acc[i][j] = 0.0f;
    const int ksteps = (K + BK - 1) / BK;
    if (ksteps > 0) {
      float ra[P::EA], rb[P::EB];
      p.load(ra, rb, 0, K);
      p.store(sA, sB, ra, rb);
      __syncthreads();
      int buf = 0;
      for (int s = 0; s < ksteps; s++) {
        const bool more = s + 1 < ksteps;
        if (more) p.load(ra, rb, (s + 1) * BK, K);
        const float* as = sA + buf * (BK * LDA) + rt;
        const float* bs = sB + buf * (BK * LDB) + ct;
        const int kc = K - s * BK;
        if (kc >= BK)
          ct_steps<false, BK, LDA, LDB, TM, TN, SA, SB>(acc, as, bs, BK);
        else
          ct_steps<true, BK, LDA, LDB, TM, TN, SA, SB>(acc, as, bs, kc);
        if (more) {
          buf ^= 1;
          p.store(sA + buf * (BK * LDA), sB + buf * (BK * LDB), ra, rb);
          __syncthreads();
        }
      }
    }
    p.epilogue(acc, rt, ct);
  }
}

// CtTable: a K step's inner index v (a kernel offset, or a class's v-th valid offset) as the
// source position's offset per axis (off), their flattened sum (delta, in the source's sizes)
// and the weight's offset index (wk).
struct CtTable {
  int off[3][CT_KMAX];
  int delta[CT_KMAX];
  int wk[CT_KMAX];
};

// CtX is conv_fwd_tile (BWD false) and conv_bwd_input_tile (BWD true): rows = (n, position),
// columns = the group's destination channels, K = (source channel, v).
template <bool BWD>
struct CtX {
  static constexpr int BM = CT_X_BM, BN = CT_X_BN, BK = CT_X_BK, TM = CT_X_TM, TN = CT_X_TN;
  static constexpr int NT = (BM / TM) * (BN / TN);
  static constexpr int EA = BK;            // A: a thread loads one row, every k of a step
  static constexpr int EB = BN * BK / NT;  // B: one k, EB columns
  static_assert(NT == BM && EB * (NT / BK) == BN, "loader layout");

  float* dst;
  const float *src, *w, *bias;
  const int* sg;
  CtTable* tb;
  int* ax;  // BWD: per axis, the class's valid kernel offsets, then their source offsets
  int hasBias;
  u64 total;
  int batch, cin, cout, cing, coutg, groups, kProd;
  u32 tilesM, tilesN;
  int lim[3], mul[3];  // source sizes and row-coordinate multipliers per axis (5, 6, 7)
  u64 srcProd, dstProd;
  int cls;             // BWD: the class whose table is loaded (-1: none)
  int f[3], cnt[3];    // BWD: the class's first index and row count per axis
  int Kv, Cg, Ccols;   // valid offsets per channel, source channels, destination channels
  // the tile
  int grp;
  u64 row0, rows;
  int col0;
  // the thread's A row and B columns
  int rowp[3], rowSp;
  const float* img;
  const float* wcol[EB];
  u64 wChStride;

  __device__ __forceinline__ void init(float* d, const float* s, const float* ww, const float* b,
                                       const int* g_, CtTable* t_, int* a_, u64 nb, u64 ci,
                                       u64 co, u64 gr, u64 inProd, u64 outProd, u64 kp, u64 hb) {
    dst = d;
    src = s;
    w = ww;
    bias = b;
    sg = g_;
    tb = t_;
    ax = a_;
    hasBias = hb != 0;
    batch = (int)nb;
    cin = (int)ci;
    cout = (int)co;
    groups = (int)gr;
    kProd = (int)kp;
    cing = cin / groups;
    coutg = cout / groups;
    cls = -1;
    tilesN = (u32)(((BWD ? cing : coutg) + BN - 1) / BN);
    u64 perImg = 1;
    u64 classes = 1;
#pragma unroll
    for (int a = 0; a < 3; a++) {
      if (BWD) {
        lim[a] = G_OUT(5 + a);
        mul[a] = 1;
        perImg *= (u64)((G_IN(5 + a) + G_S(5 + a) - 1) / G_S(5 + a));
        classes *= (u64)G_S(5 + a);
      } else {
        lim[a] = G_IN(5 + a);
        mul[a] = G_S(5 + a);
      }
    }
    if (!BWD) perImg = outProd;
    tilesM = (u32)((nb * perImg + BM - 1) / BM);
    total = classes * (u64)groups * tilesM * tilesN;
    srcProd = BWD ? outProd : inProd;
    dstProd = BWD ? inProd : outProd;
    Cg = BWD ? coutg : cing;
    Ccols = BWD ? cing : coutg;
    wChStride = BWD ? (u64)cing * kProd : (u64)kProd;
    if (!BWD) {  // the forward's table, for every tile: v = kk, offsets kk*dilation - padding
      Kv = kProd;
      for (int v = threadIdx.x; v < kProd; v += NT) {
        int r = v;
        const int k7 = r % G_K(7);
        r /= G_K(7);
        const int k6 = r % G_K(6);
        const int k5 = r / G_K(6);
        const int o5 = k5 * G_D(5) - G_P(5), o6 = k6 * G_D(6) - G_P(6), o7 = k7 * G_D(7) - G_P(7);
        tb->off[0][v] = o5;
        tb->off[1][v] = o6;
        tb->off[2][v] = o7;
        tb->delta[v] = (o5 * lim[1] + o6) * lim[2] + o7;
        tb->wk[v] = v;
      }
    }
  }

  // class_table loads the table of class c (BWD): per axis a, the offsets kk_a whose
  // (f_a + padding_a - kk_a*dilation_a) is a multiple of stride_a, ascending, with the quotient
  // as the source offset; the class's entries are their row-major product.
  __device__ __forceinline__ void class_table(int c) {
    const int s6 = G_S(6), s7 = G_S(7);
    f[0] = c / (s6 * s7);
    f[1] = (c / s7) % s6;
    f[2] = c % s7;
#pragma unroll
    for (int a = 0; a < 3; a++) {
      const int in = G_IN(5 + a), s = G_S(5 + a);
      cnt[a] = in > f[a] ? (in - f[a] + s - 1) / s : 0;
    }
    const int t = threadIdx.x;
    if (t < 3) {
      const int ft = t == 0 ? f[0] : (t == 1 ? f[1] : f[2]);  // no dynamic index into f
      const int s = G_S(5 + t), d = G_D(5 + t), top = ft + G_P(5 + t);
      int n = 0;
      for (int kk = 0; kk < G_K(5 + t); kk++) {
        const int num = top - kk * d;
        if (num % s == 0) {
          ax[(2 * t) * CT_KMAX + n] = kk;
          ax[(2 * t + 1) * CT_KMAX + n] = num / s;
          n++;
        }
      }
      ax[6 * CT_KMAX + t] = n;
    }
    __syncthreads();
    const int n5 = ax[6 * CT_KMAX], n6 = ax[6 * CT_KMAX + 1], n7 = ax[6 * CT_KMAX + 2];
    Kv = n5 * n6 * n7;
    for (int v = t; v < Kv; v += NT) {
      const int i7 = v % n7, i6 = (v / n7) % n6, i5 = v / (n7 * n6);
      const int o5 = ax[1 * CT_KMAX + i5], o6 = ax[3 * CT_KMAX + i6], o7 = ax[5 * CT_KMAX + i7];
      tb->off[0][v] = o5;
      tb->off[1][v] = o6;
      tb->off[2][v] = o7;
      tb->delta[v] = (o5 * lim[1] + o6) * lim[2] + o7;
      tb->wk[v] = (ax[0 * CT_KMAX + i5] * G_K(6) + ax[2 * CT_KMAX + i6]) * G_K(7) +
                  ax[4 * CT_KMAX + i7];
    }
    __syncthreads();
    cls = c;
  }

  // row_coords: the row-major coordinates per axis of position q of an image (BWD: within
  // the class).
  __device__ __forceinline__ void row_coords(int (&rc)[3], int q) const {
    const int c6 = BWD ? cnt[1] : G_OUT(6), c7 = BWD ? cnt[2] : G_OUT(7);
    rc[2] = q % c7;
    q /= c7;
    rc[1] = q % c6;
    rc[0] = q / c6;
  }

  __device__ __forceinline__ int begin(u64 g) {
    const u32 tn = (u32)(g % tilesN);
    u64 r = g / tilesN;
    const u32 tm = (u32)(r % tilesM);
    r /= tilesM;
    grp = (int)(r % (u64)groups);
    if (BWD) {
      const int c = (int)(r / (u64)groups);
      if (c != cls) class_table(c);
    }
    const u64 perImg = BWD ? (u64)cnt[0] * cnt[1] * cnt[2] : dstProd;
    rows = (u64)batch * perImg;
    row0 = (u64)tm * BM;
    if (row0 >= rows) return -1;
    col0 = (int)tn * BN;
    // the thread's A row (clamped)
    const int t = threadIdx.x;
    u64 row = row0 + t;
    if (row >= rows) row = rows - 1;
    const u64 n = row / perImg;
    int rc[3];
    row_coords(rc, (int)(row - n * perImg));
#pragma unroll
    for (int a = 0; a < 3; a++) rowp[a] = rc[a] * mul[a];
    rowSp = (rowp[0] * lim[1] + rowp[1]) * lim[2] + rowp[2];
    img = src + ((u64)n * (BWD ? cout : cin) + (u64)grp * Cg) * srcProd;
    // the thread's B columns (clamped)
    const u64 wg = (u64)grp * coutg * cing * kProd;
    const u64 colStride = BWD ? (u64)kProd : (u64)cing * kProd;
#pragma unroll
    for (int j = 0; j < EB; j++) {
      int col = col0 + (t / BK) * EB + j;
      if (col >= Ccols) col = Ccols - 1;
      wcol[j] = w + wg + (u64)col * colStride;
    }
    return Cg * Kv;
  }

  __device__ __forceinline__ void load(float (&ra)[EA], float (&rb)[EB], int k0, int K) const {
    // A: the thread's row, k0 .. k0+BK-1 (uniform over the block)
    int ch = k0 / Kv, v = k0 - ch * Kv;
    const float* chp = img + (u64)ch * srcProd;
#pragma unroll
    for (int j = 0; j < EA; j++) {
      float x = 0.0f;
      if (k0 + j < K) {
        const int p0 = rowp[0] + tb->off[0][v], p1 = rowp[1] + tb->off[1][v],
                  p2 = rowp[2] + tb->off[2][v];
        if ((unsigned)p0 < (unsigned)lim[0] && (unsigned)p1 < (unsigned)lim[1] &&
            (unsigned)p2 < (unsigned)lim[2])
          x = __ldg(chp + (int)((unsigned)rowSp + (unsigned)tb->delta[v]));
        if (++v == Kv) {
          v = 0;
          chp += srcProd;
        }
      }
      ra[j] = x;
    }
    // B: one k, EB columns
    const int k = k0 + (int)threadIdx.x % BK;
    if (k < K) {
      const int c2 = k / Kv, v2 = k - c2 * Kv;
      const u64 off = (u64)c2 * wChStride + (u64)tb->wk[v2];
#pragma unroll
      for (int j = 0; j < EB; j++) rb[j] = __ldg(wcol[j] + off);
    } else {
#pragma unroll
      for (int j = 0; j < EB; j++) rb[j] = 0.0f;
    }
  }

  __device__ __forceinline__ void store(float* sa, float* sb, const float (&ra)[EA],
                                        const float (&rb)[EB]) const {
    const int t = threadIdx.x;
#pragma unroll
    for (int j = 0; j < EA; j++) sa[j * (BM + CT_PAD) + t] = ra[j];
#pragma unroll
    for (int j = 0; j < EB; j++) sb[(t % BK) * (BN + CT_PAD) + (t / BK) * EB + j] = rb[j];
  }

  __device__ __forceinline__ void epilogue(float (&acc)[TM][TN], int rt, int ct) const {
    constexpr int SA = (BM / TM) * 4, SB = (BN / TN) * 4;
    const u64 perImg = rows / (u64)batch;
    const int dstCh = BWD ? cin : cout;
#pragma unroll
    for (int i = 0; i < TM; i++) {
      const u64 row = row0 + rt + (i / 4) * SA + (i % 4);
      if (row >= rows) continue;
      const u64 n = row / perImg;
      const int q = (int)(row - n * perImg);
      u64 pos = (u64)q;
      if (BWD) {
        int rc[3];
        row_coords(rc, q);
        const int i5 = f[0] + rc[0] * G_S(5), i6 = f[1] + rc[1] * G_S(6),
                  i7 = f[2] + rc[2] * G_S(7);
        pos = ((u64)i5 * G_IN(6) + i6) * G_IN(7) + i7;
      }
      float* d = dst + ((u64)n * dstCh + (u64)grp * Ccols) * dstProd + pos;
#pragma unroll
      for (int j = 0; j < TN; j++) {
        const int col = col0 + ct + (j / 4) * SB + (j % 4);
        if (col < Ccols) {
          float v = acc[i][j];
          if (hasBias) v = __fadd_rn(v, bias[grp * Ccols + col]);
          d[(u64)col * dstProd] = v;
        }
      }
    }
  }
};

// CtW is conv_bwd_weight_tile: rows = the group's output channels, columns = (c, kk),
// K = (n, o).
struct CtW {
  static constexpr int BM = CT_W_BM, BN = CT_W_BN, BK = CT_W_BK, TM = CT_W_TM, TN = CT_W_TN;
  static constexpr int NT = (BM / TM) * (BN / TN);
  static constexpr int EA = BM * BK / NT;  // one k, EA rows
  static constexpr int EB = BN * BK / NT;  // one k, EB columns
  static_assert(EA * (NT / BK) == BM && EB * (NT / BK) == BN, "loader layout");

  float* dw;
  const float *x, *dy;
  const int* sg;
  int* ct;  // per tile column: off[3][BN], delta[BN], then channel offsets as u64 (2 ints each)
  u64 total;
  int batch, cin, cout, cing, coutg, groups, kProd, cols, outProd, K;
  u32 tilesM, tilesN;
  u64 inProd;
  int grp, row0, col0;

  __device__ __forceinline__ void init(float* d, const float* xx, const float* yy, const int* g_,
                                       int* c_, u64 nb, u64 ci, u64 co, u64 gr, u64 ip, u64 op,
                                       u64 kp) {
    dw = d;
    x = xx;
    dy = yy;
    sg = g_;
    ct = c_;
    batch = (int)nb;
    cin = (int)ci;
    cout = (int)co;
    groups = (int)gr;
    kProd = (int)kp;
    cing = cin / groups;
    coutg = cout / groups;
    cols = cing * kProd;
    inProd = ip;
    outProd = (int)op;
    K = batch * outProd;
    tilesM = (u32)((coutg + BM - 1) / BM);
    tilesN = (u32)((cols + BN - 1) / BN);
    total = (u64)groups * tilesM * tilesN;
  }

  __device__ __forceinline__ int begin(u64 g) {
    const u32 tn = (u32)(g % tilesN);
    const u64 r = g / tilesN;
    const u32 tm = (u32)(r % tilesM);
    grp = (int)(r / tilesM);
    row0 = (int)tm * BM;
    col0 = (int)tn * BN;
    const int t = threadIdx.x;
    if (t < BN) {  // the tile's columns (clamped): c, then kk's offsets kk*dilation - padding
      int col = col0 + t;
      if (col >= cols) col = cols - 1;
      const int c = col / kProd;
      int kk = col - c * kProd;
      const int k7 = kk % G_K(7);
      kk /= G_K(7);
      const int k6 = kk % G_K(6), k5 = kk / G_K(6);
      const int o5 = k5 * G_D(5) - G_P(5), o6 = k6 * G_D(6) - G_P(6), o7 = k7 * G_D(7) - G_P(7);
      ct[t] = o5;
      ct[BN + t] = o6;
      ct[2 * BN + t] = o7;
      ct[3 * BN + t] = (o5 * G_IN(6) + o6) * G_IN(7) + o7;
      reinterpret_cast<u64*>(ct + 4 * BN)[t] = (u64)c * inProd;
    }
    __syncthreads();
    return K;
  }

  __device__ __forceinline__ void load(float (&ra)[EA], float (&rb)[EB], int k0, int K_) const {
    const int t = threadIdx.x;
    const int k = k0 + t % BK;
    if (k >= K_) {
#pragma unroll
      for (int j = 0; j < EA; j++) ra[j] = 0.0f;
#pragma unroll
      for (int j = 0; j < EB; j++) rb[j] = 0.0f;
      return;
    }
    const int n = k / outProd, o = k - n * outProd;
    // A: dY[n][grp*coutg + row][o] for the thread's EA rows (clamped)
    const float* dyn = dy + ((u64)n * cout + (u64)grp * coutg) * (u64)outProd + o;
#pragma unroll
    for (int j = 0; j < EA; j++) {
      int row = row0 + (t / BK) * EA + j;
      if (row >= coutg) row = coutg - 1;
      ra[j] = __ldg(dyn + (u64)row * outProd);
    }
    // B: x at o*stride + kk*dilation - padding in channel c, +0 on padding
    const int o7 = o % G_OUT(7), q = o / G_OUT(7);
    const int o6 = q % G_OUT(6), o5 = q / G_OUT(6);
    const int p5 = o5 * G_S(5), p6 = o6 * G_S(6), p7 = o7 * G_S(7);
    const int rowSp = (p5 * G_IN(6) + p6) * G_IN(7) + p7;
    const float* xn = x + ((u64)n * cin + (u64)grp * cing) * inProd;
    const u64* chOff = reinterpret_cast<const u64*>(ct + 4 * BN);
#pragma unroll
    for (int j = 0; j < EB; j++) {
      const int c = (t / BK) * EB + j;
      const int i5 = p5 + ct[c], i6 = p6 + ct[BN + c], i7 = p7 + ct[2 * BN + c];
      float v = 0.0f;
      if ((unsigned)i5 < (unsigned)G_IN(5) && (unsigned)i6 < (unsigned)G_IN(6) &&
          (unsigned)i7 < (unsigned)G_IN(7))
        v = __ldg(xn + chOff[c] + (u64)(int)((unsigned)rowSp + (unsigned)ct[3 * BN + c]));
      rb[j] = v;
    }
  }

  __device__ __forceinline__ void store(float* sa, float* sb, const float (&ra)[EA],
                                        const float (&rb)[EB]) const {
    const int t = threadIdx.x;
#pragma unroll
    for (int j = 0; j < EA; j++) sa[(t % BK) * (BM + CT_PAD) + (t / BK) * EA + j] = ra[j];
#pragma unroll
    for (int j = 0; j < EB; j++) sb[(t % BK) * (BN + CT_PAD) + (t / BK) * EB + j] = rb[j];
  }

  __device__ __forceinline__ void epilogue(float (&acc)[TM][TN], int rt, int ct_) const {
    constexpr int SA = (BM / TM) * 4, SB = (BN / TN) * 4;
#pragma unroll
    for (int i = 0; i < TM; i++) {
      const int row = row0 + rt + (i / 4) * SA + (i % 4);
      if (row >= coutg) continue;
      float* d = dw + ((u64)grp * coutg + row) * (u64)cols;
#pragma unroll
      for (int j = 0; j < TN; j++) {
        const int col = col0 + ct_ + (j / 4) * SB + (j % 4);
        if (col < cols) d[col] = acc[i][j];
      }
    }
  }
};

#define CT_X_NT ((CT_X_BM / CT_X_TM) * (CT_X_BN / CT_X_TN))
#define CT_W_NT ((CT_W_BM / CT_W_TM) * (CT_W_BN / CT_W_TN))

extern "C" __global__ void __launch_bounds__(CT_X_NT)
    conv_fwd_tile(float* __restrict__ y, const float* __restrict__ x, const float* __restrict__ w,
                  const float* __restrict__ bias, const u32* __restrict__ geom, u64 batch, u64 cin,
                  u64 cout, u64 groups, u64 inProd, u64 outProd, u64 kProd, u64 hasBias) {
  __shared__ int sg[CONV_GEOM_LEN];
  __shared__ __align__(16) float sA[2 * CT_X_BK * (CT_X_BM + CT_PAD)];
  __shared__ __align__(16) float sB[2 * CT_X_BK * (CT_X_BN + CT_PAD)];
  __shared__ CtTable tb;
  conv_geom_load(sg, geom);
  CtX<false> p;
  p.init(y, x, w, bias, sg, &tb, nullptr, batch, cin, cout, groups, inProd, outProd, kProd,
         hasBias);
  ct_run(p, sA, sB);
}

extern "C" __global__ void __launch_bounds__(CT_X_NT)
    conv_bwd_input_tile(float* __restrict__ dx, const float* __restrict__ dy,
                        const float* __restrict__ w, const float* __restrict__ bias,
                        const u32* __restrict__ geom, u64 batch, u64 cin, u64 cout, u64 groups,
                        u64 inProd, u64 outProd, u64 kProd, u64 hasBias) {
  __shared__ int sg[CONV_GEOM_LEN];
  __shared__ __align__(16) float sA[2 * CT_X_BK * (CT_X_BM + CT_PAD)];
  __shared__ __align__(16) float sB[2 * CT_X_BK * (CT_X_BN + CT_PAD)];
  __shared__ CtTable tb;
  __shared__ int ax[6 * CT_KMAX + 3];
  conv_geom_load(sg, geom);
  CtX<true> p;
  p.init(dx, dy, w, bias, sg, &tb, ax, batch, cin, cout, groups, inProd, outProd, kProd, hasBias);
  ct_run(p, sA, sB);
}

extern "C" __global__ void __launch_bounds__(CT_W_NT)
    conv_bwd_weight_tile(float* __restrict__ dw, const float* __restrict__ x,
                         const float* __restrict__ dy, const u32* __restrict__ geom, u64 batch,
                         u64 cin, u64 cout, u64 groups, u64 inProd, u64 outProd, u64 kProd) {
  __shared__ int sg[CONV_GEOM_LEN];
  __shared__ __align__(16) float sA[2 * CT_W_BK * (CT_W_BM + CT_PAD)];
  __shared__ __align__(16) float sB[2 * CT_W_BK * (CT_W_BN + CT_PAD)];
  __shared__ __align__(16) int sc[6 * CT_W_BN];
  conv_geom_load(sg, geom);
  CtW p;
  p.init(dw, x, dy, sg, sc, batch, cin, cout, groups, inProd, outProd, kProd);
  ct_run(p, sA, sB);
}
