// rowstat.cuh: the row statistics of the row kernels (softmax.cu, softmax_sm80.cu, norm.cu): the
// 256-partial halving tree and the long-row engine. Every row statistic is a row reduction in
// the order of reduce_axis.cu (thread t folds elements t, t+256, ... in order, then the halving
// tree), except that the log-softmax sums of rows of 256 * 32 < cols <= SM_LONG_COLS elements
// cut each partial's chain into parts (see Long rows below); the result depends on the shape
// only, never on the launch geometry or the code path.
#pragma once
#include "common.cuh"
#include "f32math.cuh"

#define SM_THREADS 256

template <bool MAX>
__device__ __forceinline__ float tree_op(float a, float b) {
  return MAX ? tl_maxf(a, b) : a + b;
}

// warp_tree_regs evaluates the halving tree p[t] = f(p[t], p[t + s]), s = 128, ..., 1, over 256
// partials in each group of L lanes (L = 32: the whole warp), lane l of a group holding
// p[i] = partial l + L i, and returns partial 0 to every lane of the group. Lane l forms the
// s = 4L, 2L, L levels
//   V[l] = f(f(f(p[0], p[4]), f(p[2], p[6])), f(f(p[1], p[5]), f(p[3], p[7])))
// and the s = L/2, ..., 1 levels are shuffles (lane l combines lane l + s), so the result is the
// tree's, bit for bit. For L < 32 the partials 8L and beyond must be the identity of f (a row
// of at most 8L elements): the levels s >= 8L then combine values with the identity only, which
// changes no bit (x + -0 = x; tl_maxf(x, -Inf) = x; NaN payloads are not part of the contract),
// and are left out.
template <bool MAX, u32 L = 32>
__device__ __forceinline__ float warp_tree_regs(const float (&p)[8]) {
  float a = tree_op<MAX>(tree_op<MAX>(p[0], p[4]), tree_op<MAX>(p[2], p[6]));
  float b = tree_op<MAX>(tree_op<MAX>(p[1], p[5]), tree_op<MAX>(p[3], p[7]));
  float v = tree_op<MAX>(a, b);
#pragma unroll
  for (u32 s = L / 2; s >= 1; s >>= 1) v = tree_op<MAX>(v, __shfl_down_sync(0xffffffffu, v, s, L));
  return __shfl_sync(0xffffffffu, v, 0, L);
}

// warp_tree is warp_tree_regs over the 256 partials p (in shared memory), in every warp.
template <bool MAX>
__device__ __forceinline__ float warp_tree(const float* p) {
  u32 l = threadIdx.x & 31;
  float r[8];
#pragma unroll
  for (int i = 0; i < 8; i++) r[i] = p[l + 32 * i];
  return warp_tree_regs<MAX>(r);
}

// block_reduce_n performs N independent block reductions behind one barrier: v[i] becomes the tree
// (warp_tree) of the 256 threads' partials v[i]. part holds N*SM_THREADS floats. No second barrier
// protects part: consecutive reductions alternate between two buffers, since a thread can write a
// buffer again only after passing the barrier of the reduction in between, which every thread
// reaches after its reads of the buffer.
template <bool MAX, int N>
__device__ __forceinline__ void block_reduce_n(float* part, float* v) {
#pragma unroll
  for (int i = 0; i < N; i++) part[i * SM_THREADS + threadIdx.x] = v[i];
  __syncthreads();
#pragma unroll
  for (int i = 0; i < N; i++) v[i] = warp_tree<MAX>(part + i * SM_THREADS);
}

template <bool MAX>
__device__ __forceinline__ float block_reduce(float* part, float v) {
  block_reduce_n<MAX, 1>(part, &v);
  return v;
}

#define NEG_INF __uint_as_float(0xff800000u)

// Long rows: a row of up to SM_LONG_COLS elements is held in registers across the block, read
// once and written once. The block is nq groups of 256 threads; thread t of group q (threadIdx.x
// = 256 q + t) stands for the part j in [q*jq, (q+1)*jq) of the chain of partial t (elements
// t + 256 j, j ascending, as above), jq = ceil(ceil(cols/256) / nq) <= SM_LONG, and holds those
// elements in registers. The statistics:
//   - max: each group folds its part from -Inf, and partial t is the fold of the groups' results
//     in group order. This is the 256-thread block's result, bit for bit: the fold of tl_maxf
//     over a sequence is the last element (in order) equal to its maximum, or -Inf for none, or
//     NaN when it holds one (NaN + anything is NaN), and combining two such folds in order gives
//     the fold of the concatenation.
//   - softmax's sum: one chain, carried across the groups in order (through shared memory, one
//     barrier per group), so every addition is the 256-thread block's, in the same order.
//   - log-softmax's sum, by rule a different one when nq > 1: each partial's chain is cut into
//     the groups' parts, each folded from -0.0, and partial t is their sum in group order
//     (longRowPart in cpu/softmax.go), so that all groups compute their exps at once.
// Then the same warp_tree.
// Launch: blockDim.x = 256 * ceil(ceil(cols/256) / SM_LONG) threads (at most 1024); a block of
// other shape traps.
#define SM_LONG 32
#define SM_LONG_GROUPS 4
#define SM_LONG_COLS (SM_THREADS * SM_LONG_GROUPS * SM_LONG)

// warp_tree_groups is warp_tree over the partials p[i] = f(...f(f(g[0][i], g[1][i]), g[2][i])...,
// g[nq-1][i]).
template <bool MAX>
__device__ __forceinline__ float warp_tree_groups(const float (*g)[SM_THREADS], u32 nq) {
  u32 l = threadIdx.x & 31;
  float p[8];
#pragma unroll
  for (int i = 0; i < 8; i++) {
    p[i] = g[0][l + 32 * i];
#pragma unroll
    for (u32 q = 1; q < SM_LONG_GROUPS; q++)
      if (q < nq) p[i] = tree_op<MAX>(p[i], g[q][l + 32 * i]);
  }
  return warp_tree_regs<MAX>(p);
}

