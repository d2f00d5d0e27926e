// reduce_axis.cu: reductions along one axis of a row-major (rows, cols) buffer, in an order that
// depends on the shape only. Twins: cpu/reduce_axis.go.
#include "common.cuh"
#include "rowstat.cuh"

#define ROW_THREADS 256

// Row reductions. Thread t of 256 folds the elements t, t + 256, t + 512, ... of the row in
// ascending order starting from the identity; the 256 partials are combined by the halving tree
// p[t] = f(p[t], p[t + s]), s = 128, ..., 1 (warp_tree, rowstat.cuh).
// sum: identity -0.0, f = +, then divided by div (1 for sums, the count for means).
// max: identity -Inf, f = tl_maxf. An empty row gives 0 (0 / div for sums).
// row_reduce runs one block of 256 threads per row (grid-stride over rows). Each thread loads
// ROW_LOADS of its elements before folding them (same order, so the same bits): the loop of one
// load and one fold per step kept too few loads in flight for the max (BENCHMARKS.md, "Figures behind the code").
#define ROW_LOADS 8
template <bool MAX>
__device__ __forceinline__ void row_reduce(float* out, const float* x, u64 rows, u64 cols, float div) {
  __shared__ float part[ROW_THREADS];
  u32 t = threadIdx.x;
  for (u64 r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* row = x + r * cols;
    float acc = MAX ? NEG_INF : -0.0f;
    u64 c = t;
    for (; c + (ROW_LOADS - 1) * ROW_THREADS < cols; c += ROW_LOADS * ROW_THREADS) {
      float v[ROW_LOADS];
#pragma unroll
      for (int k = 0; k < ROW_LOADS; k++) v[k] = row[c + k * ROW_THREADS];
#pragma unroll
      for (int k = 0; k < ROW_LOADS; k++) acc = tree_op<MAX>(acc, v[k]);
    }
    for (; c < cols; c += ROW_THREADS) acc = tree_op<MAX>(acc, row[c]);
    part[t] = acc;
    __syncthreads();
    float v = warp_tree<MAX>(part);
    if (t == 0) {
      v = cols == 0 ? 0.0f : v;
      out[r] = MAX ? v : v / div;
    }
    __syncthreads();  // part is free for the next row
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

// row_reduce_warp is row_reduce for short rows (at most 1024 columns) with L lanes per row:
// reduce_*_by_row_warp16 (L = 16) takes rows of at most 128 columns (8L), two per warp,
// reduce_*_by_row_warp (L = 32) the others. Lane l of a row's group holds the partials l + L i
// (i < 8), each folding its elements in the same order (partials 8L and beyond stay the
// identity), and warp_tree_regs combines them; no shared memory, no barrier. A block's
// ROW_WARPS warps take 32 / L rows each at a time, grid-stride. (Taking 2 or 4 rows per lane
// group at a time, all loads issued first, was slower: more registers, fewer warps; so was L
// chosen at run time.)
#define ROW_WARPS (ROW_THREADS / 32)
template <bool MAX, u32 L>
__device__ __forceinline__ void row_reduce_warp(float* out, const float* x, u64 rows, u64 cols,
                                                float div) {
  if (L < 32 && cols > 8 * L) __trap();
  const u32 l = threadIdx.x & (L - 1), per = 32 / L;
  const u64 step = (u64)gridDim.x * ROW_WARPS * per;
  // The loop is the same for every lane of a warp (the shuffles need them all); r may be past
  // the end for some of the warp's rows.
  for (u64 r0 = ((u64)blockIdx.x * ROW_WARPS + threadIdx.x / 32) * per; r0 < rows; r0 += step) {
    const u64 r = r0 + (threadIdx.x & 31) / L;
    float p[8];
#pragma unroll
    for (int i = 0; i < 8; i++) p[i] = MAX ? NEG_INF : -0.0f;
    if (r < rows && L < 32) {
      // One element per partial: its fold f(identity, x) is x itself (NaN payloads aside, which
      // the contract leaves free), so the partial is the element.
      const float* row = x + r * cols;
#pragma unroll
      for (int i = 0; i < 8; i++) {
        u64 c = l + L * i;
        if (c < cols) p[i] = row[c];
      }
    } else if (r < rows) {
      const float* row = x + r * cols;
      for (u64 c0 = 0; c0 < cols; c0 += ROW_THREADS) {
#pragma unroll
        for (int i = 0; i < 8; i++) {
          u64 c = c0 + l + L * i;
          if (c < cols) p[i] = tree_op<MAX>(p[i], row[c]);
        }
      }
    }
    float v = warp_tree_regs<MAX, L>(p);
    if (l == 0 && r < rows) {
      v = cols == 0 ? 0.0f : v;
      out[r] = MAX ? v : v / div;
    }
  }
}

extern "C" __global__ void __launch_bounds__(ROW_THREADS)
    reduce_sum_by_row_warp(float* out, const float* x, u64 rows, u64 cols, float div) {
  row_reduce_warp<false, 32>(out, x, rows, cols, div);
}

extern "C" __global__ void __launch_bounds__(ROW_THREADS)
    reduce_max_by_row_warp(float* out, const float* x, u64 rows, u64 cols) {
  row_reduce_warp<true, 32>(out, x, rows, cols, 1.0f);
}

extern "C" __global__ void __launch_bounds__(ROW_THREADS)
    reduce_sum_by_row_warp16(float* out, const float* x, u64 rows, u64 cols, float div) {
  row_reduce_warp<false, 16>(out, x, rows, cols, div);
}

extern "C" __global__ void __launch_bounds__(ROW_THREADS)
    reduce_max_by_row_warp16(float* out, const float* x, u64 rows, u64 cols) {
  row_reduce_warp<true, 16>(out, x, rows, cols, 1.0f);
}

// Column folds. fold<MAX> is one step of a column reduction (tree_op: sum +, max tl_maxf) for
// floats and, lane by lane, for float4s of 4 adjacent columns (an overload pair, so that the
// column code is generic in T). fold_column folds n rows of one column (stride
// ld elements of T) into acc in row order, acc = f(...f(f(acc, p[0]), p[ld])..., p[(n-1) ld]);
// it issues the loads U rows at a time (the last batch predicated) before folding them, so that
// U loads are in flight, and the order of the folds is the row order whatever U and T. The
// __syncwarp between loads and folds (the active lanes call it together) is only a scheduling
// fence: without it ptxas (sm_90) moves folds among the loads to save registers, leaving 2 or 3
// loads in flight; with it the SASS issues the U loads before the first fold.
template <bool MAX>
__device__ __forceinline__ float fold(float acc, float v) {
  return tree_op<MAX>(acc, v);
}

template <bool MAX>
__device__ __forceinline__ float4 fold(float4 acc, float4 v) {
  return make_float4(fold<MAX>(acc.x, v.x), fold<MAX>(acc.y, v.y), fold<MAX>(acc.z, v.z),
                     fold<MAX>(acc.w, v.w));
}

template <bool MAX, int U, class T>
__device__ __forceinline__ T fold_column(T acc, const T* __restrict__ p, u64 ld, u64 n) {
  u64 r0 = 0;
  for (; r0 + U <= n; r0 += U, p += U * ld) {
    T v[U];
#pragma unroll
    for (int k = 0; k < U; k++) v[k] = p[k * ld];
    __syncwarp(__activemask());
#pragma unroll
    for (int k = 0; k < U; k++) acc = fold<MAX>(acc, v[k]);
  }
  if (r0 < n) {
    const u32 rem = (u32)(n - r0);
    T v[U];
#pragma unroll
    for (int k = 0; k < U; k++)
      if ((u32)k < rem) v[k] = p[k * ld];
    __syncwarp(__activemask());
#pragma unroll
    for (int k = 0; k < U; k++)
      if ((u32)k < rem) acc = fold<MAX>(acc, v[k]);
  }
  return acc;
}

#define COL_CHUNK 64  // rows per chunk of the two-stage column reductions
#define COL_TW 8      // columns per strip of the tiled column path
#define COL_LOADS 8   // rows each thread of the tiled path loads per tile

#define COL_ID(MAX) ((MAX) ? __uint_as_float(0xff800000u) : -0.0f)

// Vectors of V adjacent columns: float (V = 1) or float4 (V = 4, 16-byte loads and stores; used
// when cols % 4 == 0: buffers are 256-byte aligned, so every row then starts 16-byte aligned).
template <int V>
struct ColVec {
  typedef float T;
};
template <>
struct ColVec<4> {
  typedef float4 T;
};
__device__ __forceinline__ void splat(float& a, float v) { a = v; }
__device__ __forceinline__ void splat(float4& a, float v) { a = make_float4(v, v, v, v); }
__device__ __forceinline__ void div_by(float& a, float d) { a = a / d; }
__device__ __forceinline__ void div_by(float4& a, float d) {
  a = make_float4(a.x / d, a.y / d, a.z / d, a.w / d);
}

// column_tiled is column_reduce's path for long columns (rows > COL_CHUNK, as in stage 2 of a
// long column sum; 1-D blocks of a multiple of COL_TW threads, at most 256), which are bound by
// the latency of their in-order folds when the columns are few: a block takes strips of COL_TW
// adjacent columns of one matrix (grid-stride over the batch * ceil(cols / COL_TW) strips) and
// walks the rows in tiles of COL_LOADS * blockDim.x / COL_TW rows, all of a tile's loads issued
// by the whole block (thread t loads rows t / COL_TW + k * blockDim.x / COL_TW of column
// t % COL_TW) into shared memory; threads 0 .. COL_TW-1 then fold the tile's rows in order.
template <bool MAX>
__device__ __forceinline__ void column_tiled(float* out, const float* x, u64 batch, u64 rows, u64 cols,
                                             float div) {
  __shared__ float tile[256 / COL_TW * COL_LOADS * COL_TW];  // [row][column] of one tile
  const u32 t = threadIdx.x, tx = t % COL_TW, ty = t / COL_TW, lanes = blockDim.x / COL_TW;
  const u32 tr = lanes * COL_LOADS;
  const u64 strips = (cols + COL_TW - 1) / COL_TW;
  for (u64 u = blockIdx.x; u < batch * strips; u += gridDim.x) {
    const u64 b = u / strips, c = (u % strips) * COL_TW + tx;
    const float* xc = x + b * rows * cols + c;
    float acc = COL_ID(MAX);
    for (u64 r0 = 0; r0 < rows; r0 += tr) {
      float v[COL_LOADS];
#pragma unroll
      for (int k = 0; k < COL_LOADS; k++) {
        u64 r = r0 + ty + k * lanes;
        v[k] = r < rows && c < cols ? xc[r * cols] : 0.0f;
      }
      __syncwarp();  // keeps the stores below after all the loads, so that all are in flight
#pragma unroll
      for (int k = 0; k < COL_LOADS; k++) tile[(ty + k * lanes) * COL_TW + tx] = v[k];
      __syncthreads();
      if (t < COL_TW && c < cols) {
        const u32 n = (u32)min((u64)tr, rows - r0);
#pragma unroll 8
        for (u32 r = 0; r < n; r++) acc = fold<MAX>(acc, tile[r * COL_TW + t]);
      }
      __syncthreads();
    }
    if (t < COL_TW && c < cols) out[b * cols + c] = MAX ? acc : acc / div;
  }
}

// Column reductions of a batch of row-major (rows, cols) matrices: for each (matrix, column),
// rows 0, 1, 2, ... folded in order from the identity (sum: -0.0, then divided by div; max: -Inf,
// tl_maxf); an empty column gives 0 (0 / div for sums). One thread per (matrix, column), 8 loads
// in flight; long columns take column_tiled when the block allows it. Any 1-D grid and block
// computes the same result. This is also stage 2 of the two-stage reductions below.
template <bool MAX>
__device__ __forceinline__ void column_reduce(float* out, const float* x, u64 batch, u64 rows, u64 cols,
                                              float div) {
  if (rows > COL_CHUNK && blockDim.x % COL_TW == 0 && blockDim.x <= 256) {
    column_tiled<MAX>(out, x, batch, rows, cols, div);
    return;
  }
  TL_FOR(i, batch * cols) {
    u64 b = i / cols, c = i % cols;
    float acc = fold_column<MAX, 8>(COL_ID(MAX), x + b * rows * cols + c, cols, rows);
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
// each chunk of COL_CHUNK consecutive rows of every column (rows in order from the identity) into
// a batch of (chunks, cols) matrices; stage 2 is the column kernel above on those. The order is a
// function of the shape only. One thread per (matrix, chunk, column), or per (matrix, chunk, 4
// adjacent columns) when cols % 4 == 0 (V = 4 needs a quarter of the threads of V = 1). Any 1-D
// grid and block computes the same result.
template <bool MAX, int V, int U>
__device__ __forceinline__ void column_chunks_v(float* out, const float* x, u64 batch, u64 rows, u64 cols) {
  typedef typename ColVec<V>::T T;
  const u64 chunks = (rows + COL_CHUNK - 1) / COL_CHUNK, groups = cols / V;
  const T* xv = reinterpret_cast<const T*>(x);
  T* ov = reinterpret_cast<T*>(out);
  TL_FOR(i, batch * chunks * groups) {
    u64 g = i % groups, bc = i / groups, ch = bc % chunks, b = bc / chunks;
    u64 r0 = ch * COL_CHUNK;
    T acc;
    splat(acc, COL_ID(MAX));
    ov[bc * groups + g] = fold_column<MAX, U>(acc, xv + (b * rows + r0) * groups + g, groups,
                                              min(rows - r0, (u64)COL_CHUNK));
  }
}

template <bool MAX>
__device__ __forceinline__ void column_chunks(float* out, const float* x, u64 batch, u64 rows, u64 cols) {
  if (cols % 4 == 0)
    column_chunks_v<MAX, 4, 8>(out, x, batch, rows, cols);
  else
    column_chunks_v<MAX, 1, 16>(out, x, batch, rows, cols);
}

extern "C" __global__ void reduce_sum_column_chunks(float* out, const float* x, u64 batch, u64 rows, u64 cols) {
  column_chunks<false>(out, x, batch, rows, cols);
}

extern "C" __global__ void reduce_max_column_chunks(float* out, const float* x, u64 batch, u64 rows, u64 cols) {
  column_chunks<true>(out, x, batch, rows, cols);
}

// Chunked column reductions in one pass: the result of the two stages above (the chunk sums of
// reduce_*_column_chunks folded in order by reduce_*_by_column, sums divided by div, 0 for
// rows == 0) with one thread per (matrix, column), or per (matrix, 4 adjacent columns) when
// cols % 4 == 0, folding its chunks one after the other. For many columns, where the threads
// fill the GPU: no partials in memory and one launch. Any 1-D grid and block gives the same result.
template <bool MAX, int V, int U>
__device__ __forceinline__ void column_chunked_v(float* out, const float* x, u64 batch, u64 rows, u64 cols,
                                                 float div) {
  typedef typename ColVec<V>::T T;
  const u64 groups = cols / V;
  const T* xv = reinterpret_cast<const T*>(x);
  T* ov = reinterpret_cast<T*>(out);
  TL_FOR(i, batch * groups) {
    const T* p = xv + (i / groups) * rows * groups + i % groups;
    T acc;
    splat(acc, COL_ID(MAX));
    for (u64 r0 = 0; r0 < rows; r0 += COL_CHUNK) {
      T part;
      splat(part, COL_ID(MAX));
      acc = fold<MAX>(acc, fold_column<MAX, U>(part, p + r0 * groups, groups, min(rows - r0, (u64)COL_CHUNK)));
    }
    if (rows == 0) splat(acc, 0.0f);
    if (!MAX) div_by(acc, div);
    ov[i] = acc;
  }
}

template <bool MAX>
__device__ __forceinline__ void column_chunked(float* out, const float* x, u64 batch, u64 rows, u64 cols,
                                               float div) {
  if (cols % 4 == 0)
    column_chunked_v<MAX, 4, 8>(out, x, batch, rows, cols, div);
  else
    column_chunked_v<MAX, 1, 16>(out, x, batch, rows, cols, div);
}

extern "C" __global__ void reduce_sum_by_column_chunked(float* out, const float* x, u64 batch, u64 rows,
                                                        u64 cols, float div) {
  column_chunked<false>(out, x, batch, rows, cols, div);
}

extern "C" __global__ void reduce_max_by_column_chunked(float* out, const float* x, u64 batch, u64 rows,
                                                        u64 cols) {
  column_chunked<true>(out, x, batch, rows, cols, 1.0f);
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
