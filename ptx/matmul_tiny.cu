// matmul_tiny.cu: the batched product of matmul.cu, C_t = op(A_t) · op(B_t) for t < batch, with
// the same parameters (C, A, B, batch, m, n, p), the same layouts and the same arithmetic:
//
//   every C_t[i][j] has exactly one owner thread, which computes
//     acc = +0.0f; for k = 0 .. n-1 ascending: acc = fmaf(a_ik, b_kj, acc); C_t[i][j] = acc
//
// in 32 x 32 output tiles of 256 threads (2 x 2 outputs each), for products whose outputs are
// too few to spread over the multiprocessors in matmul.cu's 64 x 128 or 128 x 128 tiles (the
// layers of a small MLP: 128 x 512 outputs are 8 such tiles, 64 of these). ptx.MatmulLaunch
// picks the family. Twin: cpu/matmul.go.
//
// K advances in steps of MT_BK: both operand tiles are staged in shared memory k-major, the next
// step is loaded from global memory into registers while the current one is computed (one pair
// of barriers per step). Elements past the matrix are loaded as 0 and never used: rows and
// columns past m and p feed only outputs that are not stored, and the last, partial step runs
// only its k < n terms. Blocks walk the batch * tilesM * tilesP tiles grid-stride.
#include "common.cuh"

#define MT_TILE 32
#define MT_BK 32
#define MT_THREADS 256
#define MT_LOADS (MT_TILE * MT_BK / MT_THREADS)  // elements of each operand per thread and step

// mt_load reads the thread's elements of step k0 of both operands into a and b: element e =
// threadIdx.x + r * MT_THREADS of the 32 x 32 (row or column, k) tile, taken along the stored
// contiguous dimension so that a warp's loads are coalesced.
template <bool TA, bool TB>
__device__ __forceinline__ void mt_load(float (&a)[MT_LOADS], float (&b)[MT_LOADS], const float* A,
                                        const float* B, u64 m, u64 n, u64 p, u64 i0, u64 j0,
                                        u64 k0) {
#pragma unroll
  for (int r = 0; r < MT_LOADS; r++) {
    u32 e = threadIdx.x + r * MT_THREADS;
    u32 ii = TA ? e % MT_TILE : e / MT_BK, ka = TA ? e / MT_TILE : e % MT_BK;
    u64 gi = i0 + ii, gka = k0 + ka;
    a[r] = gi < m && gka < n ? (TA ? A[gka * m + gi] : A[gi * n + gka]) : 0.0f;
    u32 jj = TB ? e / MT_BK : e % MT_TILE, kb = TB ? e % MT_BK : e / MT_TILE;
    u64 gj = j0 + jj, gkb = k0 + kb;
    b[r] = gj < p && gkb < n ? (TB ? B[gj * n + gkb] : B[gkb * p + gj]) : 0.0f;
  }
}

// mt_stage stores the thread's loaded elements into the shared tiles ([k][row], [k][col]).
template <bool TA, bool TB>
__device__ __forceinline__ void mt_stage(float (*As)[MT_TILE + 1], float (*Bs)[MT_TILE + 1],
                                         const float (&a)[MT_LOADS], const float (&b)[MT_LOADS]) {
#pragma unroll
  for (int r = 0; r < MT_LOADS; r++) {
    u32 e = threadIdx.x + r * MT_THREADS;
    u32 ii = TA ? e % MT_TILE : e / MT_BK, ka = TA ? e / MT_TILE : e % MT_BK;
    As[ka][ii] = a[r];
    u32 jj = TB ? e / MT_BK : e % MT_TILE, kb = TB ? e % MT_BK : e / MT_TILE;
    Bs[kb][jj] = b[r];
  }
}

template <bool TA, bool TB>
__device__ __forceinline__ void matmul_tiny(float* C, const float* A, const float* B, u64 batch,
                                            u64 m, u64 n, u64 p) {
  __shared__ float As[MT_BK][MT_TILE + 1];
  __shared__ float Bs[MT_BK][MT_TILE + 1];
  const u32 tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const u64 tm = (m + MT_TILE - 1) / MT_TILE, tp = (p + MT_TILE - 1) / MT_TILE;
  for (u64 tile = blockIdx.x; tile < batch * tm * tp; tile += gridDim.x) {
    const u64 bt = tile / (tm * tp), rest = tile % (tm * tp);
    const u64 i0 = rest / tp * MT_TILE, j0 = rest % tp * MT_TILE;
    const float* At = A + bt * m * n;
    const float* Bt = B + bt * n * p;
    float acc00 = 0.0f, acc01 = 0.0f, acc10 = 0.0f, acc11 = 0.0f;
    float a[MT_LOADS], b[MT_LOADS];
    if (n > 0) mt_load<TA, TB>(a, b, At, Bt, m, n, p, i0, j0, 0);
    for (u64 k0 = 0; k0 < n; k0 += MT_BK) {
      __syncthreads();  // the previous step's reads of the tiles are done
      mt_stage<TA, TB>(As, Bs, a, b);
      __syncthreads();
      if (k0 + MT_BK < n) mt_load<TA, TB>(a, b, At, Bt, m, n, p, i0, j0, k0 + MT_BK);
      const u32 kn = (u32)min((u64)MT_BK, n - k0);
      const u32 r0 = 2 * ty, c0 = 2 * tx;
      // term kk of the step: the thread's 2 x 2 outputs, one fma each
      auto term = [&](u32 kk) {
        float a0 = As[kk][r0], a1 = As[kk][r0 + 1], b0 = Bs[kk][c0], b1 = Bs[kk][c0 + 1];
        acc00 = __fmaf_rn(a0, b0, acc00);
        acc01 = __fmaf_rn(a0, b1, acc01);
        acc10 = __fmaf_rn(a1, b0, acc10);
        acc11 = __fmaf_rn(a1, b1, acc11);
      };
      if (kn == MT_BK) {
#pragma unroll
        for (u32 kk = 0; kk < MT_BK; kk++) term(kk);
      } else {
        for (u32 kk = 0; kk < kn; kk++) term(kk);
      }
    }
    float* Ct = C + bt * m * p;
    const u64 i = i0 + 2 * ty, j = j0 + 2 * tx;
    if (i < m && j < p) Ct[i * p + j] = acc00;
    if (i < m && j + 1 < p) Ct[i * p + j + 1] = acc01;
    if (i + 1 < m && j < p) Ct[(i + 1) * p + j] = acc10;
    if (i + 1 < m && j + 1 < p) Ct[(i + 1) * p + j + 1] = acc11;
    __syncthreads();  // the next tile's first stage overwrites the tiles
  }
}

#define MT_ENTRY(name, TA, TB)                                                              \
  extern "C" __global__ void __launch_bounds__(MT_THREADS)                                  \
      name(float* C, const float* A, const float* B, u64 batch, u64 m, u64 n, u64 p) {     \
    matmul_tiny<TA, TB>(C, A, B, batch, m, n, p);                                           \
  }
MT_ENTRY(matmul_t_nn, false, false)
MT_ENTRY(matmul_t_nt, false, true)
MT_ENTRY(matmul_t_tn, true, false)
MT_ENTRY(matmul_t_tt, true, true)
