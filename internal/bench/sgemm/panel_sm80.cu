// EXPERIMENT, not built into the module (see NOTES.md, 2026-11-24 evening): the cp.async
// whole-K panel kernel that ran bit-exact but slower than matmul_s on the bmm. It was
// ptx/matmul_sm80.cu (module matmul_sm80, compute_80) with ops choosing it on sm_80+.
// matmul_sm80.cu: the batched product for short K on sm_80 and later (module matmul_sm80, PTX
// for compute_80): C_t = A_t · B_t with A_t (m, n) and B_t (n, p) row-major as stored (no
// transposes), 4 <= n <= MP_KMAX, n % 4 == 0, p % 4 == 0, A, B and C 16-byte aligned. The
// arithmetic is matmul.cu's, bit for bit:
//
//   every C_t[i][j] has exactly one owner thread, which computes
//     acc = +0.0f; for k = 0 .. n-1 ascending: acc = fmaf(a_ik, b_kj, acc); C_t[i][j] = acc
//
// Design (matmul_panel_nn): a block of 256 threads computes 128 x 128 tiles of C (warp tiles
// 32 x 64, 8 x 8 per thread in 4 x 4 pieces, as matmul.cu's large family), walking the tiles
// b, b + gridDim.x, ... over batch * tilesM * tilesN. Each tile's whole K fits in shared memory:
// the A panel (128 x n, rows as stored) and the B panel (n x 128) are copied with cp.async (no
// registers held) into one of two stages, the next tile's panels streaming in while the current
// tile is computed with no barrier inside its K loop. A thread reads 4 consecutive k of each of
// its 8 rows of A as one 16-byte load (the 8 threads of a quarter warp share the row: a
// broadcast) and 8 columns of B as two 16-byte loads per k. Rows and columns past the matrix read
// its last ones (clamped addresses): they feed only outputs that are never stored. Dynamic
// shared memory: 2 stages x (128 + 128) x n floats = 2048 n bytes. Twin: cpu/matmul.go.
#include "common.cuh"

#define MP_BM 128
#define MP_BN 128
#define MP_THREADS 256
#define MP_KMAX 64
#ifndef MP_UNROLL
#define MP_UNROLL 1
#endif
#ifndef MP_SMALL
#define MP_SMALL 0
#endif
constexpr int kMpUnroll = MP_UNROLL;

// mp_panels starts the copies of tile (t, tm, tn)'s A and B panels into As / Bs (one commit
// group).
template <int BM, int NT>
__device__ __forceinline__ void mp_panels(float* As, float* Bs, const float* A, const float* B,
                                          u64 t, u32 tm, u32 tn, u64 m, u64 n, u64 p) {
  const u32 sa = (u32)__cvta_generic_to_shared(As), sb = (u32)__cvta_generic_to_shared(Bs);
  const u32 kq = (u32)(n / 4);  // 16-byte pieces per A row
  const float* At = A + t * m * n;
  const float* Bt = B + t * n * p;
  for (u32 f = threadIdx.x; f < BM * kq; f += NT) {
    const u32 r = f / kq, q = f % kq;
    const u64 row = min((u64)tm * BM + r, m - 1);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(sa + f * 16),
                 "l"(At + row * n + 4 * q));
  }
  for (u32 f = threadIdx.x; f < (u32)n * (MP_BN / 4); f += NT) {
    const u32 k = f / (MP_BN / 4), q = f % (MP_BN / 4);
    const u64 col = min((u64)tn * MP_BN + 4 * q, p - 4);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(sb + f * 16),
                 "l"(Bt + (u64)k * p + col));
  }
  asm volatile("cp.async.commit_group;" ::: "memory");
}

