// matmul.cu: batched float32 matrix product C_t = op(A_t) · op(B_t) for t < batch.
//
// Logically A_t is (m, n), B_t is (n, p) and C_t is (m, p), each row-major and contiguous, the
// batch strides m*n, n*p and m*p. transA means A_t is stored (n, m) row-major (op = transpose),
// transB means B_t is stored (p, n) row-major. The entries are matmul_<a><b> with <a>, <b> each
// n (as stored) or t (transposed), in two tile configurations (matmul_* and matmul_s_*, see
// below), all with the parameters (C, A, B, batch, m, n, p) and the same arithmetic:
//
//   every C_t[i][j] has exactly one owner thread, which computes
//     acc = +0.0f; for k = 0 .. n-1 ascending: acc = fmaf(a_ik, b_kj, acc); C_t[i][j] = acc
//   (one correctly rounded fma per step, n == 0 gives +0). No split-K, no atomics.
//
// Twin: cpu/matmul.go. The launch geometry lives in ptx.MatmulLaunch (matmul.go): a 1-D grid
// whose blocks walk the batch * tilesM * tilesN output tiles grid-stride, so any grid of at least
// one block computes every output, and the result never depends on the geometry or the family.
//
// Design (an FFMA SGEMM: no tensor cores, whose float32 modes round differently):
//   - a block computes a BM x BN tile of C; its warps a WM x WN sub-tile each; a thread a TM x TN
//     register tile made of 4 x 4 pieces spread over the warp tile, so that the operand
//     fragments come from shared memory as 16-byte loads that the lanes of a warp share;
//   - K advances in steps of BK: both operand tiles are kept in shared memory k-major
//     ([k][row], rows padded by 4 floats against bank conflicts of the transposing stores),
//     double buffered; the next step is loaded from global memory into registers before the
//     current step's arithmetic and stored to the other buffer after it (one barrier per step;
//     cp.async is sm_80+, outside compute_70). The last step of a tile prefetches the first step
//     of the block's next tile the same way;
//   - global loads are 16 bytes wide when both operands' bases are 16-byte aligned and their
//     contiguous dimensions multiples of 4 (decided once per launch: two instantiations);
//     otherwise scalar loads from the same places. Rows and columns past the matrix read its
//     last ones instead (clamped addresses, no predicates): they feed only outputs that are never
//     stored. The last, partial K step loads and runs only its k < n terms, so no padding term
//     ever enters an accumulator (fma(0, 0, -0) would be +0);
//   - the epilogue stores 16 bytes at a time when C allows it, scalar with bounds otherwise;
//   - sizes are u64; the tile and K-step counts of one batch are kept in 32 bits (true of any
//     matrix that fits in memory).
// Measured on an H100 (internal/bench/sgemm/run.sh): 0.92-0.94x cuBLAS at 4096^3, 0.95-1.02x at
// 2048^3, 1.3x at 1024^3, 1.0x at 256x4096x4096 (PyTorch fp32, TF32 off).
#include "common.cuh"

#define MM_PAD 4
#define MM_GROUP 8

// MmOperand streams one operand, seen as an (outer, k) matrix: A with outer = m, B with outer =
// p. KC says the operand is stored with k contiguous (A as stored, or B transposed): element
// (o, k) at base[o*ld + k]; otherwise at base[k*ld + o]. Shared memory holds a tile as [k][o]
// with row length BO + MM_PAD. Outer indices past the matrix are clamped to its last ones at
// init (they feed only outputs that are never stored), so a full K step loads without
// predicates; in the last, partial step the k past n are not loaded (and never used).
template <int BO, int BK, int NT, bool KC>
struct MmOperand {
  static constexpr int R = BO * BK / (4 * NT);  // 4-float pieces per thread per tile
  static constexpr int LD = BO + MM_PAD;
  static_assert(R >= 1 && R * 4 * NT == BO * BK, "the tile does not split into 4-float pieces");
  static_assert(KC ? (NT % (BK / 4) == 0) : (NT % (BO / 4) == 0), "uneven loader layout");

