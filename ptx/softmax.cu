// softmax.cu: row softmax and log-softmax of a row-major (rows, cols) buffer and their VJPs, with
// 256-thread blocks. Every row statistic is a row reduction in the order of reduce_axis.cu
// (thread t folds elements t, t+256, ... in order, then the halving tree), except the log-softmax sums of rows of 8192 < cols <= 32768 elements, which
// add each partial's chain in parts (rowstat.cuh: Long rows, long_row_part), so the result
// depends on the shape only, never on the launch geometry or on the code path below. Twins:
// cpu/softmax.go.
#include "common.cuh"
#include "f32math.cuh"
#include "rowstat.cuh"
#include "rowreg.cuh"

// Kinds: 0 softmax, 1 log-softmax, 2 hard-masked softmax (mask != 0 allowed).
//   m = max over (allowed) x;  s = sum over (allowed) exp(x - m)
//   softmax: y = exp(x - m) / s;  log-softmax: y = (x - m) - log(s)
//   masked: y = allowed && s != 0 ? exp(x - m) / s : 0 (a fully blocked row is all zeros)
// Softmax keeps each exp in registers; log-softmax needs only s.
template <int KIND, int J, int R>
__device__ __forceinline__ void softmax_reg(float* out, const float* x, const float* mask, u64 rows,
                                            u64 cols, float* part0, float* part1) {
  row_groups<J, R, KIND == 2>(x, mask, rows, cols, [&](const float* v, u32 in, u32 keep, u64 r0) {
    u32 t = threadIdx.x;
    float m[R], s[R];
#pragma unroll
    for (int i = 0; i < R; i++) {
      m[i] = NEG_INF;
#pragma unroll
      for (int j = 0; j < J; j++)
        if (keep & (1u << (i * J + j))) m[i] = tl_maxf(m[i], v[i * J + j]);
    }
    block_reduce_n<true, R>(part0, m);
    if (KIND == 1) {
#pragma unroll
      for (int i = 0; i < R; i++) {
        s[i] = -0.0f;
#pragma unroll
        for (int j = 0; j < J; j++)
          if (keep & (1u << (i * J + j))) s[i] = s[i] + tl_expf(v[i * J + j] - m[i]);
      }
      block_reduce_n<false, R>(part1, s);
#pragma unroll
      for (int i = 0; i < R; i++) {
        float ls = tl_logf(s[i]);
        float* outr = out + (r0 + i) * cols;
#pragma unroll
        for (int j = 0; j < J; j++)
          if (in & (1u << (i * J + j))) outr[t + j * SM_THREADS] = (v[i * J + j] - m[i]) - ls;
      }
    } else {
      float e[SM_REG];
#pragma unroll
      for (int i = 0; i < R; i++) {
        s[i] = -0.0f;
#pragma unroll
        for (int j = 0; j < J; j++) {
          int k = i * J + j;
          e[k] = 0.0f;
          if (keep & (1u << k)) {
            e[k] = tl_expf(v[k] - m[i]);
            s[i] = s[i] + e[k];
          }
        }
      }
      block_reduce_n<false, R>(part1, s);
#pragma unroll
      for (int i = 0; i < R; i++) {
        float* outr = out + (r0 + i) * cols;
#pragma unroll
        for (int j = 0; j < J; j++) {
          int k = i * J + j;
          if (in & (1u << k)) {
            float y;
            if (KIND == 2) {
              y = ((keep & (1u << k)) && s[i] != 0.0f) ? e[k] / s[i] : 0.0f;
            } else {
              y = e[k] / s[i];
            }
            outr[t + j * SM_THREADS] = y;
          }
        }
      }
    }
  });
}

