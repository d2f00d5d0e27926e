// attention.cu: tiled (flash) attention, forward and backward, with no nq x nk buffer. Q is
// (bh, nq, d), K and V (bh, nk, d), row-major; O (bh, nq, d) and the row log-sum-exp LSE (bh, nq).
// The arithmetic (scores, the online softmax over key blocks of att_bc(d) columns, the backward
// terms and every order of accumulation) is stated in the twins' doc comments (cpu/attention.go);
// every block size here other than att_bc is a launch choice that changes no bit. Blocks of 256
// threads, grid-stride over (sequence, tile) work items; one owner per output element (no
// atomics). Products and sums are rounded separately (gen.sh compiles with --fmad=false).
#include "common.cuh"
#include "f32math.cuh"

#define ATT_THREADS 256
#define ATT_MAX_D 256
// Flags (cpu.AttnFill, AttnHard, AttnCausal).
#define ATT_FILL 1
#define ATT_HARD 2
#define ATT_CAUSAL 4
// The score of a filled entry (the seeds' -1000.0, unscaled).
#define ATT_FILL_SCORE -1000.0f
// Arithmetic: the forward's key blocks for d <= 64, <= 128, <= 256 (cpu.AttnKeyBlock).
#define ATT_BC_64 64
#define ATT_BC_128 32
#define ATT_BC_256 16
// Launch: the forward's query rows per tile, and the backward's tile of rows and keys.
#define ATT_FWD_BR_64 32
#define ATT_FWD_BR_128 32
#define ATT_FWD_BR_256 16
#define ATT_BWD_T_64 32
#define ATT_BWD_T_128 16
#define ATT_BWD_T_256 8
// Shared floats of the largest configuration of each pass (checked by the static asserts).
#define ATT_FWD_SMEM 9248
#define ATT_BWD_SMEM 10368

#define ATT_NORMAL 0
#define ATT_FILLED 1
#define ATT_EXCLUDED 2

// att_status is cpu's attnStatus: mrow is the mask row of query i (unused without a mask flag).
__device__ __forceinline__ int att_status(const float* mrow, u64 i, u64 j, u32 flags) {
  if ((flags & ATT_CAUSAL) && j > i) return ATT_EXCLUDED;
  if ((flags & (ATT_FILL | ATT_HARD)) && mrow[j] == 0.0f) return (flags & ATT_HARD) ? ATT_EXCLUDED : ATT_FILLED;
  return ATT_NORMAL;
}

// att_dot is cpu's attnDot: ascending from +0, each product rounded, then the sum. DK > 0 is the
// fast path of a head dimension known at compile time (d == DK): the loop unrolled, the same
// operations in the same order (no reassociation without fast-math), so the same bits.
template <int DK>
__device__ __forceinline__ float att_dot(const float* a, const float* b, int d) {
  const int n = DK > 0 ? DK : d;
  float acc = 0.0f;
#pragma unroll(DK > 0 ? 16 : 1)
  for (int c = 0; c < n; c++) acc = acc + a[c] * b[c];
  return acc;
}

__device__ __forceinline__ const float* att_mask_row(const float* mask, u64 b, u64 i, u64 nk, u64 mstride,
                                                     u32 flags) {
  return (flags & (ATT_FILL | ATT_HARD)) ? mask + b * mstride + i * nk : mask;
}

