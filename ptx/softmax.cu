// softmax.cu: row softmax and log-softmax of a row-major (rows, cols) buffer and their VJPs, and
// the fused layer norm forward and backward, with 256-thread blocks. Every row statistic is a row
// reduction in the order of reduce_axis.cu (thread t folds elements t, t+256, ... in order, then
// the halving tree), except the log-softmax sums of rows of 8192 < cols <= 32768 elements, which
// add each partial's chain in parts (rowstat.cuh: Long rows, long_row_part), so the result
// depends on the shape only, never on the launch geometry or on the code path below. Twins:
// cpu/softmax.go.
#include "common.cuh"
#include "f32math.cuh"
#include "rowstat.cuh"

// Register paths. Rows of at most SM_THREADS*SM_REG elements are held in registers, R rows at a
// time (R = 4 for rows of at most 1024 elements, else 1; J = SM_REG/R): thread t holds
// v[i*J + j] = x[r0 + i, t + 256 j]. The R rows' statistics share each barrier, and the next
// group's loads are issued before the current group is processed. Longer rows take loop paths
// (in tiles of SM_REG elements per thread) that compute the same values in the same order.
#define SM_REG 16
#define SM_RMAX 4

// rows_load loads the group of rows r0 .. r0+R-1 into v (0 outside the matrix, without reading);
// bit i*J + j of in is set where the element exists, of keep where it also takes part in the
// statistics (mask != 0 when MASK).
template <int J, int R, bool MASK>
__device__ __forceinline__ void rows_load(float* v, u32& in, u32& keep, const float* x,
                                          const float* mask, u64 r0, u64 rows, u64 cols) {
  u32 t = threadIdx.x;
  in = 0;
  keep = 0;
#pragma unroll
  for (int i = 0; i < R; i++) {
    u64 r = r0 + i;
    const float* xr = x + r * cols;
    const float* mr = MASK ? mask + r * cols : 0;
#pragma unroll
    for (int j = 0; j < J; j++) {
      u32 c = t + j * SM_THREADS;
      bool e = r < rows && c < cols;
      v[i * J + j] = e ? xr[c] : 0.0f;
      if (e) {
        in |= 1u << (i * J + j);
        if (!MASK || mr[c] != 0.0f) keep |= 1u << (i * J + j);
      }
    }
  }
}

// row_groups runs body(v, in, keep, r0) over the groups of R rows r0 = R*g, g = blockIdx.x,
// blockIdx.x + gridDim.x, ..., loading each group while the previous one is processed.
template <int J, int R, bool MASK, class Body>
__device__ __forceinline__ void row_groups(const float* x, const float* mask, u64 rows, u64 cols,
                                           Body body) {
  u64 g = blockIdx.x;
  if (g * R >= rows) return;
  float v[SM_REG];
  u32 in, keep;
  rows_load<J, R, MASK>(v, in, keep, x, mask, g * R, rows, cols);
  for (; g * R < rows; g += gridDim.x) {
    float vn[SM_REG];
    u32 inn, keepn;
    rows_load<J, R, MASK>(vn, inn, keepn, x, mask, (g + gridDim.x) * R, rows, cols);
    body(v, in, keep, g * R);
#pragma unroll
    for (int k = 0; k < SM_REG; k++) v[k] = vn[k];
    in = inn;
    keep = keepn;
  }
}

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
// registers, no spills under ptxas for sm_90): measured on an H200 (internal/bench/rowkern,
// 16384 x 4096), softmax 0.185 -> 0.170 ms and log-softmax 0.164 -> 0.155 against three blocks
// (80 registers); five blocks spill and lose. layer_norm_fwd stays at three: at 64 registers its
// register path spills (0.167 -> 0.203 ms).
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

