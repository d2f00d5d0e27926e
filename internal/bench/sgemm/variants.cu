// variants.cu: other configurations of ptx/matmul.cu for the tile sweep (run.sh sweep), and
// experimental kernels that were measured but not shipped. Only nn entries; names v<i>. run.sh
// compiles it to PTX on the device with the flags of ptx/gen.sh (compute_75 where the device's
// nvcc no longer targets compute_70, as nvcc 13): compare a variant with the shipped families in
// the same run only as a lead. Each variant is checked bitwise (nn, three shapes) before timing.
//
// The mp_* kernels (whole-K panels in shared memory, no per-step barriers, four or three blocks
// per multiprocessor) measured 20-27 TFLOP/s on the bmm 64 x (512x64 @ 64x512) against 30 for
// matmul_s (NOTES.md, 2026-11-24): kept here as the starting point for the next attempt.
#define MM_NO_ENTRIES
#include "../../../ptx/matmul.cu"

// ---- Whole-K panels (mp_*), an experiment for short K ----
//
// For short K (the batched 512 x 64 x 512 products of attention heads): per tile, a block copies
// the operands' K panels of up to MP_KP k into shared memory as they are stored (A and B each
// either k-major, [k][outer], or outer-major, [outer][k]; no transposition, so no bank
// conflicts on the way in), then runs all their k with no barrier in between: two barriers per
// panel instead of two per 16 k, and no register double buffering, so a thread fits in 128
// registers and four blocks of 48 KB (static) share a multiprocessor: 16 warps that drift apart,
// so that one block's loads and stores overlap the others' FMAs.
#define MP_KP 64

// MpPanel copies one operand's panel, NR rows x NC floats of the operand as stored, into shared
// memory [NR][NC]. KROWS: the rows are k (A transposed, B as stored) and the columns the outer
// index (m or p), clamped to its last one past the matrix (those feed only outputs that are
// never stored); else the rows are the outer index (clamped) and the columns k. k past n is
// never loaded: rows of such k are not loaded (their pieces are 0 and never read), columns of
// such k are 0. With !KROWS the 16-byte piece q of row r is stored at q ^ ((r >> 2) & 7) of its
// row (NC = MP_KP = 16 pieces), so that the compute loop's 16-byte reads of 4 k of the rows of
// neighbouring threads fall in distinct banks.
template <int NR, int NC, int NT, bool KROWS>
struct MpPanel {
  static constexpr int QR = NC / 4;       // pieces per row
  static constexpr int P = NR * QR / NT;  // pieces per thread
  static constexpr int RS = NT / QR;      // rows between a thread's pieces
  static_assert(P >= 1 && P * NT == NR * QR && NT % QR == 0, "uneven panel loader");
  static_assert(KROWS || NC == 16 * 4, "outer-major panels are swizzled for 16 pieces a row");

  // load reads the thread's pieces F .. F+N-1 of the panel whose first row and column are r0
  // and c0 in the matrix base (leading dimension ld, outer extent M, k extent n).
  // inner: the panel lies inside the matrix (no clamping, every k < n) and vec holds: then the
  // pieces are plain 16-byte loads RS rows apart.
  template <int F, int N>
  static __device__ __forceinline__ void load(float4 (&v)[N], const float* base, u64 ld, u64 r0,
                                              u64 c0, u64 M, u64 n, bool vec, bool inner) {
    const u32 q = threadIdx.x % QR, row0 = threadIdx.x / QR;
    if (inner) {
      const float* r = base + (r0 + row0 + F * RS) * ld + c0 + 4 * q;
      const u64 step = RS * ld;
#pragma unroll
      for (int e = 0; e < N; e++) v[e] = __ldg(reinterpret_cast<const float4*>(r + e * step));
      return;
    }
#pragma unroll
    for (int e = 0; e < N; e++) {
      const u64 row = r0 + row0 + (u64)(F + e) * RS;
      float4 x = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      if (KROWS) {
        if (row < n) {
          const float* r = base + row * ld;
          const u64 o = c0 + 4 * q;
          if (vec) {
            x = __ldg(reinterpret_cast<const float4*>(r + (o < M ? o : M - 4)));
          } else {
            x.x = __ldg(r + (o + 0 < M ? o + 0 : M - 1));
            x.y = __ldg(r + (o + 1 < M ? o + 1 : M - 1));
            x.z = __ldg(r + (o + 2 < M ? o + 2 : M - 1));
            x.w = __ldg(r + (o + 3 < M ? o + 3 : M - 1));
          }
        }
      } else {
        const float* r = base + (row < M ? row : M - 1) * ld;
        const u64 k = c0 + 4 * q;
        if (vec) {
          if (k < n) x = __ldg(reinterpret_cast<const float4*>(r + k));
        } else {
          if (k + 0 < n) x.x = __ldg(r + k + 0);
          if (k + 1 < n) x.y = __ldg(r + k + 1);
          if (k + 2 < n) x.z = __ldg(r + k + 2);
          if (k + 3 < n) x.w = __ldg(r + k + 3);
        }
      }
      v[e] = x;
    }
  }

