// norm.cu: the fused layer norm forward and backward over the rows of a row-major (rows, cols)
// buffer, with 256-thread blocks. Every row statistic is a row reduction in the order of
// reduce_axis.cu (thread t folds elements t, t+256, ... in order, then the halving tree), so the
// result depends on the shape only. Twins: cpu/norm.go.
#include "common.cuh"
#include "f32math.cuh"
#include "rowstat.cuh"
#include "rowreg.cuh"

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

// Three blocks per multiprocessor: at four (64 registers) the register path spills and loses
// (BENCHMARKS.md, "Figures behind the code").
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
// which keep more loads in flight than the prefetch did (BENCHMARKS.md, "Figures behind the code"). The operations and their order are layer_norm_fwd_reg's.
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
