// softmax.cu: row softmax and log-softmax of a row-major (rows, cols) buffer and their VJPs,
// one 256-thread block per row. Every row statistic is a row reduction in the order of
// reduce_axis.cu (thread t folds elements t, t+256, ... in order, then the halving tree), so the
// result depends on the shape only. Twins: cpu/softmax.go.
#include "common.cuh"
#include "f32math.cuh"

#define SM_THREADS 256

__device__ __forceinline__ float sm_maxf(float a, float b) {
  return (a != a || b != b) ? a + b : (a > b ? a : b);
}

// block_reduce combines the 256 per-thread partials by the halving tree and returns the result
// to every thread.
template <bool MAX>
__device__ __forceinline__ float block_reduce(float* part, float v) {
  u32 t = threadIdx.x;
  part[t] = v;
  __syncthreads();
  for (u32 s = SM_THREADS / 2; s >= 1; s >>= 1) {
    if (t < s) part[t] = MAX ? sm_maxf(part[t], part[t + s]) : part[t] + part[t + s];
    __syncthreads();
  }
  float r = part[0];
  __syncthreads();
  return r;
}

#define NEG_INF __uint_as_float(0xff800000u)

// Kinds: 0 softmax, 1 log-softmax, 2 hard-masked softmax (mask != 0 allowed).
//   m = max over (allowed) x;  s = sum over (allowed) exp(x - m)
//   softmax: y = exp(x - m) / s;  log-softmax: y = (x - m) - log(s)
//   masked: y = allowed && s != 0 ? exp(x - m) / s : 0 (a fully blocked row is all zeros)
// For softmax and the masked softmax, rows of at most SM_THREADS*SM_REG elements are held in
// registers (one read of x, each exp computed once); other rows, and log-softmax (measured slower
// that way), read the row again for each statistic. Both paths compute the same values in the
// same order.
#define SM_REG 16
template <int KIND>
__device__ __forceinline__ void softmax_rows(float* out, const float* x, const float* mask,
                                             u64 rows, u64 cols) {
  __shared__ float part[SM_THREADS];
  u32 t = threadIdx.x;
  for (u64 r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* xr = x + r * cols;
    const float* mr = KIND == 2 ? mask + r * cols : 0;
    float* outr = out + r * cols;
    if (KIND != 1 && cols <= SM_THREADS * SM_REG) {
      float v[SM_REG];
      u32 keep = 0;
#pragma unroll
      for (int j = 0; j < SM_REG; j++) {
        u64 c = t + (u64)j * SM_THREADS;
        v[j] = c < cols ? xr[c] : 0.0f;
        if (c < cols && (KIND != 2 || mr[c] != 0.0f)) keep |= 1u << j;
      }
      float m = NEG_INF;
#pragma unroll
      for (int j = 0; j < SM_REG; j++)
        if (keep & (1u << j)) m = sm_maxf(m, v[j]);
      m = block_reduce<true>(part, m);
      float s = -0.0f;
      float e[SM_REG];
#pragma unroll
      for (int j = 0; j < SM_REG; j++) {
        e[j] = 0.0f;
        if (keep & (1u << j)) {
          e[j] = tl_expf(v[j] - m);
          s = s + e[j];
        }
      }
      s = block_reduce<false>(part, s);
      float ls = KIND == 1 ? tl_logf(s) : 0.0f;
#pragma unroll
      for (int j = 0; j < SM_REG; j++) {
        u64 c = t + (u64)j * SM_THREADS;
        if (c < cols) {
          float y;
          if (KIND == 1) {
            y = (v[j] - m) - ls;
          } else if (KIND == 2) {
            y = ((keep & (1u << j)) && s != 0.0f) ? e[j] / s : 0.0f;
          } else {
            y = e[j] / s;
          }
          outr[c] = y;
        }
      }
      continue;
    }
    float m = NEG_INF;
    for (u64 c = t; c < cols; c += SM_THREADS)
      if (KIND != 2 || mr[c] != 0.0f) m = sm_maxf(m, xr[c]);
    m = block_reduce<true>(part, m);
    float s = -0.0f;
    for (u64 c = t; c < cols; c += SM_THREADS)
      if (KIND != 2 || mr[c] != 0.0f) s = s + tl_expf(xr[c] - m);
    s = block_reduce<false>(part, s);
    float ls = KIND == 1 ? tl_logf(s) : 0.0f;
    for (u64 c = t; c < cols; c += SM_THREADS) {
      float y;
      if (KIND == 1) {
        y = (xr[c] - m) - ls;
      } else if (KIND == 2) {
        y = (mr[c] != 0.0f && s != 0.0f) ? tl_expf(xr[c] - m) / s : 0.0f;
      } else {
        y = tl_expf(xr[c] - m) / s;
      }
      outr[c] = y;
    }
  }
}

extern "C" __global__ void __launch_bounds__(SM_THREADS)
    softmax_fwd(float* out, const float* x, u64 rows, u64 cols) {
  softmax_rows<0>(out, x, 0, rows, cols);
}

extern "C" __global__ void __launch_bounds__(SM_THREADS)
    log_softmax_fwd(float* out, const float* x, u64 rows, u64 cols) {
  softmax_rows<1>(out, x, 0, rows, cols);
}

extern "C" __global__ void __launch_bounds__(SM_THREADS)
    masked_softmax_fwd(float* out, const float* x, const float* mask, u64 rows, u64 cols) {
  softmax_rows<2>(out, x, mask, rows, cols);
}

// VJPs from the forward output y and the cotangent g:
//   softmax:     d = sum(g*y);  dx = y * (g - d)
//   log-softmax: d = sum(g);    dx = g - exp(y) * d
template <bool LOG>
__device__ __forceinline__ void softmax_bwd_rows(float* dx, const float* y, const float* g,
                                                 u64 rows, u64 cols) {
  __shared__ float part[SM_THREADS];
  u32 t = threadIdx.x;
  for (u64 r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* yr = y + r * cols;
    const float* gr = g + r * cols;
    float d = -0.0f;
    for (u64 c = t; c < cols; c += SM_THREADS) d = d + (LOG ? gr[c] : gr[c] * yr[c]);
    d = block_reduce<false>(part, d);
    for (u64 c = t; c < cols; c += SM_THREADS)
      dx[r * cols + c] = LOG ? gr[c] - tl_expf(yr[c]) * d : yr[c] * (gr[c] - d);
  }
}

extern "C" __global__ void __launch_bounds__(SM_THREADS)
    softmax_bwd(float* dx, const float* y, const float* g, u64 rows, u64 cols) {
  softmax_bwd_rows<false>(dx, y, g, rows, cols);
}

extern "C" __global__ void __launch_bounds__(SM_THREADS)
    log_softmax_bwd(float* dx, const float* y, const float* g, u64 rows, u64 cols) {
  softmax_bwd_rows<true>(dx, y, g, rows, cols);
}
