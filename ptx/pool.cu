// pool.cu: max, average and smooth-max (log-sum-exp) pooling, forward and backward, of spatial
// rank 1 to POOL_AXES. Layout: channel-first, row-major: x (nc, in[0..7]), y (nc, out[0..7]), nc
// the leading axes flattened (channels of one sample, or batch*channels). A rank-d pooling comes
// with POOL_AXES - d leading axes of size 1, window 1, stride 1 and padding 0 (no effect on any
// result). A window is the box of k[a] cells from o[a]*s[a] - p[a]; its cells are visited in
// row-major order (window offsets ascending, last axis fastest); a cell outside the input is
// padding: max and average pooling skip it, smooth max pooling reads it as 0.
//
// Forwards: one thread per output element. Backwards: gather-style, one thread per input
// element, which sums the contributions of the windows containing it in ascending window order
// (row-major over the output axes) from acc = 0: no atomics, the same bits in either mode.
// The CPU twins (cpu/pool.go) state the arithmetic; with --fmad=false each operation below is
// one rounded float32 operation, and exp/log are the project's algorithms (f32math.cuh).
#include "common.cuh"
#include "f32math.cuh"

// POOL_AXES is the number of spatial axes in the kernels' sizes (cpu.PoolAxes).
#define POOL_AXES 8

// PoolGeom is the geometry from the geometry array: per axis input and output size, window, stride and
// padding (each below 2^30, checked by ops; the window volume is below 2^24).
struct PoolGeom {
  int in[POOL_AXES], out[POOL_AXES], k[POOL_AXES], s[POOL_AXES], p[POOL_AXES];
};

// POOL_GEOM_LEN is the length of the geometry array (cpu.PoolGeomLen): input sizes, output
// sizes, windows, strides and paddings, POOL_AXES entries each.
#define POOL_GEOM_LEN (5 * POOL_AXES)

// Every kernel takes the geometry array, the channel count nc and the per-channel input and
// output volumes (products of the axes' sizes).
#define POOL_PARAMS const u32* __restrict__ geom, u64 nc, u64 inVol, u64 outVol

// POOL_GEOM(g) stages the geometry array in shared memory and reads it into g.
#define POOL_GEOM(g)                                                                 \
  __shared__ int pool_sg[POOL_GEOM_LEN];                                             \
  for (int j = threadIdx.x; j < POOL_GEOM_LEN; j += blockDim.x) pool_sg[j] = (int)geom[j]; \
  __syncthreads();                                                                   \
  PoolGeom g;                                                                        \
  _Pragma("unroll") for (int a = 0; a < POOL_AXES; a++) {                            \
    g.in[a] = pool_sg[a];                                                            \
    g.out[a] = pool_sg[POOL_AXES + a];                                               \
    g.k[a] = pool_sg[2 * POOL_AXES + a];                                             \
    g.s[a] = pool_sg[3 * POOL_AXES + a];                                             \
    g.p[a] = pool_sg[4 * POOL_AXES + a];                                             \
  }

__device__ __forceinline__ int pool_k_vol(const PoolGeom& g) {
  int v = 1;
#pragma unroll
  for (int a = 0; a < POOL_AXES; a++) v *= g.k[a];
  return v;
}

// pool_window decodes output element i into its window's first cell per axis (start) and
// returns its channel's offset in x.
__device__ __forceinline__ u64 pool_window(const PoolGeom& g, u64 inVol, u64 i, int* start) {
  u64 r = i;
#pragma unroll
  for (int a = POOL_AXES - 1; a >= 0; a--) {
    int o = 0;
    if (g.out[a] != 1) {
      const u64 q = r / (u64)g.out[a];
      o = (int)(r - q * (u64)g.out[a]);
      r = q;
    }
    start[a] = o * g.s[a] - g.p[a];
  }
  return r * inVol;
}

// PoolCells<A>::walk visits the cells of a window in row-major order, padding included:
// f(ok, off, w) with ok false for padding, off the cell's offset in its channel (meaningless for
// padding) and w its window offset.
template <int A>
struct PoolCells {
  template <class F>
  static __device__ __forceinline__ void walk(const PoolGeom& g, const int* start, long long off, int w,
                                              bool ok, F& f) {
    const int k = g.k[A], n = g.in[A], s0 = start[A];
    for (int c = 0; c < k; c++) {
      const int x = s0 + c;
      PoolCells<A + 1>::walk(g, start, off * n + x, w * k + c, ok && x >= 0 && x < n, f);
    }
  }
};
template <>
struct PoolCells<POOL_AXES> {
  template <class F>
  static __device__ __forceinline__ void walk(const PoolGeom&, const int*, long long off, int w, bool ok,
                                              F& f) {
    f(ok, off, w);
  }
};