template <int KIND>
__device__ __forceinline__ void softmax_rows(float* out, const float* x, const float* mask,
                                             u64 rows, u64 cols) {
  __shared__ float part[2][SM_RMAX * SM_THREADS];
  if (cols <= SM_THREADS * 4) {
    softmax_reg<KIND, 4, 4>(out, x, mask, rows, cols, part[0], part[1]);
    return;
  } else if (cols <= SM_THREADS * 16) {
    softmax_reg<KIND, 16, 1>(out, x, mask, rows, cols, part[0], part[1]);
    return;
  }
  u32 t = threadIdx.x;
  for (u64 r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* xr = x + r * cols;
    const float* mr = KIND == 2 ? mask + r * cols : 0;
    float* outr = out + r * cols;
    float v[SM_REG];
    u32 in, keep;
    float m = NEG_INF;
    for (u64 c0 = 0; c0 < cols; c0 += SM_THREADS * SM_REG) {
      rows_load<SM_REG, 1, KIND == 2>(v, in, keep, xr + c0, KIND == 2 ? mr + c0 : 0, 0, 1, cols - c0);
#pragma unroll
      for (int j = 0; j < SM_REG; j++)
        if (keep & (1u << j)) m = tl_maxf(m, v[j]);
    }
    m = block_reduce<true>(part[0], m);
    // The sum of the partial's chain (elements c0 + t + 256 j), for log-softmax in parts of jq
    // elements (long_row_part), each folded from -0.0 into sp and added to s in order.
    const u64 jq = KIND == 1 ? long_row_part(cols) : 0;
    u64 left = jq;  // elements of the current part still to come
    float s = -0.0f, sp = -0.0f;
    for (u64 c0 = 0; c0 < cols; c0 += SM_THREADS * SM_REG) {
      rows_load<SM_REG, 1, KIND == 2>(v, in, keep, xr + c0, KIND == 2 ? mr + c0 : 0, 0, 1, cols - c0);
#pragma unroll
      for (int j = 0; j < SM_REG; j++) {
        if (KIND == 1 && left-- == 0) {
          s = s + sp;
          sp = -0.0f;
          left = jq - 1;
        }
        if (keep & (1u << j)) sp = sp + tl_expf(v[j] - m);
      }
    }
    s = block_reduce<false>(part[1], s + sp);
    float ls = KIND == 1 ? tl_logf(s) : 0.0f;
    for (u64 c0 = 0; c0 < cols; c0 += SM_THREADS * SM_REG) {
      rows_load<SM_REG, 1, KIND == 2>(v, in, keep, xr + c0, KIND == 2 ? mr + c0 : 0, 0, 1, cols - c0);
#pragma unroll
      for (int j = 0; j < SM_REG; j++) {
        if (in & (1u << j)) {
          float y;
          if (KIND == 1) {
            y = (v[j] - m) - ls;
          } else if (KIND == 2) {
            y = ((keep & (1u << j)) && s != 0.0f) ? tl_expf(v[j] - m) / s : 0.0f;
          } else {
            y = tl_expf(v[j] - m) / s;
          }
          outr[c0 + t + j * SM_THREADS] = y;
        }
      }
    }
  }
}

// Grid of the softmax forward kernels: any number of blocks of 256 threads (rows, capped, is the
// intended launch; blocks beyond the row groups exit at once). Four blocks per multiprocessor (64
// registers, no spills under ptxas for sm_90) beat three (80 registers); five spill and lose
// (BENCHMARKS.md, "Figures behind the code").
extern "C" __global__ void __launch_bounds__(SM_THREADS, 4)
    softmax_fwd(float* out, const float* x, u64 rows, u64 cols) {
  softmax_rows<0>(out, x, 0, rows, cols);
}

extern "C" __global__ void __launch_bounds__(SM_THREADS, 4)
    log_softmax_fwd(float* out, const float* x, u64 rows, u64 cols) {
  softmax_rows<1>(out, x, 0, rows, cols);
}

extern "C" __global__ void __launch_bounds__(SM_THREADS, 4)
    masked_softmax_fwd(float* out, const float* x, const float* mask, u64 rows, u64 cols) {
  softmax_rows<2>(out, x, mask, rows, cols);
}

// Long rows (softmax_fwd_long, log_softmax_fwd_long): see long_row_finish in rowstat.cuh. Each
// thread loads its part of the row straight into registers; softmax_sm80.cu has the variant that
// streams the block's next row into shared memory meanwhile.
template <int KIND>
__device__ __forceinline__ void softmax_long_rows(float* out, const float* x, u64 rows, u64 cols) {
  __shared__ float mq[SM_LONG_GROUPS][SM_THREADS];
  __shared__ float sq[SM_LONG_GROUPS][SM_THREADS];
  const LongRow lr = long_row_layout(cols);
  for (u64 r = blockIdx.x; r < rows; r += gridDim.x) {
    float v[SM_LONG];
    long_row_load(v, lr, x + r * cols + lr.first);
    long_row_finish<KIND>(v, lr, mq, sq, out + r * cols + lr.first);
  }
}

extern "C" __global__ void __launch_bounds__(SM_THREADS * SM_LONG_GROUPS, 1)
    softmax_fwd_long(float* out, const float* x, u64 rows, u64 cols) {
  softmax_long_rows<0>(out, x, rows, cols);
}

extern "C" __global__ void __launch_bounds__(SM_THREADS * SM_LONG_GROUPS, 1)
    log_softmax_fwd_long(float* out, const float* x, u64 rows, u64 cols) {
  softmax_long_rows<1>(out, x, rows, cols);
}

// VJPs from the forward output y and the cotangent g, one block per row:
//   softmax:     d = sum(g*y);  dx = y * (g - d)
//   log-softmax: d = sum(g);    dx = g - exp(y) * d
// Rows of at most SM_THREADS*SM_REG elements take a register path like the forward's (y and g
// read once, R rows per group with one barrier, the next group's loads in flight while the
// current one is processed); longer rows are read twice. Both fold d in the order of the row
// reductions (thread t: elements t, t+256, ... from -0.0, then warp_tree).