// Layer norm over the rows of a row-major (rows, cols) buffer, with per-column gamma and beta.
// Every row sum is a block reduction (thread t folds elements t, t+256, ... from -0.0, then the
// halving tree). Rows of at most 4096 elements take register paths like softmax's (x read once in
// the forward; dout and x read once in the backward's fused scheme); longer rows are read again
// for each pass, in tiles of SM_REG elements per thread. All compute the same values in the same
// order.
//
// The forward writes out and the per-row statistics mean and sd only, as PyTorch does, not the
// normalized matrix xhat with inv_std (the reference's signature): that saves a rows*cols write in
// the forward and a rows*cols read in the backward, which reads x instead of xhat and recomputes
//   xhat = (x - mean[r]) / sd[r];  inv_std = 1 / sd[r]
// with the forward's operations, so every value is the one the reference's scheme computes.
//
// layer_norm_fwd: grid = rows blocks of 256 threads, capped at will (blocks stride over the rows;
// blocks beyond the row groups exit at once; the values never depend on the grid); rows of
// 1024 < cols <= 4096 take layer_norm_fwd_row (below), with the same values. Per row r:
//   m = rowsum(x) * inv_cols;  mean[r] = m
//   var = rowsum((x - m) * (x - m)) * inv_cols
//   s = sqrt_rn(var + eps);  sd[r] = s
//   xhat = (x - m) / s;  out = xhat * gamma[c] + beta[c]
template <int J, int R>
__device__ __forceinline__ void layer_norm_fwd_reg(float* out, float* mean, float* sd,
                                                   const float* x, const float* gamma,
                                                   const float* beta, u64 rows, u64 cols,
                                                   float inv_cols, float eps, float* part0,
                                                   float* part1) {
  row_groups<J, R, false>(x, 0, rows, cols, [&](const float* v, u32 in, u32 keep, u64 r0) {
    u32 t = threadIdx.x;
    float m[R], s[R];
#pragma unroll
    for (int i = 0; i < R; i++) {
      m[i] = -0.0f;
#pragma unroll
      for (int j = 0; j < J; j++)
        if (in & (1u << (i * J + j))) m[i] = m[i] + v[i * J + j];
    }
    block_reduce_n<false, R>(part0, m);
#pragma unroll
    for (int i = 0; i < R; i++) {
      m[i] = m[i] * inv_cols;
      s[i] = -0.0f;
#pragma unroll
      for (int j = 0; j < J; j++) {
        if (in & (1u << (i * J + j))) {
          float d = v[i * J + j] - m[i];
          s[i] = s[i] + d * d;
        }
      }
    }
    block_reduce_n<false, R>(part1, s);
#pragma unroll
    for (int i = 0; i < R; i++) {
      s[i] = __fsqrt_rn(s[i] * inv_cols + eps);
      if (t == 0 && r0 + i < rows) {
        mean[r0 + i] = m[i];
        sd[r0 + i] = s[i];
      }
    }
#pragma unroll
    for (int j = 0; j < J; j++) {
      u32 c = t + j * SM_THREADS;
      if (c < cols) {
        float gc = gamma[c], bc = beta[c];
#pragma unroll
        for (int i = 0; i < R; i++) {
          if (in & (1u << (i * J + j))) {
            float h = (v[i * J + j] - m[i]) / s[i];
            out[(r0 + i) * cols + c] = h * gc + bc;
          }
        }
      }
    }
  });
}

extern "C" __global__ void __launch_bounds__(SM_THREADS, 3)
    layer_norm_fwd(float* out, float* mean, float* sd, const float* x, const float* gamma,
                   const float* beta, u64 rows, u64 cols, float inv_cols, float eps) {
  __shared__ float part[2][SM_RMAX * SM_THREADS];
  if (cols <= SM_THREADS * 4) {
    layer_norm_fwd_reg<4, 4>(out, mean, sd, x, gamma, beta, rows, cols, inv_cols, eps, part[0],
                             part[1]);
    return;
  } else if (cols <= SM_THREADS * 16) {
    layer_norm_fwd_reg<16, 1>(out, mean, sd, x, gamma, beta, rows, cols, inv_cols, eps, part[0],
                              part[1]);
    return;
  }
  u32 t = threadIdx.x;
  for (u64 r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* xr = x + r * cols;
    float* outr = out + r * cols;
    float q = -0.0f;
    for (u64 c0 = t; c0 < cols; c0 += SM_THREADS * SM_REG) {
      float v[SM_REG];
#pragma unroll
      for (int j = 0; j < SM_REG; j++) {
        u64 c = c0 + j * SM_THREADS;
        v[j] = c < cols ? xr[c] : 0.0f;
      }
#pragma unroll
      for (int j = 0; j < SM_REG; j++)
        if (c0 + j * SM_THREADS < cols) q = q + v[j];
    }
    float m = block_reduce<false>(part[0], q) * inv_cols;
    q = -0.0f;
    for (u64 c0 = t; c0 < cols; c0 += SM_THREADS * SM_REG) {
      float v[SM_REG];
#pragma unroll
      for (int j = 0; j < SM_REG; j++) {
        u64 c = c0 + j * SM_THREADS;
        v[j] = c < cols ? xr[c] : 0.0f;
      }
#pragma unroll
      for (int j = 0; j < SM_REG; j++) {
        if (c0 + j * SM_THREADS < cols) {
          float d = v[j] - m;
          q = q + d * d;
        }
      }
    }
    float s = __fsqrt_rn(block_reduce<false>(part[1], q) * inv_cols + eps);
    if (t == 0) {
      mean[r] = m;
      sd[r] = s;
    }
    for (u64 c0 = t; c0 < cols; c0 += SM_THREADS * SM_REG) {
      float v[SM_REG];
#pragma unroll
      for (int j = 0; j < SM_REG; j++) {
        u64 c = c0 + j * SM_THREADS;
        v[j] = c < cols ? xr[c] : 0.0f;
      }
#pragma unroll
      for (int j = 0; j < SM_REG; j++) {
        u64 c = c0 + j * SM_THREADS;
        if (c < cols) outr[c] = ((v[j] - m) / s) * gamma[c] + beta[c];
      }
    }
  }
}

