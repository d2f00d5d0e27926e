// cumsum.cu: cumulative sums along the rows of a row-major (rows, cols) matrix, forward (inclusive
// prefix sums, ascending) and backward (reverse inclusive sums, descending). Each row is one
// thread's sequential chain of float32 additions, the order of the CPU twins (cpu/cumsum.go,
// whose doc comments state the arithmetic): the result of a row depends on its values only,
// never on the launch. Parameters: destination, input, rows, cols (grid-stride over rows).
#include "common.cuh"

// The loads of a row do not depend on the additions: with restrict pointers and the loop
// unrolled 8 times, a thread keeps several loads in flight ahead of its chain.

extern "C" __global__ void cumsum_rows(float* __restrict__ y, const float* __restrict__ x, u64 rows,
                                       u64 cols) {
  if (cols == 0) return;
  TL_FOR(r, rows) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    float acc = xr[0];
    yr[0] = acc;
#pragma unroll 8
    for (u64 j = 1; j < cols; j++) {
      acc = acc + xr[j];
      yr[j] = acc;
    }
  }
}

extern "C" __global__ void cumsum_rows_bwd(float* __restrict__ dx, const float* __restrict__ g, u64 rows,
                                           u64 cols) {
  if (cols == 0) return;
  TL_FOR(r, rows) {
    const float* gr = g + r * cols;
    float* dr = dx + r * cols;
    float acc = gr[cols - 1];
    dr[cols - 1] = acc;
#pragma unroll 8
    for (u64 j = cols - 1; j > 0; j--) {
      acc = acc + gr[j - 1];
      dr[j - 1] = acc;
    }
  }
}