template <int BM, int NT>
__device__ __forceinline__ void mp_body(float* __restrict__ C, const float* __restrict__ A,
                                        const float* __restrict__ B, u64 batch, u64 m, u64 n,
                                        u64 p) {
  extern __shared__ __align__(16) float panels[];
  if (n < 4 || n > MP_KMAX || n % 4 != 0 || p % 4 != 0 || blockDim.x != NT ||
      (((u64)A | (u64)B | (u64)C) & 15u) != 0)
    __trap();
  const u32 tilesM = (u32)((m + BM - 1) / BM), tilesN = (u32)((p + MP_BN - 1) / MP_BN);
  const u64 total = batch * tilesM * tilesN;
  u64 g = blockIdx.x;
  if (g >= total) return;
  const u32 stage = (u32)((BM + MP_BN) * n);  // floats per stage
  const u32 warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const u32 rt = (warp / 2) * 32 + (lane / 8) * 4;  // rows rt..rt+3 and rt+16..rt+19
  const u32 ct = (warp % 2) * 64 + (lane % 8) * 4;  // columns ct..ct+3 and ct+32..ct+35
  const u32 perBatch = tilesM * tilesN;

  auto tile = [&](u64 gi, u64& t, u32& tm, u32& tn) {
    t = gi / perBatch;
    const u32 id = (u32)(gi - t * perBatch);
    tm = id / tilesN;
    tn = id % tilesN;
  };
  u64 t;
  u32 tm, tn;
  tile(g, t, tm, tn);
  mp_panels<BM, NT>(panels, panels + BM * n, A, B, t, tm, tn, m, n, p);
  for (u32 s = 0; g < total; g += gridDim.x, s ^= 1u) {
    const u64 gn = g + gridDim.x;
    u64 t2;
    u32 tm2, tn2;
    if (gn < total) {
      tile(gn, t2, tm2, tn2);
      float* nx = panels + (s ^ 1u) * stage;
      mp_panels<BM, NT>(nx, nx + BM * n, A, B, t2, tm2, tn2, m, n, p);
      asm volatile("cp.async.wait_group 1;" ::: "memory");
    } else {
      asm volatile("cp.async.wait_group 0;" ::: "memory");
    }
    __syncthreads();  // this tile's panels are in place
    const float* As = panels + s * stage;
    const float* Bs = As + BM * n;
    float acc[8][8];
#pragma unroll
    for (int i = 0; i < 8; i++)
#pragma unroll
      for (int j = 0; j < 8; j++) acc[i][j] = 0.0f;
#pragma unroll kMpUnroll
    for (u32 k0 = 0; k0 < (u32)n; k0 += 4) {
      float4 a[8];
#pragma unroll
      for (int i = 0; i < 8; i++)
        a[i] = *reinterpret_cast<const float4*>(As + (rt + (i / 4) * 16 + (i % 4)) * n + k0);
#pragma unroll
      for (int kk = 0; kk < 4; kk++) {
        const float4 b0 = *reinterpret_cast<const float4*>(Bs + (k0 + kk) * MP_BN + ct);
        const float4 b1 = *reinterpret_cast<const float4*>(Bs + (k0 + kk) * MP_BN + ct + 32);
        const float b[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
        for (int i = 0; i < 8; i++) {
          const float ai = kk == 0 ? a[i].x : kk == 1 ? a[i].y : kk == 2 ? a[i].z : a[i].w;
#pragma unroll
          for (int j = 0; j < 8; j++) acc[i][j] = __fmaf_rn(ai, b[j], acc[i][j]);
        }
      }
    }
    // Store the tile (16 bytes at a time: p % 4 == 0, so a piece is all in or all out).
    float* Ct = C + t * m * p;
#pragma unroll
    for (int i = 0; i < 8; i++) {
      const u64 row = (u64)tm * BM + rt + (i / 4) * 16 + (i % 4);
      if (row < m) {
#pragma unroll
        for (int h = 0; h < 2; h++) {
          const u64 col = (u64)tn * MP_BN + ct + 32 * h;
          if (col < p)
            *reinterpret_cast<float4*>(Ct + row * p + col) = make_float4(
                acc[i][4 * h], acc[i][4 * h + 1], acc[i][4 * h + 2], acc[i][4 * h + 3]);
        }
      }
    }
    __syncthreads();  // every thread is done with stage s before the next tile refills it
    t = t2;
    tm = tm2;
    tn = tn2;
  }
}

#if MP_SMALL
extern "C" __global__ void __launch_bounds__(128, 2)
    matmul_panel_nn(float* __restrict__ C, const float* __restrict__ A,
                    const float* __restrict__ B, u64 batch, u64 m, u64 n, u64 p) {
  mp_body<64, 128>(C, A, B, batch, m, n, p);
}
#else
extern "C" __global__ void __launch_bounds__(256, 1)
    matmul_panel_nn(float* __restrict__ C, const float* __restrict__ A,
                    const float* __restrict__ B, u64 batch, u64 m, u64 n, u64 p) {
  mp_body<128, 256>(C, A, B, batch, m, n, p);
}
#endif