// Forward, tiles of BR query rows against key blocks of BC keys, head dims up to D. Shared: the
// Q tile (BR x d), the K then V block (BC x (d+1), padded against bank conflicts), the scores
// then probabilities (BR x BC), their statuses, and the row state m, l, alpha.
template <int BC, int BR, int D, int DK>
__device__ __forceinline__ void att_fwd(float* o, float* lse, const float* q, const float* k, const float* v,
                                        const float* mask, u64 bh, u64 nq, u64 nk, u64 du, u64 mstride, u32 flags,
                                        float scale, float* smem, unsigned char* st) {
  static_assert(BR * D + BC * (D + 1) + BR * BC <= ATT_FWD_SMEM, "forward shared memory");
  constexpr int OPT = (BR * D + ATT_THREADS - 1) / ATT_THREADS;
  __shared__ float ms[BR], ls[BR], as[BR];
  __shared__ int act[BR], seen[BR];
  const int d = (int)du, tid = threadIdx.x;
  float* qs = smem;
  float* kv = qs + BR * D;
  float* ss = kv + BC * (D + 1);
  const u64 tiles = (nq + BR - 1) / BR;
  for (u64 w = blockIdx.x; w < bh * tiles; w += gridDim.x) {
    const u64 b = w / tiles, i0 = (w % tiles) * BR;
    const int rows = (int)min((u64)BR, nq - i0);
    __syncthreads();
    for (int e = tid; e < rows * d; e += ATT_THREADS) qs[e] = q[(b * nq + i0) * du + e];
    if (tid < BR) {
      ms[tid] = __int_as_float(0xff800000);
      ls[tid] = 0.0f;
      seen[tid] = 0;
    }
    float acc[OPT];
#pragma unroll
    for (int t = 0; t < OPT; t++) acc[t] = 0.0f;
    const u64 jend = (flags & ATT_CAUSAL) ? min(nk, i0 + rows) : nk;
    for (u64 j0 = 0; j0 < jend; j0 += BC) {
      const int cols = (int)min((u64)BC, nk - j0);
      __syncthreads();
      for (int e = tid; e < cols * d; e += ATT_THREADS) kv[(e / d) * (D + 1) + e % d] = k[(b * nk + j0) * du + e];
      __syncthreads();
      for (int e = tid; e < BR * BC; e += ATT_THREADS) {
        const int r = e / BC, jj = e % BC;
        if (r < rows && jj < cols) {
          const u64 i = i0 + r, j = j0 + jj;
          const int s = att_status(att_mask_row(mask, b, i, nk, mstride, flags), i, j, flags);
          float sc = ATT_FILL_SCORE;
          if (s == ATT_NORMAL) sc = att_dot<DK>(qs + r * d, kv + jj * (D + 1), d) * scale;
          ss[e] = sc;
          st[e] = (unsigned char)s;
        }
      }
      __syncthreads();
      for (int e = tid; e < cols * d; e += ATT_THREADS) kv[(e / d) * (D + 1) + e % d] = v[(b * nk + j0) * du + e];
      if (tid < rows) {
        const int r = tid;
        float mb = __int_as_float(0xff800000);
        bool some = false;
        for (int jj = 0; jj < cols; jj++)
          if (st[r * BC + jj] != ATT_EXCLUDED) {
            mb = tl_maxf(mb, ss[r * BC + jj]);
            some = true;
          }
        act[r] = some;
        if (some) {
          const float mn = tl_maxf(ms[r], mb);
          const float alpha = tl_expf(ms[r] - mn);
          float l = ls[r] * alpha;
          for (int jj = 0; jj < cols; jj++)
            if (st[r * BC + jj] != ATT_EXCLUDED) {
              const float p = tl_expf(ss[r * BC + jj] - mn);
              ss[r * BC + jj] = p;
              l = l + p;
            }
          ms[r] = mn;
          ls[r] = l;
          as[r] = alpha;
          seen[r] = 1;
        }
      }
      __syncthreads();
#pragma unroll
      for (int t = 0; t < OPT; t++) {
        const int e = tid + t * ATT_THREADS;
        if (e < rows * d) {
          const int r = e / d, c = e % d;
          if (act[r]) {
            float a = acc[t] * as[r];
            const float* pr = ss + r * BC;
            const unsigned char* sr = st + r * BC;
            for (int jj = 0; jj < cols; jj++)
              if (sr[jj] != ATT_EXCLUDED) a = a + pr[jj] * kv[jj * (D + 1) + c];
            acc[t] = a;
          }
        }
      }
    }
    __syncthreads();
#pragma unroll
    for (int t = 0; t < OPT; t++) {
      const int e = tid + t * ATT_THREADS;
      if (e < rows * d) {
        const int r = e / d;
        o[(b * nq + i0) * du + e] = seen[r] ? acc[t] / ls[r] : 0.0f;
      }
    }
    if (tid < rows) lse[b * nq + i0 + tid] = seen[tid] ? ms[tid] + tl_logf(ls[tid]) : __int_as_float(0xff800000);
  }
}

