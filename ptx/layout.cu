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

// transpose2d: out[b, c, r] = x[b, r, c] for a batch of (rows, cols) inputs, through 32x32
// shared-memory tiles (blocks of 32x8 threads; grid.x over column tiles, grid.y over row tiles
// and grid.z over the batch, grid-stride in y and z).
#define TILE 32
extern "C" __global__ void transpose2d(float* out, const float* x, u64 batch, u64 rows, u64 cols) {
  __shared__ float tile[TILE][TILE + 1];
  u64 c0 = (u64)blockIdx.x * TILE;
  for (u64 b = blockIdx.z; b < batch; b += gridDim.z) {
    const float* xb = x + b * rows * cols;
    float* ob = out + b * rows * cols;
    for (u64 r0 = (u64)blockIdx.y * TILE; r0 < rows; r0 += (u64)gridDim.y * TILE) {
      for (u32 j = threadIdx.y; j < TILE; j += blockDim.y) {
        u64 r = r0 + j, c = c0 + threadIdx.x;
        if (r < rows && c < cols) tile[j][threadIdx.x] = xb[r * cols + c];
      }
      __syncthreads();
      for (u32 j = threadIdx.y; j < TILE; j += blockDim.y) {
        u64 c = c0 + j, r = r0 + threadIdx.x;
        if (r < rows && c < cols) ob[c * rows + r] = tile[threadIdx.x][j];
      }
      __syncthreads();
    }
  }
}

// swap_adjacent: out[a, c, b, d] = x[a, b, c, d] for an (na, nb, nc, nd) input (the axes b and c
// swapped; with nd = 1 the batched transpose2d is used instead). One thread per output element,
// or per 4 consecutive d (16-byte loads and stores) when nd % 4 == 0 (buffers are 256-byte
// aligned, so the runs of 4 stay aligned on both sides); any 1-D grid and block gives the same
// output. T is float or float4, nd counts Ts.
template <typename I, class T>
__device__ __forceinline__ void swap_adjacent_t(T* out, const T* x, I na, I nb, I nc, I nd) {
  I n = na * nb * nc * nd;
  for (I i = (I)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (I)gridDim.x * blockDim.x) {
    I d = i % nd, t = i / nd;
    I b = t % nb;
    t /= nb;
    I c = t % nc, a = t / nc;
    out[i] = x[((a * nb + b) * nc + c) * nd + d];
  }
}

template <class T>
__device__ __forceinline__ void swap_adjacent_v(float* out, const float* x, u64 na, u64 nb, u64 nc, u64 nd) {
  T* o = reinterpret_cast<T*>(out);
  const T* xv = reinterpret_cast<const T*>(x);
  if (na * nb * nc * nd <= 0xffffffffull - (u64)gridDim.x * blockDim.x)
    swap_adjacent_t<u32, T>(o, xv, (u32)na, (u32)nb, (u32)nc, (u32)nd);
  else
    swap_adjacent_t<u64, T>(o, xv, na, nb, nc, nd);
}

extern "C" __global__ void swap_adjacent(float* out, const float* x, u64 na, u64 nb, u64 nc, u64 nd) {
  if (nd % 4 == 0)
    swap_adjacent_v<float4>(out, x, na, nb, nc, nd / 4);
  else
    swap_adjacent_v<float>(out, x, na, nb, nc, nd);
}

