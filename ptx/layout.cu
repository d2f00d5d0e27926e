// layout.cu: copies that move elements without arithmetic (concat, slice, broadcasts,
// transpose). Twins: cpu/layout.go. Parameters: destination, inputs, sizes.
#include "common.cuh"

// concat1d: out[i] = i < n ? a[i] : b[i - n], i < n + m.
extern "C" __global__ void concat1d(float* out, const float* a, const float* b, u64 n, u64 m) {
  TL_FOR(i, n + m) { out[i] = i < n ? a[i] : b[i - n]; }
}

// slice1d: out[i] = x[start + i], i < len.
extern "C" __global__ void slice1d(float* out, const float* x, u64 start, u64 len) {
  TL_FOR(i, len) { out[i] = x[start + i]; }
}

// broadcast_vec_to_rows: out[r, c] = vec[c] for a (rows, cols) output.
extern "C" __global__ void broadcast_vec_to_rows(float* out, const float* vec, u64 rows, u64 cols) {
  TL_FOR(i, rows * cols) { out[i] = vec[i % cols]; }
}

// broadcast_vec_to_cols: out[r, c] = vec[r].
extern "C" __global__ void broadcast_vec_to_cols(float* out, const float* vec, u64 rows, u64 cols) {
  TL_FOR(i, rows * cols) { out[i] = vec[i / cols]; }
}

// transpose2d: out[c, r] = x[r, c] for a (rows, cols) input, through 32x32 shared-memory tiles
// (blocks of 32x8 threads; grid.x over column tiles, grid.y over row tiles, grid-stride in y).
#define TILE 32
extern "C" __global__ void transpose2d(float* out, const float* x, u64 rows, u64 cols) {
  __shared__ float tile[TILE][TILE + 1];
  u64 c0 = (u64)blockIdx.x * TILE;
  for (u64 r0 = (u64)blockIdx.y * TILE; r0 < rows; r0 += (u64)gridDim.y * TILE) {
    for (u32 j = threadIdx.y; j < TILE; j += blockDim.y) {
      u64 r = r0 + j, c = c0 + threadIdx.x;
      if (r < rows && c < cols) tile[j][threadIdx.x] = x[r * cols + c];
    }
    __syncthreads();
    for (u32 j = threadIdx.y; j < TILE; j += blockDim.y) {
      u64 c = c0 + j, r = r0 + threadIdx.x;
      if (r < rows && c < cols) out[c * rows + r] = tile[threadIdx.x][j];
    }
    __syncthreads();
  }
}