// flash_attention_fwd: O and LSE (cpu.FlashAttentionFwd). Sizes: bh, nq, nk, d (1..ATT_MAX_D),
// mstride (0 or nq*nk), flags; the mask is read only with ATT_FILL or ATT_HARD.
extern "C" __global__ void __launch_bounds__(ATT_THREADS)
    flash_attention_fwd(float* __restrict__ o, float* __restrict__ lse, const float* __restrict__ q,
                        const float* __restrict__ k, const float* __restrict__ v, const float* __restrict__ mask,
                        u64 bh, u64 nq, u64 nk, u64 d, u64 mstride, u64 flags, float scale) {
  __shared__ float smem[ATT_FWD_SMEM];
  __shared__ unsigned char st[ATT_FWD_BR_64 * ATT_BC_64];
  const u32 f = (u32)flags;
  if (d == 32) {
    att_fwd<ATT_BC_64, ATT_FWD_BR_64, 64, 32>(o, lse, q, k, v, mask, bh, nq, nk, d, mstride, f, scale, smem, st);
  } else if (d == 64) {
    att_fwd<ATT_BC_64, ATT_FWD_BR_64, 64, 64>(o, lse, q, k, v, mask, bh, nq, nk, d, mstride, f, scale, smem, st);
  } else if (d <= 64) {
    att_fwd<ATT_BC_64, ATT_FWD_BR_64, 64, 0>(o, lse, q, k, v, mask, bh, nq, nk, d, mstride, f, scale, smem, st);
  } else if (d == 128) {
    att_fwd<ATT_BC_128, ATT_FWD_BR_128, 128, 128>(o, lse, q, k, v, mask, bh, nq, nk, d, mstride, f, scale, smem, st);
  } else if (d <= 128) {
    att_fwd<ATT_BC_128, ATT_FWD_BR_128, 128, 0>(o, lse, q, k, v, mask, bh, nq, nk, d, mstride, f, scale, smem, st);
  } else {
    att_fwd<ATT_BC_256, ATT_FWD_BR_256, 256, 0>(o, lse, q, k, v, mask, bh, nq, nk, d, mstride, f, scale, smem, st);
  }
}

// flash_attention_rowdot: D[r] = dot(dO[r], O[r]) for rows r (cpu.FlashAttentionRowDot).
extern "C" __global__ void flash_attention_rowdot(float* __restrict__ dd, const float* __restrict__ dout,
                                                  const float* __restrict__ o, u64 rows, u64 d) {
  TL_FOR(r, rows) dd[r] = att_dot<0>(dout + r * d, o + r * d, (int)d);
}

// The backward's pair terms of a T x T tile: for query rows r < rows (tile rows i0 + r, with Q and
// dO in qs and dos, stride d) and keys jj < cols (j0 + jj, K and V in ks and vs, stride D + 1),
// ps = p, dss = ds and st = status (cpu's attnGrad).
template <int T, int D, int DK>
__device__ __forceinline__ void att_pairs(float* ps, float* dss, unsigned char* st, const float* qs, const float* dos,
                                          const float* ks, const float* vs, const float* lrow, const float* drow,
                                          const float* mask, u64 b, u64 i0, u64 j0, int rows, int cols, u64 nk,
                                          u64 mstride, u32 flags, int d, float scale) {
  for (int e = threadIdx.x; e < T * T; e += ATT_THREADS) {
    const int r = e / T, jj = e % T;
    if (r < rows && jj < cols) {
      const u64 i = i0 + r, j = j0 + jj;
      const int s = att_status(att_mask_row(mask, b, i, nk, mstride, flags), i, j, flags);
      float p = 0.0f, ds = 0.0f;
      if (s == ATT_FILLED) {
        p = tl_expf(ATT_FILL_SCORE - lrow[r]);
      } else if (s == ATT_NORMAL) {
        p = tl_expf(att_dot<DK>(qs + r * d, ks + jj * (D + 1), d) * scale - lrow[r]);
        ds = p * (att_dot<DK>(dos + r * d, vs + jj * (D + 1), d) - drow[r]);
      }
      ps[e] = p;
      dss[e] = ds;
      st[e] = (unsigned char)s;
    }
  }
}

