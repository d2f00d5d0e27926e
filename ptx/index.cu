// index.cu: gathers and scatter-adds of rows through index arrays (u32). A vector is a matrix of
// one column. Index arithmetic is 32-bit when the element count allows (the grid-stride loop
// cannot overflow), 64-bit otherwise; the values are the same. Twins: cpu/index.go.
#include "common.cuh"

#define TL_FOR_T(I, i, n) \
  for (I i = (I)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (I)gridDim.x * blockDim.x)

// fits32 reports whether a grid-stride loop over n items can run in 32-bit arithmetic.
__device__ __forceinline__ bool fits32(u64 n) { return n <= 0xffffffffull - (u64)gridDim.x * blockDim.x; }

// gather_rows: out[j, c] = idx[j] < rows ? mat[idx[j], c] : 0 for a (k, cols) output.
template <typename I>
__device__ __forceinline__ void gather_rows_t(float* out, const float* mat, const u32* idx, I k, I rows, I cols) {
  TL_FOR_T(I, e, k * cols) {
    I j = e / cols, c = e - j * cols;
    I i = idx[j];
    out[e] = i < rows ? mat[(u64)i * cols + c] : 0.0f;
  }
}

extern "C" __global__ void gather_rows(float* out, const float* mat, const u32* idx, u64 k, u64 rows, u64 cols) {
  if (fits32(k * cols) && rows <= 0xffffffffull)
    gather_rows_t<u32>(out, mat, idx, (u32)k, (u32)rows, (u32)cols);
  else
    gather_rows_t<u64>(out, mat, idx, k, rows, cols);
}

// scatter_add_rows_atomic: out[idx[j], c] += values[j, c] for every j < k with idx[j] < rows, by
// atomicAdd on an out that already holds the matrix (the fast mode: the order of the additions
// into one element is not fixed).
template <typename I>
__device__ __forceinline__ void scatter_atomic_t(float* out, const float* values, const u32* idx, I k, I rows,
                                                 I cols) {
  TL_FOR_T(I, e, k * cols) {
    I j = e / cols, c = e - j * cols;
    I i = idx[j];
    if (i < rows) atomicAdd(out + (u64)i * cols + c, values[e]);
  }
}

extern "C" __global__ void scatter_add_rows_atomic(float* out, const float* values, const u32* idx, u64 k,
                                                   u64 rows, u64 cols) {
  if (fits32(k * cols) && rows <= 0xffffffffull)
    scatter_atomic_t<u32>(out, values, idx, (u32)k, (u32)rows, (u32)cols);
  else
    scatter_atomic_t<u64>(out, values, idx, k, rows, cols);
}

// scatter_add_rows_sorted: the deterministic mode. order lists the j with idx[j] < rows sorted by
// (idx[j], j), and start[i] .. start[i+1] is the range of order whose index is i. One thread per
// output element: acc = -0.0 + values[j0, c] + values[j1, c] + ... over j ascending, then
// out[i, c] = mat[i, c] + acc.
template <typename I>
__device__ __forceinline__ void scatter_sorted_t(float* out, const float* mat, const float* values,
                                                 const u32* order, const u32* start, I rows, I cols) {
  TL_FOR_T(I, e, rows * cols) {
    I i = e / cols, c = e - i * cols;
    float acc = -0.0f;
    for (u32 s = start[i], end = start[i + 1]; s < end; s++) acc = acc + values[(u64)order[s] * cols + c];
    out[e] = mat[e] + acc;
  }
}

extern "C" __global__ void scatter_add_rows_sorted(float* out, const float* mat, const float* values,
                                                   const u32* order, const u32* start, u64 rows, u64 cols) {
  if (fits32(rows * cols))
    scatter_sorted_t<u32>(out, mat, values, order, start, (u32)rows, (u32)cols);
  else
    scatter_sorted_t<u64>(out, mat, values, order, start, rows, cols);
}