  template <int F, int N>
  static __device__ __forceinline__ void store(float* s, const float4 (&v)[N]) {
    const u32 q = threadIdx.x % QR, row0 = threadIdx.x / QR;
#pragma unroll
    for (int e = 0; e < N; e++) {
      const u32 row = row0 + (F + e) * RS;
      const u32 qs = KROWS ? q : q ^ ((row >> 2) & 7u);
      *reinterpret_cast<float4*>(s + row * NC + 4 * qs) = v[e];
    }
  }
};

// mp_group runs k = 4q .. 4q+kn-1 of the panels in shared memory (kn = 4 unless PARTIAL) on the
// thread's TM x TN tile. xa[h]: byte offset in sa of rows rt + h*SA (TA: of column rt + h*SA of
// k row 0; else of the row, xor its swizzle); yb likewise for the columns ct + h*SB of sb. The
// A values of the 4 k are read first (TM/4 x 4 16-byte reads), then B 16 bytes at a time, each
// followed by its FMAs; every accumulator sees its k in ascending order.
template <bool TA, bool TB, bool PARTIAL, int BM, int BN, int TM, int TN>
__device__ __forceinline__ void mp_group(float (&acc)[TM][TN], const char* sa, const char* sb,
                                         const u32 (&xa)[TM / 4], const u32 (&yb)[TN / 4], u32 q,
                                         u32 kn) {
  float a[TM][4];
#pragma unroll
  for (int h = 0; h < TM / 4; h++) {
    if (TA) {
#pragma unroll
      for (int kk = 0; kk < 4; kk++) {
        if (PARTIAL && (u32)kk >= kn) break;
        const float4 v = *reinterpret_cast<const float4*>(sa + xa[h] + q * (16 * BM) + kk * (4 * BM));
        a[4 * h + 0][kk] = v.x;
        a[4 * h + 1][kk] = v.y;
        a[4 * h + 2][kk] = v.z;
        a[4 * h + 3][kk] = v.w;
      }
    } else {
      const char* r = sa + (xa[h] ^ (q << 4));
#pragma unroll
      for (int ii = 0; ii < 4; ii++) {
        const float4 v = *reinterpret_cast<const float4*>(r + ii * (4 * MP_KP));
        a[4 * h + ii][0] = v.x;
        a[4 * h + ii][1] = v.y;
        a[4 * h + ii][2] = v.z;
        a[4 * h + ii][3] = v.w;
      }
    }
  }
  if (!TB) {
#pragma unroll
    for (int kk = 0; kk < 4; kk++) {
      if (PARTIAL && (u32)kk >= kn) break;
#pragma unroll
      for (int h = 0; h < TN / 4; h++) {
        const float4 v = *reinterpret_cast<const float4*>(sb + yb[h] + q * (16 * BN) + kk * (4 * BN));
        const float b[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
        for (int i = 0; i < TM; i++)
#pragma unroll
          for (int jj = 0; jj < 4; jj++)
            acc[i][4 * h + jj] = __fmaf_rn(a[i][kk], b[jj], acc[i][4 * h + jj]);
      }
    }
  } else {
#pragma unroll
    for (int h = 0; h < TN / 4; h++) {
      const char* r = sb + (yb[h] ^ (q << 4));
#pragma unroll
      for (int jj = 0; jj < 4; jj++) {
        const float4 v = *reinterpret_cast<const float4*>(r + jj * (4 * MP_KP));
        const float b[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
        for (int kk = 0; kk < 4; kk++) {
          if (PARTIAL && (u32)kk >= kn) break;
#pragma unroll
          for (int i = 0; i < TM; i++)
            acc[i][4 * h + jj] = __fmaf_rn(a[i][kk], b[kk], acc[i][4 * h + jj]);
        }
      }
    }
  }
}

// mp_panel runs the kr (1 .. MP_KP) k of the panels in shared memory.
template <bool TA, bool TB, int BM, int BN, int TM, int TN, int UNROLL>
__device__ __forceinline__ void mp_panel(float (&acc)[TM][TN], const float* sA, const float* sB,
                                         const u32 (&xa)[TM / 4], const u32 (&yb)[TN / 4], u32 kr) {
  const char* sa = reinterpret_cast<const char*>(sA);
  const char* sb = reinterpret_cast<const char*>(sB);
  if (kr == MP_KP) {
#pragma unroll UNROLL
    for (u32 q = 0; q < MP_KP / 4; q++)
      mp_group<TA, TB, false, BM, BN, TM, TN>(acc, sa, sb, xa, yb, q, 4);
  } else {
    const u32 qf = kr / 4;
#pragma unroll 1
    for (u32 q = 0; q < qf; q++) mp_group<TA, TB, false, BM, BN, TM, TN>(acc, sa, sb, xa, yb, q, 4);
    if (kr % 4 != 0) mp_group<TA, TB, true, BM, BN, TM, TN>(acc, sa, sb, xa, yb, qf, kr % 4);
  }
}

// mp_tiles: the tiles g = blockIdx.x, blockIdx.x + gridDim.x, ... (as mm_tiles), K in panels
// of MP_KP. The first panel of a tile is read into registers at once (the accumulators are free
// then); later panels (n > MP_KP) a third at a time.
template <bool TA, bool TB, int BM, int BN, int WM, int WN, int TM, int TN, int UNROLL>
__device__ __forceinline__ void mp_tiles(float* __restrict__ C, const float* __restrict__ A,
                                         const float* __restrict__ B, u64 batch, u64 m, u64 n,
                                         u64 p, bool VEC, float* sA, float* sB) {
  constexpr int NT = (BM / WM) * (BN / WN) * 32;
  constexpr int TX = WN / TN;
  constexpr int SA = (WM / TM) * 4;
  constexpr int SB = TX * 4;
  static_assert((WM / TM) * (WN / TN) == 32, "a warp tile must hold 32 thread tiles");
  static_assert(TM % 4 == 0 && TN % 4 == 0, "4-float pieces");
  typedef MpPanel<TA ? MP_KP : BM, TA ? BM : MP_KP, NT, TA> PA;
  typedef MpPanel<TB ? BN : MP_KP, TB ? MP_KP : BN, NT, !TB> PB;
  static_assert(PB::P % 2 == 0, "B panel loads in halves");

  const u32 warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const u32 rt = (warp / (BN / WN)) * WM + (lane / TX) * 4;
  const u32 ct = (warp % (BN / WN)) * WN + (lane % TX) * 4;
  u32 xa[TM / 4], yb[TN / 4];
#pragma unroll
  for (int h = 0; h < TM / 4; h++) {
    const u32 r = rt + h * SA;
    xa[h] = TA ? 4 * r : (4 * MP_KP * r) ^ (((r >> 2) & 7u) << 4);
  }
#pragma unroll
  for (int h = 0; h < TN / 4; h++) {
    const u32 c = ct + h * SB;
    yb[h] = TB ? (4 * MP_KP * c) ^ (((c >> 2) & 7u) << 4) : 4 * c;
  }

  const bool vecC = mm_aligned16(C) && p % 4 == 0;
  const u32 tilesM = (u32)((m + BM - 1) / BM), tilesN = (u32)((p + BN - 1) / BN);
  const u64 total = batch * tilesM * tilesN;
  const u64 lda = TA ? m : n, ldb = TB ? n : p;

  float acc[TM][TN];
  for (u64 g = blockIdx.x; g < total; g += gridDim.x) {
    const MmTile cur = mm_tile_at(g, tilesM, tilesN);
    const float* At = A + cur.t * m * n;
    const float* Bt = B + cur.t * n * p;
    const u64 om = (u64)cur.tm * BM, op = (u64)cur.tn * BN;
#pragma unroll
    for (int i = 0; i < TM; i++)
#pragma unroll
      for (int j = 0; j < TN; j++) acc[i][j] = 0.0f;
    const bool rowsIn = om + BM <= m && op + BN <= p;
    if (n > 0) {
      const bool inner = VEC && rowsIn && n >= MP_KP;
      float4 ra[PA::P], rb[PB::P];
      PA::template load<0, PA::P>(ra, At, lda, TA ? 0 : om, TA ? om : 0, m, n, VEC, inner);
      PB::template load<0, PB::P>(rb, Bt, ldb, TB ? op : 0, TB ? 0 : op, p, n, VEC, inner);
      __syncthreads();  // the previous tile's reads of the panels are done
      PA::template store<0, PA::P>(sA, ra);
      PB::template store<0, PB::P>(sB, rb);
      __syncthreads();
      mp_panel<TA, TB, BM, BN, TM, TN, UNROLL>(acc, sA, sB, xa, yb,
                                                (u32)(n < MP_KP ? n : (u64)MP_KP));
    }
    for (u64 k0 = MP_KP; k0 < n; k0 += MP_KP) {
      constexpr int H = PB::P / 2;
      const bool inner = VEC && rowsIn && k0 + MP_KP <= n;
      float4 ra[PA::P], rb[H];
      PA::template load<0, PA::P>(ra, At, lda, TA ? k0 : om, TA ? om : k0, m, n, VEC, inner);
      __syncthreads();
      PA::template store<0, PA::P>(sA, ra);
      PB::template load<0, H>(rb, Bt, ldb, TB ? op : k0, TB ? k0 : op, p, n, VEC, inner);
      PB::template store<0, H>(sB, rb);
      PB::template load<H, H>(rb, Bt, ldb, TB ? op : k0, TB ? k0 : op, p, n, VEC, inner);
      PB::template store<H, H>(sB, rb);
      __syncthreads();
      const u64 kr = n - k0;
      mp_panel<TA, TB, BM, BN, TM, TN, UNROLL>(acc, sA, sB, xa, yb,
                                                (u32)(kr < MP_KP ? kr : (u64)MP_KP));
    }
    mm_store<BM, BN, TM, TN, SA, SB>(acc, C, cur, rt, ct, m, p, vecC);
  }
}

template <bool TA, bool TB, int BM, int BN, int WM, int WN, int TM, int TN, int UNROLL>
__device__ __forceinline__ void mp_body(float* __restrict__ C, const float* __restrict__ A,
                                        const float* __restrict__ B, u64 batch, u64 m, u64 n,
                                        u64 p) {
  __shared__ __align__(16) float sA[MP_KP * BM];
  __shared__ __align__(16) float sB[MP_KP * BN];
  const bool vec = mm_aligned16(A) && (TA ? m : n) % 4 == 0 && mm_aligned16(B) &&
                   (TB ? n : p) % 4 == 0;
  mp_tiles<TA, TB, BM, BN, WM, WN, TM, TN, UNROLL>(C, A, B, batch, m, n, p, vec, sA, sB);
}

#define MP_ENTRY(name, TA, TB, BM, BN, WM, WN, TM, TN, UNROLL, MINB)                        \
  extern "C" __global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32, MINB)               \
      name(float* __restrict__ C, const float* __restrict__ A, const float* __restrict__ B,     \
           u64 batch, u64 m, u64 n, u64 p) {                                                    \
    mp_body<TA, TB, BM, BN, WM, WN, TM, TN, UNROLL>(C, A, B, batch, m, n, p);               \
  }

#define MP_FAMILY(prefix, BM, BN, WM, WN, TM, TN, UNROLL, MINB)                 \
  MP_ENTRY(prefix##_nn, false, false, BM, BN, WM, WN, TM, TN, UNROLL, MINB)   \
  MP_ENTRY(prefix##_nt, false, true, BM, BN, WM, WN, TM, TN, UNROLL, MINB)    \
  MP_ENTRY(prefix##_tn, true, false, BM, BN, WM, WN, TM, TN, UNROLL, MINB)    \
  MP_ENTRY(prefix##_tt, true, true, BM, BN, WM, WN, TM, TN, UNROLL, MINB)


// The table in sgemm.cu's main must list the same configurations (BM, BN, threads) in order.
//       name   TA     TB     BM   BN   WM  WN  TM  TN UNROLL MINB
MP_ENTRY(v0, false, false, 64, 128, 32, 64, 8, 8, 4, 3)
MP_ENTRY(v1, false, false, 64, 128, 32, 64, 8, 8, 4, 4)
MP_ENTRY(v2, false, false, 64, 128, 32, 64, 4, 16, 4, 4)
MP_ENTRY(v3, false, false, 64, 128, 32, 64, 4, 16, 4, 3)
MP_ENTRY(v4, false, false, 128, 64, 64, 32, 8, 8, 4, 3)
// matmul_s's configuration held to three blocks per multiprocessor (at most 170 registers): the
// bmm's lead from its stall profile (more warps to hide the short K's prologue and epilogue).
// Measured 2026-11-27 (NOTES.md): 168 registers with spills, 26.4-28.2 TFLOP/s against matmul_s's
// 30.3 on the bmm: refuted.
MM_ENTRY(v5, false, false, 64, 128, 16, 32, 64, 8, 8, 3)