// Loads rows [i0, i0 + rows) of Q and dO (stride d), and their LSE and D.
__device__ __forceinline__ void att_load_rows(float* qs, float* dos, float* lrow, float* drow, const float* q,
                                              const float* dout, const float* lse, const float* dd, u64 b, u64 nq,
                                              u64 i0, int rows, int d) {
  for (int e = threadIdx.x; e < rows * d; e += ATT_THREADS) {
    qs[e] = q[(b * nq + i0) * d + e];
    dos[e] = dout[(b * nq + i0) * d + e];
  }
  for (int r = threadIdx.x; r < rows; r += ATT_THREADS) {
    lrow[r] = lse[b * nq + i0 + r];
    drow[r] = dd[b * nq + i0 + r];
  }
}

// Loads keys [j0, j0 + cols) of K and V (stride D + 1).
template <int D>
__device__ __forceinline__ void att_load_keys(float* ks, float* vs, const float* k, const float* v, u64 b, u64 nk,
                                              u64 j0, int cols, int d) {
  for (int e = threadIdx.x; e < cols * d; e += ATT_THREADS) {
    ks[(e / d) * (D + 1) + e % d] = k[(b * nk + j0) * d + e];
    vs[(e / d) * (D + 1) + e % d] = v[(b * nk + j0) * d + e];
  }
}

// dK and dV: one owner per key tile, query rows ascending (cpu.FlashAttentionBwdKV).
template <int T, int D, int DK>
__device__ __forceinline__ void att_bwd_kv(float* dk, float* dv, const float* q, const float* k, const float* v,
                                           const float* mask, const float* dout, const float* lse, const float* dd,
                                           u64 bh, u64 nq, u64 nk, u64 du, u64 mstride, u32 flags, float scale,
                                           float* smem, unsigned char* st) {
  static_assert(2 * T * (D + 1) + 2 * T * D + 2 * T * T + 2 * T <= ATT_BWD_SMEM, "backward shared memory");
  constexpr int OPT = (T * D + ATT_THREADS - 1) / ATT_THREADS;
  const int d = (int)du, tid = threadIdx.x;
  float* ks = smem;
  float* vs = ks + T * (D + 1);
  float* qs = vs + T * (D + 1);
  float* dos = qs + T * D;
  float* ps = dos + T * D;
  float* dss = ps + T * T;
  float* lrow = dss + T * T;
  float* drow = lrow + T;
  const u64 tiles = (nk + T - 1) / T;
  for (u64 w = blockIdx.x; w < bh * tiles; w += gridDim.x) {
    const u64 b = w / tiles, j0 = (w % tiles) * T;
    const int cols = (int)min((u64)T, nk - j0);
    __syncthreads();
    att_load_keys<D>(ks, vs, k, v, b, nk, j0, cols, d);
    float ak[OPT], av[OPT];
#pragma unroll
    for (int t = 0; t < OPT; t++) ak[t] = av[t] = 0.0f;
    for (u64 i0 = (flags & ATT_CAUSAL) ? j0 : 0; i0 < nq; i0 += T) {
      const int rows = (int)min((u64)T, nq - i0);
      __syncthreads();
      att_load_rows(qs, dos, lrow, drow, q, dout, lse, dd, b, nq, i0, rows, d);
      __syncthreads();
      att_pairs<T, D, DK>(ps, dss, st, qs, dos, ks, vs, lrow, drow, mask, b, i0, j0, rows, cols, nk, mstride, flags, d,
                      scale);
      __syncthreads();
#pragma unroll
      for (int t = 0; t < OPT; t++) {
        const int e = tid + t * ATT_THREADS;
        if (e < cols * d) {
          const int jj = e / d, c = e % d;
          float a = ak[t], b2 = av[t];
          for (int r = 0; r < rows; r++) {
            const int s = st[r * T + jj];
            if (s != ATT_EXCLUDED) b2 = b2 + ps[r * T + jj] * dos[r * d + c];
            if (s == ATT_NORMAL) a = a + dss[r * T + jj] * qs[r * d + c];
          }
          ak[t] = a;
          av[t] = b2;
        }
      }
    }
#pragma unroll
    for (int t = 0; t < OPT; t++) {
      const int e = tid + t * ATT_THREADS;
      if (e < cols * d) {
        dk[(b * nk + j0) * du + e] = ak[t] * scale;
        dv[(b * nk + j0) * du + e] = av[t];
      }
    }
  }
}