// layer_norm_fwd_row: layer_norm_fwd for rows of 1024 < cols <= 4096 (16 elements per thread),
// one row per block iteration, without loading the next row while this one is processed: 48
// registers instead of layer_norm_fwd's 80, so five blocks per multiprocessor instead of three,
// which keep more loads in flight than the prefetch did (internal/bench/rowkern, H200, 16384 x
// 4096: 0.167 -> 0.148 ms). The operations and their order are layer_norm_fwd_reg's.
extern "C" __global__ void __launch_bounds__(SM_THREADS, 5)
    layer_norm_fwd_row(float* out, float* mean, float* sd, const float* x, const float* gamma,
                       const float* beta, u64 rows, u64 cols, float inv_cols, float eps) {
  __shared__ float part[2][SM_THREADS];
  const u32 t = threadIdx.x;
  for (u64 r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* xr = x + r * cols;
    float v[SM_REG];
#pragma unroll
    for (int j = 0; j < SM_REG; j++) {
      u32 c = t + j * SM_THREADS;
      v[j] = c < cols ? xr[c] : 0.0f;
    }
    float q = -0.0f;
#pragma unroll
    for (int j = 0; j < SM_REG; j++)
      if (t + j * SM_THREADS < cols) q = q + v[j];
    const float m = block_reduce<false>(part[0], q) * inv_cols;
    q = -0.0f;
#pragma unroll
    for (int j = 0; j < SM_REG; j++) {
      if (t + j * SM_THREADS < cols) {
        float d = v[j] - m;
        q = q + d * d;
      }
    }
    const float s = __fsqrt_rn(block_reduce<false>(part[1], q) * inv_cols + eps);
    if (t == 0) {
      mean[r] = m;
      sd[r] = s;
    }
    float* outr = out + r * cols;
#pragma unroll
    for (int j = 0; j < SM_REG; j++) {
      u32 c = t + j * SM_THREADS;
      if (c < cols) outr[c] = ((v[j] - m) / s) * gamma[c] + beta[c];
    }
  }
}

// layer_norm_bwd, from x and the forward's mean and sd. Per row r:
//   xhat = (x - mean[r]) / sd[r];  inv_std = 1 / sd[r]   (the forward's xhat, bit for bit)
//   dxh = dout * gamma[c];  S1 = rowsum(dxh);  S2 = rowsum(dxh * xhat)
//   dx = ((((dxh * cols_scale) - S1) - xhat * S2) * inv_std) * inv_cols
// and the column partials of each chunk ch of COL_CHUNK = 64 rows r0..r1-1, rows ascending:
//   dgamma_part[ch*cols + c] = ((-0.0 + dout[r0,c]*xhat[r0,c]) + dout[r0+1,c]*xhat[r0+1,c]) + ...
//   dbeta_part[ch*cols + c]  = ((-0.0 + dout[r0,c]) + dout[r0+1,c]) + ...
// the order of reduce_sum_column_chunks, so reducing the (chunks, cols) partials with
// reduce_sum_by_column gives the repo's column sums of dout*xhat and dout.
//
// Two schemes, by shape, with the same values; blocks stride over the units, so any grid computes
// the same result, and the grid below gives one block per unit:
//   - fused (cols <= 4096 and rows >= LN_FUSED_ROWS = 4096): one unit per chunk, grid =
//     ceil(rows/64) blocks of 256 threads. The block walks the rows of its chunk in ascending order
//     (R at a time in registers, dout and x read once), thread t owning the columns t, t+256, ...
//     of the partials.
//   - split (otherwise: long rows, or too few chunks to fill the GPU): grid = rows +
//     ceil(rows/64) * ceil(cols/256) blocks of 256 threads: units [0, rows) compute the dx of one
//     row each, the others the partials of one chunk and 256 columns (thread t one column).
#define LN_CHUNK 64
#define LN_FUSED_ROWS 4096

