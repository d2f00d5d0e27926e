// select.cu: sorts along the rows of a (rows, cols) matrix (sort, argsort, top-k), the scatter of
// their gradient, and multinomial sampling. Twins: cpu/select.go.
//
// A sort orders each row by the 64-bit composite (order key << 32) | column, ascending: the
// order key (tl_sort_key, cpu.SortKey) maps floats to uint32s in their order, NaN largest and
// -0 equal to +0, complemented for a descending sort; the column breaks ties, so the sort is
// stable and the composites of a row are distinct. With distinct keys a sorted order is unique:
// any correct sorting network or merge gives the same bits. A row of at most SORT_TILE elements
// is sorted by one block in shared memory (sort_rows: bitonic, several short rows per block); a
// longer row is cut into tiles of SORT_TILE sorted that way (sort_rows_tile), then runs of
// doubling width are merged (sort_rows_merge, each element placed by a binary search in the
// other run), and the first k of each row written out (sort_rows_emit).
//
// Column indices are written as uint32 bits into float32 slots (ops.Indices). Pairs of slots
// hold the composites of the long-row path (little-endian: the low word first).
#include "common.cuh"
#include "f32math.cuh"

#define SORT_TILE 2048
#define SORT_THREADS 256

// tl_sort_key is the order key of v (cpu.SortKey): NaN -> 0xffffffff; ±0 -> 0x80000000; a
// negative v -> ~bits(v); a positive v -> bits(v) | 0x80000000; complemented when desc is
// nonzero.
__device__ __forceinline__ u32 tl_sort_key(float v, u64 desc) {
  u32 b = __float_as_uint(v);
  u32 k;
  if (v != v)
    k = 0xffffffffu;
  else if (v == 0.0f)
    k = 0x80000000u;
  else
    k = (b & 0x80000000u) ? ~b : (b | 0x80000000u);
  return desc ? ~k : k;
}

// tl_bitonic sorts each aligned segment of p elements of s[0, SORT_TILE) ascending (p a power of
// two, at most SORT_TILE): the bitonic network of size p, whose last merge runs ascending in
// every segment. The whole block calls it, with s loaded and synchronized.
__device__ __forceinline__ void tl_bitonic(u64* s, u32 p) {
  for (u32 k = 2; k <= p; k <<= 1) {
    for (u32 j = k >> 1; j > 0; j >>= 1) {
      for (u32 i = threadIdx.x; i < SORT_TILE; i += blockDim.x) {
        u32 l = i ^ j;
        if (l > i) {
          bool up = k == p || (i & k) == 0;
          u64 a = s[i], b = s[l];
          if ((a > b) == up) {
            s[i] = b;
            s[l] = a;
          }
        }
      }
      __syncthreads();
    }
  }
}

// tl_pow2 is the least power of two >= n (n >= 1).
__device__ __forceinline__ u32 tl_pow2(u64 n) {
  u32 p = 1;
  while (p < n) p <<= 1;
  return p;
}

// sort_rows: rows of 1 <= cols <= SORT_TILE elements. Rows in groups of SORT_TILE / p
// (p = tl_pow2(cols)), one group per block iteration; vals[r, j] = x[r, c_j] and idx[r, j] = c_j
// for j < k, where c_0, c_1, ... are the columns in the order of their composites.
extern "C" __global__ void __launch_bounds__(SORT_THREADS)
    sort_rows(float* vals, u32* idx, const float* x, u64 rows, u64 cols, u64 k, u64 desc) {
  __shared__ u64 s[SORT_TILE];
  u32 p = tl_pow2(cols);
  u64 per = SORT_TILE / p;
  u64 groups = (rows + per - 1) / per;
  for (u64 g = blockIdx.x; g < groups; g += gridDim.x) {
    u64 r0 = g * per;
    for (u32 i = threadIdx.x; i < SORT_TILE; i += blockDim.x) {
      u64 r = r0 + i / p;
      u32 c = i & (p - 1);
      s[i] = r < rows && c < cols ? (u64)tl_sort_key(x[r * cols + c], desc) << 32 | c : ~0ull;
    }
    __syncthreads();
    tl_bitonic(s, p);
    for (u32 i = threadIdx.x; i < SORT_TILE; i += blockDim.x) {
      u64 r = r0 + i / p;
      u32 j = i & (p - 1);
      if (r < rows && j < k) {
        u32 c = (u32)s[i];
        vals[r * k + j] = x[r * cols + c];
        idx[r * k + j] = c;
      }
    }
    __syncthreads();
  }
}

// sort_rows_tile: rows of cols > SORT_TILE elements. Tile t of row r (columns t*SORT_TILE up to
// cols) is sorted, and its composites stored at keys[r*cols + t*SORT_TILE ...].
extern "C" __global__ void __launch_bounds__(SORT_THREADS)
    sort_rows_tile(u64* keys, const float* x, u64 rows, u64 cols, u64 desc) {
  __shared__ u64 s[SORT_TILE];
  u64 tiles = (cols + SORT_TILE - 1) / SORT_TILE;
  for (u64 b = blockIdx.x; b < rows * tiles; b += gridDim.x) {
    u64 r = b / tiles, c0 = (b - r * tiles) * SORT_TILE;
    u64 len = min((u64)SORT_TILE, cols - c0);
    const float* xr = x + r * cols + c0;
    for (u32 i = threadIdx.x; i < SORT_TILE; i += blockDim.x)
      s[i] = i < len ? (u64)tl_sort_key(xr[i], desc) << 32 | (u32)(c0 + i) : ~0ull;
    __syncthreads();
    tl_bitonic(s, SORT_TILE);
    for (u32 i = threadIdx.x; i < len; i += blockDim.x) keys[r * cols + c0 + i] = s[i];
    __syncthreads();
  }
}