// broadcast_to: an output of rank <= 8 with dims d0..d7 (outermost first; the first rank are
// used). Bit j of kept set: output axis j reads the input along an axis of the same size; clear:
// the axis is broadcast (input coordinate 0). The input is the kept axes in order, contiguous:
// out[i] = x[sum over kept j of coord_j(i) * (product of the kept dims after j)].
//
// The output is walked as rows along its last axis (length L): a row copies one input row (last
// axis kept: the L input elements at the row's offset) or repeats one input element (last axis
// broadcast). The row's offset is computed once per work unit, a unit being a row and a segment
// of BC_SEG * blockDim.x vectors of it: vectors of 4 elements (16-byte loads and stores) when
// L % 4 == 0 (the rows then start 16-byte aligned on both sides), else single elements. Units go
// to the block rows (threadIdx.y) grid-stride; thread x copies the vectors x, x + blockDim.x, ...
// of the segment, loading all before storing. Any 1-D grid and block shape gives the same output.
#define TL_DIMS u64 d0, u64 d1, u64 d2, u64 d3, u64 d4, u64 d5, u64 d6, u64 d7
#define BC_SEG 4
__device__ __forceinline__ void bc_splat(float& a, float v) { a = v; }
__device__ __forceinline__ void bc_splat(float4& a, float v) { a = make_float4(v, v, v, v); }

template <typename I, class T, int V>
__device__ __forceinline__ void broadcast_to_t(float* out, const float* x, I n, u32 rank, u32 kept,
                                               const u64* dims, I L) {
  I d[8];
#pragma unroll
  for (int j = 0; j < 8; j++) d[j] = (I)dims[j];
  const bool last_kept = rank > 0 && (kept >> (rank - 1) & 1);
  const I rows = n / L, lv = L / V;  // rows, and vectors per row
  const I seg = (I)blockDim.x * BC_SEG, segs = (lv + seg - 1) / seg;
  const T* xv = reinterpret_cast<const T*>(x);
  for (I u = (I)blockIdx.x * blockDim.y + threadIdx.y; u < rows * segs; u += (I)gridDim.x * blockDim.y) {
    I r = u / segs, c0 = (u - r * segs) * seg + threadIdx.x;
    // The input offset of the row's first element: its coordinates on the axes before the last.
    I rem = r, off = 0, stride = last_kept ? L : 1;
#pragma unroll
    for (int j = 6; j >= 0; j--) {
      if ((u32)j + 1 < rank) {
        I c = rem % d[j];
        rem /= d[j];
        if (kept >> j & 1) {
          off += c * stride;
          stride *= d[j];
        }
      }
    }
    T* orow = reinterpret_cast<T*>(out + r * L);
    T v[BC_SEG];
    if (last_kept) {
      const T* xrow = xv + off / V;
#pragma unroll
      for (int k = 0; k < BC_SEG; k++)
        if (c0 + k * blockDim.x < lv) v[k] = xrow[c0 + k * blockDim.x];
    } else {
      float s = x[off];
#pragma unroll
      for (int k = 0; k < BC_SEG; k++) bc_splat(v[k], s);
    }
#pragma unroll
    for (int k = 0; k < BC_SEG; k++)
      if (c0 + k * blockDim.x < lv) orow[c0 + k * blockDim.x] = v[k];
  }
}

// broadcast_to_i picks the element or 16-byte path for the last axis length L (1 at rank 0).
template <typename I>
__device__ __forceinline__ void broadcast_to_i(float* out, const float* x, I n, u32 rank, u32 kept,
                                               const u64* dims) {
  I L = 1;
#pragma unroll
  for (int j = 0; j < 8; j++)
    if ((u32)j + 1 == rank) L = (I)dims[j];
  if (L % 4 == 0)
    broadcast_to_t<I, float4, 4>(out, x, n, rank, kept, dims, L);
  else
    broadcast_to_t<I, float, 1>(out, x, n, rank, kept, dims, L);
}

extern "C" __global__ void broadcast_to(float* out, const float* x, u64 n, u64 rank, u64 kept, TL_DIMS) {
  const u64 dims[8] = {d0, d1, d2, d3, d4, d5, d6, d7};
  if (n <= 0xffffffffull - (u64)gridDim.x * blockDim.x * blockDim.y)
    broadcast_to_i<u32>(out, x, (u32)n, (u32)rank, (u32)kept, dims);
  else
    broadcast_to_i<u64>(out, x, n, (u32)rank, (u32)kept, dims);
}
