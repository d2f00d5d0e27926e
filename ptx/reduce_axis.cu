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
// sum: identity -0.0, f = +. max: identity -Inf, f = tl_maxf; an empty row gives 0.
template <bool MAX>
__device__ __forceinline__ void row_reduce(float* out, const float* x, u64 rows, u64 cols) {
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
    if (t == 0) out[r] = cols == 0 ? 0.0f : part[0];
    __syncthreads();
  }
}

extern "C" __global__ void __launch_bounds__(ROW_THREADS)
    reduce_sum_by_row(float* out, const float* x, u64 rows, u64 cols) {
  row_reduce<false>(out, x, rows, cols);
}

extern "C" __global__ void __launch_bounds__(ROW_THREADS)
    reduce_max_by_row(float* out, const float* x, u64 rows, u64 cols) {
  row_reduce<true>(out, x, rows, cols);
}

// Column reductions: one thread per column folds rows 0, 1, 2, ... in order from the identity
// (sum: -0.0; max: -Inf, tl_maxf); an empty column gives 0.
extern "C" __global__ void reduce_sum_by_column(float* out, const float* x, u64 rows, u64 cols) {
  TL_FOR(c, cols) {
    float acc = -0.0f;
    for (u64 r = 0; r < rows; r++) acc = acc + x[r * cols + c];
    out[c] = rows == 0 ? 0.0f : acc;
  }
}

extern "C" __global__ void reduce_max_by_column(float* out, const float* x, u64 rows, u64 cols) {
  TL_FOR(c, cols) {
    float acc = __uint_as_float(0xff800000u);
    for (u64 r = 0; r < rows; r++) acc = tl_maxf(acc, x[r * cols + c]);
    out[c] = rows == 0 ? 0.0f : acc;
  }
}

// Column chunks: for large row counts the column reductions run in two stages. Stage 1 reduces
// each chunk of COL_CHUNK consecutive rows of every column (one thread per (chunk, column), rows
// in order from the identity) into a (chunks, cols) matrix; stage 2 is the column kernel above
// on that matrix. The order is a function of the shape only.
#define COL_CHUNK 64
template <bool MAX>
__device__ __forceinline__ void column_chunks(float* out, const float* x, u64 rows, u64 cols) {
  u64 chunks = (rows + COL_CHUNK - 1) / COL_CHUNK;
  TL_FOR(i, chunks * cols) {
    u64 ch = i / cols, c = i % cols;
    u64 r1 = min(rows, (ch + 1) * COL_CHUNK);
    float acc = MAX ? __uint_as_float(0xff800000u) : -0.0f;
    for (u64 r = ch * COL_CHUNK; r < r1; r++) {
      float v = x[r * cols + c];
      acc = MAX ? tl_maxf(acc, v) : acc + v;
    }
    out[i] = acc;
  }
}

extern "C" __global__ void reduce_sum_column_chunks(float* out, const float* x, u64 rows, u64 cols) {
  column_chunks<false>(out, x, rows, cols);
}

extern "C" __global__ void reduce_max_column_chunks(float* out, const float* x, u64 rows, u64 cols) {
  column_chunks<true>(out, x, rows, cols);
}
