// reduce_axis.cu: reductions along one axis of a row-major (rows, cols) buffer, in an order that
// depends on the shape only. Twins: cpu/reduce_axis.go.
#include "common.cuh"

#define ROW_THREADS 256

// tl_maxf propagates NaN (as a + b) and otherwise returns a > b ? a : b (cpu.Maxf).
__device__ __forceinline__ float tl_maxf(float a, float b) {
  return (a != a || b != b) ? a + b : (a > b ? a : b);
}

// Row reductions: one block per row (grid-stride over rows). Thread t folds the elements
// t, t + 256, t + 512, ... of the row in ascending order starting from the identity; the 256
// partials are combined by the halving tree p[t] = f(p[t], p[t + s]), s = 128, ..., 1.
// sum: identity -0.0, f = +, then divided by div (1 for sums, the count for means).
// max: identity -Inf, f = tl_maxf. An empty row gives 0 (0 / div for sums).
template <bool MAX>
__device__ __forceinline__ void row_reduce(float* out, const float* x, u64 rows, u64 cols, float div) {
  __shared__ float part[ROW_THREADS];
  u32 t = threadIdx.x;
  for (u64 r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* row = x + r * cols;
    float acc = MAX ? __uint_as_float(0xff800000u) : -0.0f;
    for (u64 c = t; c < cols; c += ROW_THREADS) acc = MAX ? tl_maxf(acc, row[c]) : acc + row[c];
    part[t] = acc;
    __syncthreads();
    for (u32 s = ROW_THREADS / 2; s >= 1; s >>= 1) {
      if (t < s) part[t] = MAX ? tl_maxf(part[t], part[t + s]) : part[t] + part[t + s];
      __syncthreads();
    }
    if (t == 0) {
      float v = cols == 0 ? 0.0f : part[0];
      out[r] = MAX ? v : v / div;
    }
    __syncthreads();
  }
}

extern "C" __global__ void __launch_bounds__(ROW_THREADS)
    reduce_sum_by_row(float* out, const float* x, u64 rows, u64 cols, float div) {
  row_reduce<false>(out, x, rows, cols, div);
}

extern "C" __global__ void __launch_bounds__(ROW_THREADS)
    reduce_max_by_row(float* out, const float* x, u64 rows, u64 cols) {
  row_reduce<true>(out, x, rows, cols, 1.0f);
}

// Column reductions of a batch of row-major (rows, cols) matrices: one thread per (matrix,
// column) folds rows 0, 1, 2, ... in order from the identity (sum: -0.0, then divided by div;
// max: -Inf, tl_maxf); an empty column gives 0 (0 / div for sums).
template <bool MAX>
__device__ __forceinline__ void column_reduce(float* out, const float* x, u64 batch, u64 rows, u64 cols,
                                              float div) {
  TL_FOR(i, batch * cols) {
    u64 b = i / cols, c = i % cols;
    const float* xb = x + b * rows * cols + c;
    float acc = MAX ? __uint_as_float(0xff800000u) : -0.0f;
    for (u64 r = 0; r < rows; r++) acc = MAX ? tl_maxf(acc, xb[r * cols]) : acc + xb[r * cols];
    float v = rows == 0 ? 0.0f : acc;
    out[i] = MAX ? v : v / div;
  }
}

extern "C" __global__ void reduce_sum_by_column(float* out, const float* x, u64 batch, u64 rows, u64 cols,
                                                float div) {
  column_reduce<false>(out, x, batch, rows, cols, div);
}

extern "C" __global__ void reduce_max_by_column(float* out, const float* x, u64 batch, u64 rows, u64 cols) {
  column_reduce<true>(out, x, batch, rows, cols, 1.0f);
}

// Column chunks: for large row counts the column reductions run in two stages. Stage 1 reduces
// each chunk of COL_CHUNK consecutive rows of every column (one thread per (matrix, chunk,
// column), rows in order from the identity) into a batch of (chunks, cols) matrices; stage 2 is
// the column kernel above on those. The order is a function of the shape only.
#define COL_CHUNK 64
template <bool MAX>
__device__ __forceinline__ void column_chunks(float* out, const float* x, u64 batch, u64 rows, u64 cols) {
  u64 chunks = (rows + COL_CHUNK - 1) / COL_CHUNK;
  TL_FOR(i, batch * chunks * cols) {
    u64 c = i % cols, bc = i / cols, ch = bc % chunks, b = bc / chunks;
    const float* xb = x + b * rows * cols + c;
    u64 r1 = min(rows, (ch + 1) * COL_CHUNK);
    float acc = MAX ? __uint_as_float(0xff800000u) : -0.0f;
    for (u64 r = ch * COL_CHUNK; r < r1; r++) {
      float v = xb[r * cols];
      acc = MAX ? tl_maxf(acc, v) : acc + v;
    }
    out[i] = acc;
  }
}

extern "C" __global__ void reduce_sum_column_chunks(float* out, const float* x, u64 batch, u64 rows, u64 cols) {
  column_chunks<false>(out, x, batch, rows, cols);
}

extern "C" __global__ void reduce_max_column_chunks(float* out, const float* x, u64 batch, u64 rows, u64 cols) {
  column_chunks<true>(out, x, batch, rows, cols);
}

// reduce_from_broadcast: the adjoint of broadcast_to (layout.cu) for the same (rank, kept, dims):
// one thread per input element i (n of them) sums, from -0.0, the output elements that read it,
// visiting the broadcast axes in row-major order (odometer, last axis fastest).
extern "C" __global__ void reduce_from_broadcast(float* out, const float* dout, u64 n, u64 rank, u64 kept,
                                                 u64 d0, u64 d1, u64 d2, u64 d3, u64 d4, u64 d5, u64 d6,
                                                 u64 d7) {
  const u64 d[8] = {d0, d1, d2, d3, d4, d5, d6, d7};
  u64 ostride[8];
  u64 s = 1, free_n = 1;
#pragma unroll
  for (int j = 7; j >= 0; j--) {
    ostride[j] = s;
    if ((u64)j < rank) {
      s *= d[j];
      if (!(kept >> j & 1)) free_n *= d[j];
    }
  }
  TL_FOR(i, n) {
    u64 rem = i, base = 0;
#pragma unroll
    for (int j = 7; j >= 0; j--) {
      if ((u64)j < rank && (kept >> j & 1)) {
        base += (rem % d[j]) * ostride[j];
        rem /= d[j];
      }
    }
    u64 ctr[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    float acc = -0.0f;
    u64 off = base;
    for (u64 f = 0; f < free_n; f++) {
      acc = acc + dout[off];
#pragma unroll
      for (int j = 7; j >= 0; j--) {
        if ((u64)j < rank && !(kept >> j & 1)) {
          off += ostride[j];
          if (++ctr[j] < d[j]) break;
          off -= d[j] * ostride[j];
          ctr[j] = 0;
        }
      }
    }
    out[i] = free_n == 0 ? 0.0f : acc;
  }
}