  const float* ptr[R];
  u32 lim[R];  // !KC, scalar loads: the piece's last in-range offset (0..3)
  u64 step;    // pointer advance per K step

  // vec: 16-byte loads (base aligned, ld % 4 == 0 and, for !KC, M % 4 == 0).
  __device__ __forceinline__ void init(const float* base, u64 o0, u64 M, u64 ld, bool vec) {
#pragma unroll
    for (int r = 0; r < R; r++) {
      u32 f = threadIdx.x + r * NT;
      if (KC) {
        u32 o = f / (BK / 4), kq = (f % (BK / 4)) * 4;
        u64 oc = o0 + o < M ? o0 + o : M - 1;
        ptr[r] = base + oc * ld + kq;
        lim[r] = 3;
      } else {
        u32 kk = f / (BO / 4), oq = (f % (BO / 4)) * 4;
        u64 oc = o0 + oq;
        u32 l = 3;
        if (vec) {
          if (oc >= M) oc = M - 4;
        } else {
          if (oc >= M) oc = M - 1;
          u64 room = M - 1 - oc;
          l = room < 3 ? (u32)room : 3u;
        }
        ptr[r] = base + (u64)kk * ld + oc;
        lim[r] = l;
      }
    }
    step = KC ? (u64)BK : (u64)BK * ld;
  }

  // load reads the next K step's pieces and advances; TAIL: only the first kr (< BK) k of the
  // step exist, the others are left 0.
  template <bool TAIL>
  __device__ __forceinline__ void load(float4 (&v)[R], bool vec, u32 kr) {
#pragma unroll
    for (int r = 0; r < R; r++) {
      u32 f = threadIdx.x + r * NT;
      const float* q = ptr[r];
      float4 x = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      if (KC) {
        u32 kq = (f % (BK / 4)) * 4;
        if (!TAIL) {
          if (vec) {
            x = __ldg(reinterpret_cast<const float4*>(q));
          } else {
            x.x = __ldg(q + 0);
            x.y = __ldg(q + 1);
            x.z = __ldg(q + 2);
            x.w = __ldg(q + 3);
          }
        } else {
          if (kq + 0 < kr) x.x = __ldg(q + 0);
          if (kq + 1 < kr) x.y = __ldg(q + 1);
          if (kq + 2 < kr) x.z = __ldg(q + 2);
          if (kq + 3 < kr) x.w = __ldg(q + 3);
        }
      } else {
        u32 kk = f / (BO / 4);
        if (!TAIL || kk < kr) {
          if (vec) {
            x = __ldg(reinterpret_cast<const float4*>(q));
          } else {
            u32 l = lim[r];
            x.x = __ldg(q);
            x.y = __ldg(q + (l < 1u ? l : 1u));
            x.z = __ldg(q + (l < 2u ? l : 2u));
            x.w = __ldg(q + l);
          }
        }
      }
      v[r] = x;
      ptr[r] = q + step;
    }
  }

  __device__ __forceinline__ void store(float* s, const float4 (&v)[R]) const {
#pragma unroll
    for (int r = 0; r < R; r++) {
      u32 f = threadIdx.x + r * NT;
      if (KC) {
        u32 o = f / (BK / 4), kq = (f % (BK / 4)) * 4;
        s[(kq + 0) * LD + o] = v[r].x;
        s[(kq + 1) * LD + o] = v[r].y;
        s[(kq + 2) * LD + o] = v[r].z;
        s[(kq + 3) * LD + o] = v[r].w;
      } else {
        u32 kk = f / (BO / 4), oq = (f % (BO / 4)) * 4;
        *reinterpret_cast<float4*>(s + kk * LD + oq) = v[r];
      }
    }
  }
};