// PoolCover<A>::walk visits the windows containing the input cell of coordinates t[a] - p[a]
// in ascending row-major order of their output coordinates: f(o, w, count) with o the window's
// output offset (from the channel's base o0), w the cell's window offset and count the number of
// the window's in-bounds cells.
template <int A>
struct PoolCover {
  template <class F>
  static __device__ __forceinline__ void walk(const PoolGeom& g, const int* t, u64 o, int w, int count,
                                              F& f) {
    const int k = g.k[A], s = g.s[A], n = g.in[A];
    int lo = t[A] - (k - 1);
    lo = lo <= 0 ? 0 : (lo + s - 1) / s;
    const int hi = min(t[A] / s, g.out[A] - 1);
    for (int c = lo; c <= hi; c++) {
      const int s0 = c * s - g.p[A];
      const int inb = min(s0 + k, n) - max(s0, 0);
      PoolCover<A + 1>::walk(g, t, o * (u64)g.out[A] + (u64)c, w * k + (t[A] - c * s), count * inb, f);
    }
  }
};
template <>
struct PoolCover<POOL_AXES> {
  template <class F>
  static __device__ __forceinline__ void walk(const PoolGeom&, const int*, u64 o, int w, int count, F& f) {
    f(o, w, count);
  }
};

// pool_cover decodes input element i into t[a] = x[a] + p[a] and returns its channel index.
__device__ __forceinline__ u64 pool_cover(const PoolGeom& g, u64 i, int* t) {
  u64 r = i;
#pragma unroll
  for (int a = POOL_AXES - 1; a >= 0; a--) {
    int x = 0;
    if (g.in[a] != 1) {
      const u64 q = r / (u64)g.in[a];
      x = (int)(r - q * (u64)g.in[a]);
      r = q;
    }
    t[a] = x + g.p[a];
  }
  return r;
}

// max_pool_fwd / max_pool_argmax / max_pool_fwd_argmax: the first maximum of the in-bounds
// cells (the first NaN is the maximum): its value into y and float(w) of its window offset into
// idx, each where not null (cpu.MaxPoolFwd, cpu.MaxPoolArgmax, cpu.MaxPoolFwdArgmax).
__device__ __forceinline__ void max_pool(float* __restrict__ y, float* __restrict__ idx,
                                         const float* __restrict__ x, const PoolGeom& g, u64 nc,
                                         u64 inVol, u64 outVol) {
  TL_FOR(i, nc * outVol) {
    int start[POOL_AXES];
    const float* xs = x + pool_window(g, inVol, i, start);
    float best = 0.0f;
    bool first = true;
    int at = 0;
    auto f = [&](bool ok, long long off, int w) {
      if (!ok) return;
      const float v = xs[off];
      if (first || v > best || (v != v && best == best)) {
        best = v;
        first = false;
        at = w;
      }
    };
    PoolCells<0>::walk(g, start, 0, 0, true, f);
    if (y) y[i] = best;
    if (idx) idx[i] = (float)at;
  }
}

extern "C" __global__ void max_pool_fwd(float* __restrict__ y, const float* __restrict__ x, POOL_PARAMS) {
  POOL_GEOM(g)
  max_pool(y, nullptr, x, g, nc, inVol, outVol);
}

extern "C" __global__ void max_pool_argmax(float* __restrict__ idx, const float* __restrict__ x, POOL_PARAMS) {
  POOL_GEOM(g)
  max_pool(nullptr, idx, x, g, nc, inVol, outVol);
}

extern "C" __global__ void max_pool_fwd_argmax(float* __restrict__ y, float* __restrict__ idx,
                                               const float* __restrict__ x, POOL_PARAMS) {
  POOL_GEOM(g)
  max_pool(y, idx, x, g, nc, inVol, outVol);
}

// max_pool_bwd: dx[i] = Σ over covering windows o (ascending) with idx[o] == float(w) of gO[o]
// (cpu.MaxPoolBwd).
extern "C" __global__ void max_pool_bwd(float* __restrict__ dx, const float* __restrict__ idx,
                                        const float* __restrict__ gO, POOL_PARAMS) {
  POOL_GEOM(g)
  TL_FOR(i, nc * inVol) {
    int t[POOL_AXES];
    const u64 o0 = pool_cover(g, i, t);
    float acc = 0.0f;
    auto f = [&](u64 o, int w, int) {
      if (idx[o] == (float)w) acc = acc + gO[o];
    };
    PoolCover<0>::walk(g, t, o0, 0, 1, f);
    dx[i] = acc;
  }
}