// layer_norm_bwd_fused: rows r0..r1-1 of a chunk, R at a time (J = SM_REG/R columns per thread).
template <int J, int R>
__device__ __forceinline__ void layer_norm_bwd_fused(float* dx, float* dgp, float* dbp,
                                                     const float* dout, const float* x,
                                                     const float* mean, const float* sd,
                                                     const float* gamma, u64 r0, u64 r1, u64 cols,
                                                     float cols_scale, float inv_cols,
                                                     float (*part)[2 * SM_RMAX * SM_THREADS],
                                                     u32& flip) {
  u32 t = threadIdx.x;
  float g[J], ag[J], ab[J];
#pragma unroll
  for (int j = 0; j < J; j++) {
    u32 c = t + j * SM_THREADS;
    g[j] = c < cols ? gamma[c] : 0.0f;
    ag[j] = -0.0f;
    ab[j] = -0.0f;
  }
  for (u64 r = r0; r < r1; r += R, flip ^= 1) {
    float o[SM_REG], h[SM_REG], m[R], sdv[R], s[2 * R];
    u32 in = 0;
#pragma unroll
    for (int i = 0; i < R; i++) {
      const float* dor = dout + (r + i) * cols;
      const float* xr = x + (r + i) * cols;
#pragma unroll
      for (int j = 0; j < J; j++) {
        u32 c = t + j * SM_THREADS;
        bool e = r + i < r1 && c < cols;
        o[i * J + j] = e ? dor[c] : 0.0f;
        h[i * J + j] = e ? xr[c] : 0.0f;
        if (e) in |= 1u << (i * J + j);
      }
      m[i] = r + i < r1 ? mean[r + i] : 0.0f;
      sdv[i] = r + i < r1 ? sd[r + i] : 1.0f;
    }
#pragma unroll
    for (int i = 0; i < R; i++) {
      s[2 * i] = -0.0f;
      s[2 * i + 1] = -0.0f;
#pragma unroll
      for (int j = 0; j < J; j++) {
        int k = i * J + j;
        if (in & (1u << k)) {
          h[k] = (h[k] - m[i]) / sdv[i];
          float d = o[k] * g[j];
          s[2 * i] = s[2 * i] + d;
          s[2 * i + 1] = s[2 * i + 1] + d * h[k];
          ag[j] = ag[j] + o[k] * h[k];
          ab[j] = ab[j] + o[k];
          o[k] = d;
        }
      }
    }
    block_reduce_n<false, 2 * R>(part[flip], s);
#pragma unroll
    for (int i = 0; i < R; i++) {
      float is = 1.0f / sdv[i];
      float* dxr = dx + (r + i) * cols;
#pragma unroll
      for (int j = 0; j < J; j++) {
        int k = i * J + j;
        if (in & (1u << k))
          dxr[t + j * SM_THREADS] =
              ((((o[k] * cols_scale) - s[2 * i]) - h[k] * s[2 * i + 1]) * is) * inv_cols;
      }
    }
  }
#pragma unroll
  for (int j = 0; j < J; j++) {
    u32 c = t + j * SM_THREADS;
    if (c < cols) {
      dgp[c] = ag[j];
      dbp[c] = ab[j];
    }
  }
}

// ln_bwd_tile loads the tile of SM_REG elements per thread starting at column c0 of row r: dout,
// x (into h, the caller normalizes it) and gamma.
__device__ __forceinline__ void ln_bwd_tile(float* o, float* h, float* g, u32& in,
                                            const float* dout, const float* x,
                                            const float* gamma, u64 r, u64 cols, u64 c0) {
  u32 t = threadIdx.x;
  in = 0;
#pragma unroll
  for (int j = 0; j < SM_REG; j++) {
    u64 c = c0 + t + j * SM_THREADS;
    bool e = c < cols;
    o[j] = e ? dout[r * cols + c] : 0.0f;
    h[j] = e ? x[r * cols + c] : 0.0f;
    g[j] = e ? gamma[c] : 0.0f;
    if (e) in |= 1u << j;
  }
}