// dQ: one owner per query tile, keys ascending (cpu.FlashAttentionBwdQ).
template <int T, int D, int DK>
__device__ __forceinline__ void att_bwd_q(float* dq, const float* q, const float* k, const float* v,
                                          const float* mask, const float* dout, const float* lse, const float* dd,
                                          u64 bh, u64 nq, u64 nk, u64 du, u64 mstride, u32 flags, float scale,
                                          float* smem, unsigned char* st) {
  constexpr int OPT = (T * D + ATT_THREADS - 1) / ATT_THREADS;
  const int d = (int)du, tid = threadIdx.x;
  float* ks = smem;
  float* vs = ks + T * (D + 1);
  float* qs = vs + T * (D + 1);
  float* dos = qs + T * D;
  float* ps = dos + T * D;
  float* dss = ps + T * T;
  float* lrow = dss + T * T;
  float* drow = lrow + T;
  const u64 tiles = (nq + T - 1) / T;
  for (u64 w = blockIdx.x; w < bh * tiles; w += gridDim.x) {
    const u64 b = w / tiles, i0 = (w % tiles) * T;
    const int rows = (int)min((u64)T, nq - i0);
    __syncthreads();
    att_load_rows(qs, dos, lrow, drow, q, dout, lse, dd, b, nq, i0, rows, d);
    float aq[OPT];
#pragma unroll
    for (int t = 0; t < OPT; t++) aq[t] = 0.0f;
    const u64 jend = (flags & ATT_CAUSAL) ? min(nk, i0 + rows) : nk;
    for (u64 j0 = 0; j0 < jend; j0 += T) {
      const int cols = (int)min((u64)T, nk - j0);
      __syncthreads();
      att_load_keys<D>(ks, vs, k, v, b, nk, j0, cols, d);
      __syncthreads();
      att_pairs<T, D, DK>(ps, dss, st, qs, dos, ks, vs, lrow, drow, mask, b, i0, j0, rows, cols, nk, mstride, flags, d,
                      scale);
      __syncthreads();
#pragma unroll
      for (int t = 0; t < OPT; t++) {
        const int e = tid + t * ATT_THREADS;
        if (e < rows * d) {
          const int r = e / d, c = e % d;
          float a = aq[t];
          for (int jj = 0; jj < cols; jj++)
            if (st[r * T + jj] == ATT_NORMAL) a = a + dss[r * T + jj] * ks[jj * (D + 1) + c];
          aq[t] = a;
        }
      }
    }
#pragma unroll
    for (int t = 0; t < OPT; t++) {
      const int e = tid + t * ATT_THREADS;
      if (e < rows * d) dq[(b * nq + i0) * du + e] = aq[t] * scale;
    }
  }
}