// sort_rows_merge: in each row, the sorted runs [2m*width, (2m+1)*width) and
// [(2m+1)*width, (2m+2)*width) (cut at cols) of src merge into dst. An element at offset o of its
// run goes to the pair's start + o + the number of the other run's composites below it.
extern "C" __global__ void sort_rows_merge(u64* dst, const u64* src, u64 rows, u64 cols, u64 width) {
  TL_FOR(e, rows * cols) {
    u64 r = e / cols, c = e - r * cols;
    u64 base = c / (2 * width) * (2 * width);
    u64 mid = min(base + width, cols), end = min(base + 2 * width, cols);
    const u64* row = src + r * cols;
    u64 v = row[c];
    u64 lo, hi, off;
    if (c < mid) {
      lo = mid, hi = end, off = c - base;
    } else {
      lo = base, hi = mid, off = c - mid;
    }
    u64 a = lo, b = hi;
    while (a < b) {
      u64 m = a + (b - a) / 2;
      if (row[m] < v)
        a = m + 1;
      else
        b = m;
    }
    dst[r * cols + base + off + (a - lo)] = v;
  }
}

// sort_rows_emit: vals[r, j] = x[r, c] and idx[r, j] = c for the column c of the composite
// keys[r, j], j < k.
extern "C" __global__ void sort_rows_emit(float* vals, u32* idx, const u64* keys, const float* x, u64 rows, u64 cols,
                                          u64 k) {
  TL_FOR(e, rows * k) {
    u64 r = e / k, j = e - r * k;
    u32 c = (u32)keys[r * cols + j];
    vals[e] = x[r * cols + c];
    idx[e] = c;
  }
}

// sort_rows_bwd: dx[r, idx[r, j]] = g[r, j] for j < k, into a dx that holds zeros (unless k ==
// cols); the columns of a row are distinct and below cols (ops checks them).
extern "C" __global__ void sort_rows_bwd(float* dx, const float* g, const u32* idx, u64 rows, u64 cols, u64 k) {
  TL_FOR(e, rows * k) {
    u64 r = e / k;
    dx[r * cols + idx[e]] = g[e];
  }
}

// tl_select_key joins the key halves passed as float32 bits.
__device__ __forceinline__ u64 tl_select_key(float lo, float hi) {
  return (u64)__float_as_uint(hi) << 32 | __float_as_uint(lo);
}

// multinomial_scan: one thread per row. cdf[r, 0] = p[r, 0], cdf[r, c] = cdf[r, c-1] + p[r, c];
// stat[3r] = 1 + the first column whose weight is not in [0, FLT_MAX] (0: none), stat[3r+1] =
// the number of zero weights, stat[3r+2] = 1 when the sum is above FLT_MAX.
extern "C" __global__ void multinomial_scan(float* cdf, u32* stat, const float* p, u64 rows, u64 cols) {
  TL_FOR(r, rows) {
    const float* pr = p + r * cols;
    float* cr = cdf + r * cols;
    u32 bad = 0, zeros = 0;
    float acc = 0.0f;
    for (u64 c = 0; c < cols; c++) {
      float v = pr[c];
      if (!(v >= 0.0f && v <= 3.40282347e38f) && bad == 0) bad = (u32)(c + 1);
      if (v == 0.0f) zeros++;
      acc = c == 0 ? v : acc + v;
      cr[c] = acc;
    }
    stat[3 * r] = bad;
    stat[3 * r + 1] = zeros;
    stat[3 * r + 2] = acc > 3.40282347e38f ? 1u : 0u;
  }
}

// multinomial_draw: sample e = r*samples + s (with replacement) is the first column c with
// cdf[r, c] > u * cdf[r, cols-1] (cols - 1 if none), u = uniform(SplitMix64(key + e)) as
// rand_uniform's, found by bisection of [0, cols).
extern "C" __global__ void multinomial_draw(u32* out, const float* cdf, u64 rows, u64 cols, u64 samples,
                                            float key_lo, float key_hi) {
  u64 key = tl_select_key(key_lo, key_hi);
  TL_FOR(e, rows * samples) {
    const float* cr = cdf + e / samples * cols;
    u64 z = tl_splitmix64(key + e);
    float u = (float)(u32)z * 2.3283064365386963e-10f;
    u = u < 1.0f ? u : 0.99999994f;
    float t = u * cr[cols - 1];
    u64 a = 0, b = cols;
    while (a < b) {
      u64 m = a + (b - a) / 2;
      if (cr[m] > t)
        b = m;
      else
        a = m + 1;
    }
    out[e] = (u32)min(a, cols - 1);
  }
}

// multinomial_keys: the keys of sampling without replacement (the exponential race: the samples
// are the columns of the smallest keys). Element e = r*cols + c: key = p > 0 ? (-logf(u)) / p :
// NaN, u = (float(low32(SplitMix64(key + e)) >> 9) + 0.5) * 2^-23 in (0, 1).
extern "C" __global__ void multinomial_keys(float* keys, const float* p, u64 n, float key_lo, float key_hi) {
  u64 key = tl_select_key(key_lo, key_hi);
  TL_FOR(e, n) {
    float v = p[e];
    u32 z = (u32)tl_splitmix64(key + e);
    float u = ((float)(z >> 9) + 0.5f) * 1.1920928955078125e-07f;
    keys[e] = v > 0.0f ? -tl_logf(u) / v : __int_as_float(0x7fc00000);
  }
}