// avg_pool_fwd: the in-bounds cells summed in order from 0, divided by float(den): the window
// volume when cip != 0, else the count of in-bounds cells (cpu.AvgPoolFwd).
extern "C" __global__ void avg_pool_fwd(float* __restrict__ y, const float* __restrict__ x, POOL_PARAMS,
                                        u64 cip) {
  POOL_GEOM(g)
  const int kv = pool_k_vol(g);
  TL_FOR(i, nc * outVol) {
    int start[POOL_AXES];
    const float* xs = x + pool_window(g, inVol, i, start);
    float acc = 0.0f;
    int count = 0;
    auto f = [&](bool ok, long long off, int) {
      if (!ok) return;
      acc = acc + xs[off];
      count++;
    };
    PoolCells<0>::walk(g, start, 0, 0, true, f);
    y[i] = acc / (float)(cip ? kv : count);
  }
}

// avg_pool_bwd: dx[i] = Σ over covering windows o (ascending) of gO[o] / float(den[o])
// (cpu.AvgPoolBwd).
extern "C" __global__ void avg_pool_bwd(float* __restrict__ dx, const float* __restrict__ gO, POOL_PARAMS,
                                        u64 cip) {
  POOL_GEOM(g)
  const int kv = pool_k_vol(g);
  TL_FOR(i, nc * inVol) {
    int t[POOL_AXES];
    const u64 o0 = pool_cover(g, i, t);
    float acc = 0.0f;
    auto f = [&](u64 o, int, int count) { acc = acc + gO[o] / (float)(cip ? kv : count); };
    PoolCover<0>::walk(g, t, o0, 0, 1, f);
    dx[i] = acc;
  }
}

// smooth_pool_stats: the pivot (beta > 0: the first maximum, beta < 0: the first minimum, the
// first NaN winning; padding read as 0) and the sum of tl_expf(beta*d), d = v - pivot (0 when
// v == pivot), over the window's cells in order (cpu.smoothStats).
__device__ __forceinline__ void smooth_pool_stats(const float* __restrict__ xs, const PoolGeom& g,
                                                  const int* start, float beta, float* pivot, float* sum) {
  float p = 0.0f;
  bool first = true;
  auto fp = [&](bool ok, long long off, int) {
    const float v = ok ? xs[off] : 0.0f;
    if (first || (beta > 0.0f && v > p) || (beta < 0.0f && v < p) || (v != v && p == p)) {
      p = v;
      first = false;
    }
  };
  PoolCells<0>::walk(g, start, 0, 0, true, fp);
  float s = 0.0f;
  auto fs = [&](bool ok, long long off, int) {
    const float v = ok ? xs[off] : 0.0f;
    const float d = v == p ? 0.0f : v - p;
    s = s + tl_expf(beta * d);
  };
  PoolCells<0>::walk(g, start, 0, 0, true, fs);
  *pivot = p;
  *sum = s;
}

// smooth_max_pool_fwd: y = pivot + tl_logf(sum) / beta (cpu.SmoothMaxPoolFwd).
extern "C" __global__ void smooth_max_pool_fwd(float* __restrict__ y, const float* __restrict__ x, POOL_PARAMS,
                                               float beta) {
  POOL_GEOM(g)
  TL_FOR(i, nc * outVol) {
    int start[POOL_AXES];
    const float* xs = x + pool_window(g, inVol, i, start);
    float p, s;
    smooth_pool_stats(xs, g, start, beta, &p, &s);
    y[i] = p + tl_logf(s) / beta;
  }
}

// smooth_max_pool_stats: each window's pivot and sum (cpu.SmoothMaxPoolStats).
extern "C" __global__ void smooth_max_pool_stats(float* __restrict__ pivot, float* __restrict__ sum,
                                                 const float* __restrict__ x, POOL_PARAMS, float beta) {
  POOL_GEOM(g)
  TL_FOR(i, nc * outVol) {
    int start[POOL_AXES];
    const float* xs = x + pool_window(g, inVol, i, start);
    float p, s;
    smooth_pool_stats(xs, g, start, beta, &p, &s);
    pivot[i] = p;
    sum[i] = s;
  }
}

// smooth_max_pool_bwd: dx[i] = Σ over covering windows o (ascending) of gO[o] * (e / sum[o]),
// e = tl_expf(beta * d), d = v - pivot[o] (0 when equal) (cpu.SmoothMaxPoolBwd).
extern "C" __global__ void smooth_max_pool_bwd(float* __restrict__ dx, const float* __restrict__ x,
                                               const float* __restrict__ pivot, const float* __restrict__ sum,
                                               const float* __restrict__ gO, POOL_PARAMS, float beta) {
  POOL_GEOM(g)
  TL_FOR(i, nc * inVol) {
    int t[POOL_AXES];
    const u64 o0 = pool_cover(g, i, t);
    const float v = x[i];
    float acc = 0.0f;
    auto f = [&](u64 o, int, int) {
      const float p = pivot[o];
      const float d = v == p ? 0.0f : v - p;
      const float e = tl_expf(beta * d);
      acc = acc + gO[o] * (e / sum[o]);
    };
    PoolCover<0>::walk(g, t, o0, 0, 1, f);
    dx[i] = acc;
  }
}