// flash_attention_bwd_kv: dK and dV from Q, K, V, the mask, dO, LSE and D (flash_attention_rowdot).
extern "C" __global__ void __launch_bounds__(ATT_THREADS)
    flash_attention_bwd_kv(float* __restrict__ dk, float* __restrict__ dv, const float* __restrict__ q,
                           const float* __restrict__ k, const float* __restrict__ v, const float* __restrict__ mask,
                           const float* __restrict__ dout, const float* __restrict__ lse,
                           const float* __restrict__ dd, u64 bh, u64 nq, u64 nk, u64 d, u64 mstride, u64 flags,
                           float scale) {
  __shared__ float smem[ATT_BWD_SMEM];
  __shared__ unsigned char st[ATT_BWD_T_64 * ATT_BWD_T_64];
  const u32 f = (u32)flags;
  if (d == 32) {
    att_bwd_kv<ATT_BWD_T_64, 64, 32>(dk, dv, q, k, v, mask, dout, lse, dd, bh, nq, nk, d, mstride, f, scale, smem, st);
  } else if (d == 64) {
    att_bwd_kv<ATT_BWD_T_64, 64, 64>(dk, dv, q, k, v, mask, dout, lse, dd, bh, nq, nk, d, mstride, f, scale, smem, st);
  } else if (d <= 64) {
    att_bwd_kv<ATT_BWD_T_64, 64, 0>(dk, dv, q, k, v, mask, dout, lse, dd, bh, nq, nk, d, mstride, f, scale, smem, st);
  } else if (d == 128) {
    att_bwd_kv<ATT_BWD_T_128, 128, 128>(dk, dv, q, k, v, mask, dout, lse, dd, bh, nq, nk, d, mstride, f, scale, smem, st);
  } else if (d <= 128) {
    att_bwd_kv<ATT_BWD_T_128, 128, 0>(dk, dv, q, k, v, mask, dout, lse, dd, bh, nq, nk, d, mstride, f, scale, smem, st);
  } else {
    att_bwd_kv<ATT_BWD_T_256, 256, 0>(dk, dv, q, k, v, mask, dout, lse, dd, bh, nq, nk, d, mstride, f, scale, smem, st);
  }
}

// flash_attention_bwd_q: dQ from the same inputs.
extern "C" __global__ void __launch_bounds__(ATT_THREADS)
    flash_attention_bwd_q(float* __restrict__ dq, const float* __restrict__ q, const float* __restrict__ k,
                          const float* __restrict__ v, const float* __restrict__ mask,
                          const float* __restrict__ dout, const float* __restrict__ lse,
                          const float* __restrict__ dd, u64 bh, u64 nq, u64 nk, u64 d, u64 mstride, u64 flags,
                          float scale) {
  __shared__ float smem[ATT_BWD_SMEM];
  __shared__ unsigned char st[ATT_BWD_T_64 * ATT_BWD_T_64];
  const u32 f = (u32)flags;
  if (d == 32) {
    att_bwd_q<ATT_BWD_T_64, 64, 32>(dq, q, k, v, mask, dout, lse, dd, bh, nq, nk, d, mstride, f, scale, smem, st);
  } else if (d == 64) {
    att_bwd_q<ATT_BWD_T_64, 64, 64>(dq, q, k, v, mask, dout, lse, dd, bh, nq, nk, d, mstride, f, scale, smem, st);
  } else if (d <= 64) {
    att_bwd_q<ATT_BWD_T_64, 64, 0>(dq, q, k, v, mask, dout, lse, dd, bh, nq, nk, d, mstride, f, scale, smem, st);
  } else if (d == 128) {
    att_bwd_q<ATT_BWD_T_128, 128, 128>(dq, q, k, v, mask, dout, lse, dd, bh, nq, nk, d, mstride, f, scale, smem, st);
  } else if (d <= 128) {
    att_bwd_q<ATT_BWD_T_128, 128, 0>(dq, q, k, v, mask, dout, lse, dd, bh, nq, nk, d, mstride, f, scale, smem, st);
  } else {
    att_bwd_q<ATT_BWD_T_256, 256, 0>(dq, q, k, v, mask, dout, lse, dd, bh, nq, nk, d, mstride, f, scale, smem, st);
  }
}