// rows_load2 is rows_load for the two inputs of a VJP (no mask): a and b at the same places.
template <int J, int R>
__device__ __forceinline__ void rows_load2(float* va, float* vb, u32& in, const float* a,
                                           const float* b, u64 r0, u64 rows, u64 cols) {
  u32 t = threadIdx.x;
  in = 0;
#pragma unroll
  for (int i = 0; i < R; i++) {
    u64 r = r0 + i;
    const float* ar = a + r * cols;
    const float* br = b + r * cols;
#pragma unroll
    for (int j = 0; j < J; j++) {
      u32 c = t + j * SM_THREADS;
      bool e = r < rows && c < cols;
      va[i * J + j] = e ? ar[c] : 0.0f;
      vb[i * J + j] = e ? br[c] : 0.0f;
      if (e) in |= 1u << (i * J + j);
    }
  }
}

template <bool LOG, int J, int R>
__device__ __forceinline__ void softmax_bwd_reg(float* dx, const float* y, const float* g, u64 rows,
                                                u64 cols, float* part0, float* part1) {
  u32 t = threadIdx.x;
  u64 grp = blockIdx.x;
  if (grp * R >= rows) return;
  float vy[SM_REG], vg[SM_REG];
  u32 in;
  rows_load2<J, R>(vy, vg, in, y, g, grp * R, rows, cols);
  u32 flip = 0;
  for (; grp * R < rows; grp += gridDim.x, flip ^= 1) {
    float ny[SM_REG], ng[SM_REG];
    u32 nin;
    rows_load2<J, R>(ny, ng, nin, y, g, (grp + gridDim.x) * R, rows, cols);
    float d[R];
#pragma unroll
    for (int i = 0; i < R; i++) {
      d[i] = -0.0f;
#pragma unroll
      for (int j = 0; j < J; j++) {
        int k = i * J + j;
        if (in & (1u << k)) d[i] = d[i] + (LOG ? vg[k] : vg[k] * vy[k]);
      }
    }
    block_reduce_n<false, R>(flip ? part1 : part0, d);
#pragma unroll
    for (int i = 0; i < R; i++) {
      float* dxr = dx + (grp * R + i) * cols;
#pragma unroll
      for (int j = 0; j < J; j++) {
        int k = i * J + j;
        if (in & (1u << k))
          dxr[t + j * SM_THREADS] = LOG ? vg[k] - tl_expf(vy[k]) * d[i] : vy[k] * (vg[k] - d[i]);
      }
    }
#pragma unroll
    for (int k = 0; k < SM_REG; k++) {
      vy[k] = ny[k];
      vg[k] = ng[k];
    }
    in = nin;
  }
}

template <bool LOG>
__device__ __forceinline__ void softmax_bwd_rows(float* dx, const float* y, const float* g,
                                                 u64 rows, u64 cols) {
  __shared__ float part[2][SM_RMAX * SM_THREADS];
  if (cols <= SM_THREADS * 4) {
    softmax_bwd_reg<LOG, 4, 4>(dx, y, g, rows, cols, part[0], part[1]);
    return;
  } else if (cols <= SM_THREADS * SM_REG) {
    softmax_bwd_reg<LOG, SM_REG, 1>(dx, y, g, rows, cols, part[0], part[1]);
    return;
  }
  u32 t = threadIdx.x;
  u32 flip = 0;
  for (u64 r = blockIdx.x; r < rows; r += gridDim.x, flip ^= 1) {
    const float* yr = y + r * cols;
    const float* gr = g + r * cols;
    float d = -0.0f;
    for (u64 c = t; c < cols; c += SM_THREADS) d = d + (LOG ? gr[c] : gr[c] * yr[c]);
    d = block_reduce<false>(part[flip], d);
    for (u64 c = t; c < cols; c += SM_THREADS)
      dx[r * cols + c] = LOG ? gr[c] - tl_expf(yr[c]) * d : yr[c] * (gr[c] - d);
  }
}

// Grid of the VJP kernels: any number of blocks of 256 threads (rows, capped, is the intended
// launch; blocks beyond the row groups exit at once).
extern "C" __global__ void __launch_bounds__(SM_THREADS, 2)
    softmax_bwd(float* dx, const float* y, const float* g, u64 rows, u64 cols) {
  softmax_bwd_rows<false>(dx, y, g, rows, cols);
}

extern "C" __global__ void __launch_bounds__(SM_THREADS, 2)
    log_softmax_bwd(float* dx, const float* y, const float* g, u64 rows, u64 cols) {
  softmax_bwd_rows<true>(dx, y, g, rows, cols);
}
