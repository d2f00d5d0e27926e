// index.cu: gathers and scatter-adds of rows through host indices (uploaded as u32). A vector is
// a matrix of one column. Twins: cpu/index.go.
#include "common.cuh"

// gather_rows: out[j, c] = idx[j] < rows ? mat[idx[j], c] : 0 for a (k, cols) output.
extern "C" __global__ void gather_rows(float* out, const float* mat, const u32* idx, u64 k, u64 rows,
                                       u64 cols) {
  TL_FOR(e, k * cols) {
    u64 j = e / cols, c = e % cols;
    u64 i = idx[j];
    out[e] = i < rows ? mat[i * cols + c] : 0.0f;
  }
}

// scatter_add_rows_atomic: out[idx[j], c] += values[j, c] for every j < k with idx[j] < rows, by
// atomicAdd on an out that already holds the matrix (the fast mode: the order of the additions
// into one element is not fixed).
extern "C" __global__ void scatter_add_rows_atomic(float* out, const float* values, const u32* idx, u64 k,
                                                   u64 rows, u64 cols) {
  TL_FOR(e, k * cols) {
    u64 j = e / cols, c = e % cols;
    u64 i = idx[j];
    if (i < rows) atomicAdd(out + i * cols + c, values[e]);
  }
}

// scatter_add_rows_sorted: the deterministic mode. order lists the j with idx[j] < rows sorted by
// (idx[j], j), and start[i] .. start[i+1] is the range of order whose index is i. One thread per
// output element: acc = -0.0 + values[j0, c] + values[j1, c] + ... over j ascending, then
// out[i, c] = mat[i, c] + acc.
extern "C" __global__ void scatter_add_rows_sorted(float* out, const float* mat, const float* values,
                                                   const u32* order, const u32* start, u64 rows, u64 cols) {
  TL_FOR(e, rows * cols) {
    u64 i = e / cols, c = e % cols;
    float acc = -0.0f;
    for (u32 s = start[i], end = start[i + 1]; s < end; s++) acc = acc + values[(u64)order[s] * cols + c];
    out[e] = mat[e] + acc;
  }
}