extern "C" __global__ void __launch_bounds__(SM_THREADS, 2)
    layer_norm_bwd(float* dx, float* dgamma_part, float* dbeta_part, const float* dout,
                   const float* x, const float* mean, const float* sd, const float* gamma,
                   u64 rows, u64 cols, float cols_scale, float inv_cols) {
  __shared__ float part[2][2 * SM_RMAX * SM_THREADS];
  u32 t = threadIdx.x;
  u64 chunks = (rows + LN_CHUNK - 1) / LN_CHUNK;
  u32 flip = 0;
  if (cols <= SM_THREADS * SM_REG && rows >= LN_FUSED_ROWS) {
    for (u64 ch = blockIdx.x; ch < chunks; ch += gridDim.x) {
      u64 r0 = ch * LN_CHUNK, r1 = min(rows, r0 + LN_CHUNK);
      if (cols <= SM_THREADS * 4) {
        layer_norm_bwd_fused<4, 4>(dx, dgamma_part + ch * cols, dbeta_part + ch * cols, dout, x,
                                   mean, sd, gamma, r0, r1, cols, cols_scale, inv_cols, part, flip);
      } else {
        layer_norm_bwd_fused<16, 1>(dx, dgamma_part + ch * cols, dbeta_part + ch * cols, dout, x,
                                    mean, sd, gamma, r0, r1, cols, cols_scale, inv_cols, part,
                                    flip);
      }
    }
    return;
  }
  u64 slices = (cols + SM_THREADS - 1) / SM_THREADS;
  for (u64 u = blockIdx.x; u < rows + chunks * slices; u += gridDim.x) {
    if (u >= rows) {
      // Partials of chunk ch, column c: 64 rows folded in order, 16 loads at a time.
      u64 ch = (u - rows) / slices, c = ((u - rows) % slices) * SM_THREADS + t;
      if (c >= cols) continue;
      u64 r0 = ch * LN_CHUNK, r1 = min(rows, r0 + LN_CHUNK);
      float ag = -0.0f, ab = -0.0f;
      for (u64 r = r0; r < r1; r += SM_REG) {
        float o[SM_REG], h[SM_REG], m[SM_REG], sdv[SM_REG];
#pragma unroll
        for (int i = 0; i < SM_REG; i++) {
          bool e = r + i < r1;
          o[i] = e ? dout[(r + i) * cols + c] : 0.0f;
          h[i] = e ? x[(r + i) * cols + c] : 0.0f;
          m[i] = e ? mean[r + i] : 0.0f;
          sdv[i] = e ? sd[r + i] : 1.0f;
        }
#pragma unroll
        for (int i = 0; i < SM_REG; i++) {
          if (r + i < r1) {
            ag = ag + o[i] * ((h[i] - m[i]) / sdv[i]);
            ab = ab + o[i];
          }
        }
      }
      dgamma_part[ch * cols + c] = ag;
      dbeta_part[ch * cols + c] = ab;
      continue;
    }
    // dx of row r: the sums over the row in tiles, then the row again.
    u64 r = u;
    float o[SM_REG], h[SM_REG], g[SM_REG];
    u32 in;
    float s[2] = {-0.0f, -0.0f};
    float m = mean[r], sdr = sd[r];
    for (u64 c0 = 0; c0 < cols; c0 += SM_THREADS * SM_REG) {
      ln_bwd_tile(o, h, g, in, dout, x, gamma, r, cols, c0);
#pragma unroll
      for (int j = 0; j < SM_REG; j++) {
        if (in & (1u << j)) {
          float d = o[j] * g[j];
          s[0] = s[0] + d;
          s[1] = s[1] + d * ((h[j] - m) / sdr);
        }
      }
    }
    block_reduce_n<false, 2>(part[flip], s);
    flip ^= 1;
    float is = 1.0f / sdr;
    for (u64 c0 = 0; c0 < cols; c0 += SM_THREADS * SM_REG) {
      ln_bwd_tile(o, h, g, in, dout, x, gamma, r, cols, c0);
#pragma unroll
      for (int j = 0; j < SM_REG; j++)
        if (in & (1u << j))
          dx[r * cols + c0 + t + j * SM_THREADS] =
              ((((o[j] * g[j]) * cols_scale) - s[0]) - ((h[j] - m) / sdr) * s[1]) * is * inv_cols;
    }
  }
}