// long_row_groups is the number nq of 256-thread groups that hold a row of cols elements in the
// long-row engine: ceil(jl / SM_LONG), at least 1, for jl = ceil(cols / 256) elements per partial.
__device__ __forceinline__ u64 long_row_groups(u64 cols) {
  const u64 jl = (cols + SM_THREADS - 1) / SM_THREADS;
  return max((jl + SM_LONG - 1) / SM_LONG, (u64)1);
}

// long_row_part is the number of elements per partial in each part of a log-softmax row sum of
// cols elements (twin: longRowPart in cpu/softmax.go): the long-row engine's jq = ceil(jl / nq)
// (nq = long_row_groups) for rows of 256 * SM_LONG < cols <= SM_LONG_COLS, else jl (one part).
__device__ __forceinline__ u64 long_row_part(u64 cols) {
  const u64 jl = (cols + SM_THREADS - 1) / SM_THREADS;
  if (cols > SM_LONG_COLS) return jl;
  const u64 nq = long_row_groups(cols);
  return (jl + nq - 1) / nq;
}

// LongRow is this thread's place in a long row: its group q of nq, its partial t, the offset
// first = t + 256 j0 of its first element, and its element count nk (elements first + 256 k,
// k < nk).
struct LongRow {
  u32 t, q, nq, nk;
  u64 first;
};

// long_row_layout returns the thread's LongRow for rows of cols elements, trapping when the block
// is not the one the Launch rule of Long rows (above) gives: the log-softmax sum's parts depend
// on it.
__device__ __forceinline__ LongRow long_row_layout(u64 cols) {
  LongRow lr;
  lr.t = threadIdx.x & (SM_THREADS - 1);
  lr.q = threadIdx.x / SM_THREADS;
  lr.nq = blockDim.x / SM_THREADS;
  if (blockDim.x % SM_THREADS != 0 || lr.nq != long_row_groups(cols) || lr.nq > SM_LONG_GROUPS)
    __trap();
  const u64 jq = long_row_part(cols);
  const u64 j0 = lr.q * jq, cnt = (cols + SM_THREADS - 1 - lr.t) / SM_THREADS;
  lr.nk = (u32)(cnt > j0 ? min(cnt - j0, jq) : 0);
  lr.first = lr.t + j0 * SM_THREADS;
  return lr;
}

// long_row_load fills the thread's elements of a row: v[k] = src[256 k] for k < lr.nk, 0 for the
// others (src = the row + lr.first, in global or shared memory).
__device__ __forceinline__ void long_row_load(float (&v)[SM_LONG], const LongRow& lr,
                                              const float* src) {
#pragma unroll
  for (int k = 0; k < SM_LONG; k++) v[k] = k < lr.nk ? src[k * SM_THREADS] : 0.0f;
}

// long_row_finish computes the row statistics from the thread's elements v[k] (k < nk; the others
// 0) and writes its outputs outr[256 k] (outr = the output row + lr.first). KIND 0: softmax
// exp(x - m) / s, whose sum is one chain carried across the groups in order (all exps first, in
// place, then group q continues from group q-1's running sum, handed over in sq[q - 1]);
// KIND 1: log-softmax (x - m) - log(s), which keeps x - m in the registers for its output and
// computes the exps as each group folds its own part of the sum, all groups at once. mq and sq are
// block-shared; the function's barriers order their reuse by the next row.
template <int KIND>
__device__ __forceinline__ void long_row_finish(float (&v)[SM_LONG], const LongRow& lr,
                                                float (*mq)[SM_THREADS], float (*sq)[SM_THREADS],
                                                float* outr) {
  float m = NEG_INF;
#pragma unroll
  for (int k = 0; k < SM_LONG; k++)
    if (k < lr.nk) m = tl_maxf(m, v[k]);
  mq[lr.q][lr.t] = m;
  __syncthreads();
  m = warp_tree_groups<true>(mq, lr.nq);
  // From here v holds x - m (softmax: exp(x - m)).
#pragma unroll
  for (int k = 0; k < SM_LONG; k++) v[k] = v[k] - m;
  float s = -0.0f;
  if (KIND == 0) {
#pragma unroll
    for (int k = 0; k < SM_LONG; k++)
      if (k < lr.nk) v[k] = tl_expf(v[k]);
    for (u32 g = 0; g < lr.nq; g++) {
      if (lr.q == g) {
        if (g > 0) s = sq[g - 1][lr.t];
#pragma unroll
        for (int k = 0; k < SM_LONG; k++)
          if (k < lr.nk) s = s + v[k];
        sq[g][lr.t] = s;
      }
      __syncthreads();
    }
    s = warp_tree<false>(sq[lr.nq - 1]);
#pragma unroll
    for (int k = 0; k < SM_LONG; k++)
      if (k < lr.nk) outr[k * SM_THREADS] = v[k] / s;
  } else {
#pragma unroll
    for (int k = 0; k < SM_LONG; k++)
      if (k < lr.nk) s = s + tl_expf(v[k]);
    sq[lr.q][lr.t] = s;
    __syncthreads();
    float ls = tl_logf(warp_tree_groups<false>(sq, lr.nq));
#pragma unroll
    for (int k = 0; k < SM_LONG; k++)
      if (k < lr.nk) outr[k * SM_THREADS] = v[k] - ls;
  }
}
