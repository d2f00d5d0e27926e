// rowreg.cuh: the register paths of the row kernels (softmax.cu, norm.cu): groups of rows held
// in registers across a 256-thread block.
#pragma once
#include "common.cuh"
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