// mm_steps runs K steps kk = 0 .. BK-1 (only kk < kc when PARTIAL) of the thread's register
// tile from the shared tiles as (A) and bs (B).
template <bool PARTIAL, int BK, int LDA, int LDB, int TM, int TN, int SA, int SB>
__device__ __forceinline__ void mm_steps(float (&acc)[TM][TN], const float* as, const float* bs,
                                         u32 kc) {
#pragma unroll
  for (int kk = 0; kk < BK; kk++) {
    if (PARTIAL && (u32)kk >= kc) break;
    float a[TM], b[TN];
#pragma unroll
    for (int i = 0; i < TM / 4; i++) {
      float4 v = *reinterpret_cast<const float4*>(as + kk * LDA + i * SA);
      a[4 * i + 0] = v.x;
      a[4 * i + 1] = v.y;
      a[4 * i + 2] = v.z;
      a[4 * i + 3] = v.w;
    }
#pragma unroll
    for (int j = 0; j < TN / 4; j++) {
      float4 v = *reinterpret_cast<const float4*>(bs + kk * LDB + j * SB);
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

__device__ __forceinline__ bool mm_aligned16(const void* p) {
  return ((u64)p & 15u) == 0;
}

// mm_tile_at: the tile with linear index g (over batches, then the tiles of one batch, those in
// groups of MM_GROUP tile rows walked column by column, so that neighbouring indices share
// operand panels in L2).
struct MmTile {
  u64 t;       // batch
  u32 tm, tn;  // tile row and column
};
__device__ __forceinline__ MmTile mm_tile_at(u64 g, u32 tilesM, u32 tilesN) {
  const u32 perBatch = tilesM * tilesN;
  MmTile r;
  u32 id;
  if ((g >> 32) == 0) {
    r.t = (u32)g / perBatch;
    id = (u32)g - (u32)r.t * perBatch;
  } else {
    r.t = g / perBatch;
    id = (u32)(g - r.t * perBatch);
  }
  const u32 per = MM_GROUP * tilesN;
  const u32 g0 = id / per * MM_GROUP, gm = min(tilesM - g0, (u32)MM_GROUP), q = id % per;
  r.tm = g0 + q % gm;
  r.tn = q / gm;
  return r;
}

// mm_store writes the thread's part of tile tl of C and clears the accumulators.
template <int BM, int BN, int TM, int TN, int SA, int SB>
__device__ __forceinline__ void mm_store(float (&acc)[TM][TN], float* __restrict__ C, MmTile tl,
                                         u32 rt, u32 ct, u64 m, u64 p, bool vecC) {
  const u64 row0 = (u64)tl.tm * BM + rt, col0 = (u64)tl.tn * BN + ct;
  float* Ct = C + tl.t * m * p;
#pragma unroll
  for (int i = 0; i < TM; i++) {
    const u64 row = row0 + (i / 4) * SA + (i % 4);
    if (row < m) {
      float* crow = Ct + row * p;
#pragma unroll
      for (int j = 0; j < TN / 4; j++) {
        const u64 col = col0 + j * SB;
        if (vecC) {
          if (col < p)
            *reinterpret_cast<float4*>(crow + col) =
                make_float4(acc[i][4 * j], acc[i][4 * j + 1], acc[i][4 * j + 2], acc[i][4 * j + 3]);
        } else {
#pragma unroll
          for (int c = 0; c < 4; c++)
            if (col + c < p) crow[col + c] = acc[i][4 * j + c];
        }
      }
    }
#pragma unroll
    for (int j = 0; j < TN; j++) acc[i][j] = 0.0f;
  }
}

// mm_tiles: the tiles g = blockIdx.x, blockIdx.x + gridDim.x, ... of the batch * tilesM * tilesN
// tiles, with 16-byte (VEC) or scalar global loads of both operands. Within a tile, the next K
// step's operands are in flight into registers while the current step is computed from shared
// memory; the last step of a tile does the same with the first step of the block's next tile,
// so that its loads overlap that step and the tile's stores.
template <bool TA, bool TB, bool VEC, int BM, int BN, int BK, int WM, int WN, int TM, int TN>
__device__ __forceinline__ void mm_tiles(float* __restrict__ C, const float* __restrict__ A,
                                         const float* __restrict__ B, u64 batch, u64 m, u64 n,
                                         u64 p, float* sA, float* sB) {
  constexpr int NT = (BM / WM) * (BN / WN) * 32;
  constexpr int TX = WN / TN;        // lanes across a warp tile's columns
  constexpr int SA = (WM / TM) * 4;  // row distance between a thread's 4-row pieces
  constexpr int SB = TX * 4;         // column distance between its 4-column pieces
  static_assert((WM / TM) * (WN / TN) == 32, "a warp tile must hold 32 thread tiles");
  static_assert(TM % 4 == 0 && TN % 4 == 0 && BK % 4 == 0, "4-float pieces");
  typedef MmOperand<BM, BK, NT, !TA> OpA;
  typedef MmOperand<BN, BK, NT, TB> OpB;

  const u32 warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const u32 rt = (warp / (BN / WN)) * WM + (lane / TX) * 4;  // thread's first row in the tile
  const u32 ct = (warp % (BN / WN)) * WN + (lane % TX) * 4;  // and first column

  const bool vecC = mm_aligned16(C) && p % 4 == 0;
  // Tile and step counts of one batch fit 32 bits for any matrix that fits in memory.
  const u32 tilesM = (u32)((m + BM - 1) / BM), tilesN = (u32)((p + BN - 1) / BN);
  const u64 total = batch * tilesM * tilesN;
  const u32 ksteps = (u32)((n + BK - 1) / BK);
  const u32 klast = (u32)(n - (u64)(ksteps - 1) * BK);  // k in the last step (when ksteps > 0)
  const bool tail = klast != (u32)BK;                  // the last step is partial

  u64 g = blockIdx.x;
  if (g >= total) return;  // the whole block
  MmTile cur = mm_tile_at(g, tilesM, tilesN);

  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; i++)
#pragma unroll
    for (int j = 0; j < TN; j++) acc[i][j] = 0.0f;

  if (ksteps == 0) {  // n == 0: every output is +0
    for (;;) {
      mm_store<BM, BN, TM, TN, SA, SB>(acc, C, cur, rt, ct, m, p, vecC);
      g += gridDim.x;
      if (g >= total) return;
      cur = mm_tile_at(g, tilesM, tilesN);
    }
  }

  OpA opa;
  OpB opb;
  float4 ra[OpA::R], rb[OpB::R];
  opa.init(A + cur.t * m * n, (u64)cur.tm * BM, m, TA ? m : n, VEC);
  opb.init(B + cur.t * n * p, (u64)cur.tn * BN, p, TB ? n : p, VEC);
  if (tail && ksteps == 1) {
    opa.template load<true>(ra, VEC, klast);
    opb.template load<true>(rb, VEC, klast);
  } else {
    opa.template load<false>(ra, VEC, BK);
    opb.template load<false>(rb, VEC, BK);
  }
  opa.store(sA, ra);
  opb.store(sB, rb);
  __syncthreads();
  u32 buf = 0;

  for (;;) {
    // Every step of the tile but the last.
    for (u32 s = 0; s + 1 < ksteps; s++) {
      if (s + 2 < ksteps || !tail) {
        opa.template load<false>(ra, VEC, BK);
        opb.template load<false>(rb, VEC, BK);
      } else {
        opa.template load<true>(ra, VEC, klast);
        opb.template load<true>(rb, VEC, klast);
      }
      mm_steps<false, BK, OpA::LD, OpB::LD, TM, TN, SA, SB>(
          acc, sA + buf * (BK * OpA::LD) + rt, sB + buf * (BK * OpB::LD) + ct, BK);
      buf ^= 1u;
      opa.store(sA + buf * (BK * OpA::LD), ra);
      opb.store(sB + buf * (BK * OpB::LD), rb);
      __syncthreads();
    }
    // The last step, with the first step of the next tile in flight.
    const u64 gn = g + gridDim.x;
    const bool more = gn < total;
    MmTile nxt = cur;
    if (more) {
      nxt = mm_tile_at(gn, tilesM, tilesN);
      opa.init(A + nxt.t * m * n, (u64)nxt.tm * BM, m, TA ? m : n, VEC);
      opb.init(B + nxt.t * n * p, (u64)nxt.tn * BN, p, TB ? n : p, VEC);
      if (tail && ksteps == 1) {
        opa.template load<true>(ra, VEC, klast);
        opb.template load<true>(rb, VEC, klast);
      } else {
        opa.template load<false>(ra, VEC, BK);
        opb.template load<false>(rb, VEC, BK);
      }
    }
    {
      const float* as = sA + buf * (BK * OpA::LD) + rt;
      const float* bs = sB + buf * (BK * OpB::LD) + ct;
      if (tail)
        mm_steps<true, BK, OpA::LD, OpB::LD, TM, TN, SA, SB>(acc, as, bs, klast);
      else
        mm_steps<false, BK, OpA::LD, OpB::LD, TM, TN, SA, SB>(acc, as, bs, BK);
    }
    mm_store<BM, BN, TM, TN, SA, SB>(acc, C, cur, rt, ct, m, p, vecC);
    if (!more) return;
    buf ^= 1u;
    opa.store(sA + buf * (BK * OpA::LD), ra);
    opb.store(sB + buf * (BK * OpB::LD), rb);
    __syncthreads();
    g = gn;
    cur = nxt;
  }
}

// mm_body: the kernel of one configuration, NT = (BM/WM)*(BN/WN)*32 threads. 16-byte global
// loads need both operands' bases 16-byte aligned and their contiguous dimensions multiples of
// 4 (then every batch's and row's start stays aligned); otherwise every load is scalar.
template <bool TA, bool TB, int BM, int BN, int BK, int WM, int WN, int TM, int TN>
__device__ __forceinline__ void mm_body(float* __restrict__ C, const float* __restrict__ A,
                                        const float* __restrict__ B, u64 batch, u64 m, u64 n,
                                        u64 p) {
  __shared__ __align__(16) float sA[2 * BK * (BM + MM_PAD)];
  __shared__ __align__(16) float sB[2 * BK * (BN + MM_PAD)];
  const bool vec = mm_aligned16(A) && (TA ? m : n) % 4 == 0 && mm_aligned16(B) &&
                   (TB ? n : p) % 4 == 0;
  if (vec)
    mm_tiles<TA, TB, true, BM, BN, BK, WM, WN, TM, TN>(C, A, B, batch, m, n, p, sA, sB);
  else
    mm_tiles<TA, TB, false, BM, BN, BK, WM, WN, TM, TN>(C, A, B, batch, m, n, p, sA, sB);
}

#define MM_ENTRY(name, TA, TB, BM, BN, BK, WM, WN, TM, TN, MINB)                                \
  extern "C" __global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32, MINB)               \
      name(float* __restrict__ C, const float* __restrict__ A, const float* __restrict__ B,     \
           u64 batch, u64 m, u64 n, u64 p) {                                                    \
    mm_body<TA, TB, BM, BN, BK, WM, WN, TM, TN>(C, A, B, batch, m, n, p);                       \
  }

#define MM_FAMILY(prefix, BM, BN, BK, WM, WN, TM, TN, MINB)                 \
  MM_ENTRY(prefix##_nn, false, false, BM, BN, BK, WM, WN, TM, TN, MINB)   \
  MM_ENTRY(prefix##_nt, false, true, BM, BN, BK, WM, WN, TM, TN, MINB)    \
  MM_ENTRY(prefix##_tn, true, false, BM, BN, BK, WM, WN, TM, TN, MINB)    \
  MM_ENTRY(prefix##_tt, true, true, BM, BN, BK, WM, WN, TM, TN, MINB)

#ifndef MM_NO_ENTRIES
// Large tiles: 128 x 128 x 16 per block of 256 threads (warp tiles 32 x 64, 8 x 8 per thread;
// about 180 registers, one block per multiprocessor), for products with many tiles.
MM_FAMILY(matmul, 128, 128, 16, 32, 64, 8, 8, 1)
// Small tiles: 64 x 128 x 16 per block of 128 threads (warp tiles 32 x 64, 8 x 8 per thread; two
// blocks per multiprocessor), for products with too few large tiles to fill the GPU, and for
// short K (n <= 256), where each block takes several tiles.
MM_FAMILY(matmul_s, 64, 128, 16, 32, 64, 8, 8, 2)
#endif
