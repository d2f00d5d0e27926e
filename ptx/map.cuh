// map.cuh: the loops and kernel-defining macros of the pointwise families (elementwise.cu,
// elementwise_math.cu). Parameters: destinations first, then inputs, then the length n, then
// float scalars. Buffers come from cuMemAlloc (256-byte aligned) and are never offset views, so
// whole float4 loads are aligned; the tail (n mod 4) is handled element by element.
#pragma once
#include "common.cuh"

// The map loops. A block of 128 threads covers 2 * 128 float4s per step, each thread two of
// them, 128 apart: the thread issues its loads before any store, so that more loads are in
// flight than in a loop of load-store pairs (the store may alias the next load, so the compiler
// cannot hoist it). Small blocks of two float4s per thread beat the earlier 256 threads with four
// each, and one float4 per thread (BENCHMARKS.md, "Figures behind the code"). The module's PTX size sets its JIT time at
// first use (a fully unrolled loop took three times as long), so the code stays small: the stores run in a loop that is not unrolled, shifting the loaded values down
// the register array (TL_MAP_SHIFT), and the loads past the end re-read the last float4
// (TL_MAP_AT clamps the index) instead of branching; only the stores are guarded. The launch
// covers the buffer in one step per block (ops.mapGrid: 128 threads, TL_MAP_U float4s each);
// the outer loop only runs for grids capped below that. An element's arithmetic does not
// depend on any of this. Outputs never overlap inputs except as the same buffer, and each
// element is read and then written by one thread.
#define TL_MAP_U 2
#define TL_MAP_SHIFT(a)                                                            \
  _Pragma("unroll") for (int r = 0; r + 1 < TL_MAP_U; r++) a[r] = a[r + 1]
#define TL_MAP_FOR(base, n4)                                                       \
  for (u64 base = (u64)blockIdx.x * blockDim.x * TL_MAP_U + threadIdx.x; base < (n4); \
       base += (u64)gridDim.x * blockDim.x * TL_MAP_U)
// TL_MAP_AT is the k-th float4 index of the thread's step, clamped to the last one (n4 >= 1).
#define TL_MAP_AT(base, k, n4) min((base) + (u64)(k) * blockDim.x, (n4) - 1)

// TL_MAP_LANE applies f to lane c of the current float4 of every input (v[j][0].c) and stores
// its results in lane c of r.
#define TL_MAP_LANE(c)                                                             \
  {                                                                                \
    float x[NI], y[NO];                                                            \
    _Pragma("unroll") for (int j = 0; j < NI; j++) x[j] = v[j][0].c;               \
    f(x, y);                                                                       \
    _Pragma("unroll") for (int o = 0; o < NO; o++) r[o].c = y[o];                 \
  }

// map_n is the map loop for NI inputs and NO outputs: f(x, y) computes one element, reading
// x[0..NI) and writing y[0..NO).
template <int NI, int NO, typename F>
__device__ __forceinline__ void map_n(float* const (&out)[NO], const float* const (&in)[NI],
                                      u64 n, F f) {
  u64 n4 = n / 4;
  TL_MAP_FOR(base, n4) {
    float4 v[NI][TL_MAP_U];
#pragma unroll
    for (int k = 0; k < TL_MAP_U; k++) {
      u64 i = TL_MAP_AT(base, k, n4);
#pragma unroll
      for (int j = 0; j < NI; j++) v[j][k] = ((const float4*)in[j])[i];
    }
#pragma unroll 1
    for (int k = 0; k < TL_MAP_U; k++) {
      u64 i = base + (u64)k * blockDim.x;
      if (i < n4) {
        float4 r[NO];
        TL_MAP_LANE(x) TL_MAP_LANE(y) TL_MAP_LANE(z) TL_MAP_LANE(w)
#pragma unroll
        for (int o = 0; o < NO; o++) ((float4*)out[o])[i] = r[o];
      }
#pragma unroll
      for (int j = 0; j < NI; j++) TL_MAP_SHIFT(v[j]);
    }
  }
  TL_FOR(e, n - 4 * n4) {
    u64 i = 4 * n4 + e;
    float x[NI], y[NO];
#pragma unroll
    for (int j = 0; j < NI; j++) x[j] = in[j][i];
    f(x, y);
#pragma unroll
    for (int o = 0; o < NO; o++) out[o][i] = y[o];
  }
}

// The kernel-defining macros: one output from one input (UNARY, with 0-2 float scalars), from
// two inputs (BINARY), and two outputs from three inputs (GRAD2, the binary backward kernels,
// whose body writes *ra and *rb).
#define TL_MAP1(out, x, n, capture, expr)                                          \
  map_n<1, 1>({out}, {x}, n, capture(const float* in, float* y) { float x = in[0]; y[0] = expr; })
#define TL_MAP2(out, a, b, n, capture, expr)                                       \
  map_n<2, 1>({out}, {a, b}, n, capture(const float* in, float* y) {               \
    float a = in[0], b = in[1];                                                    \
    y[0] = expr;                                                                   \
  })
#define UNARY(name, expr)                                                          \
  extern "C" __global__ void name(float* out, const float* x, u64 n) {             \
    TL_MAP1(out, x, n, [], expr);                                                  \
  }
#define UNARY1(name, s0, expr)                                                     \
  extern "C" __global__ void name(float* out, const float* x, u64 n, float s0) {   \
    TL_MAP1(out, x, n, [=], expr);                                                 \
  }
#define UNARY2(name, s0, s1, expr)                                                 \
  extern "C" __global__ void name(float* out, const float* x, u64 n, float s0,     \
                                  float s1) {                                      \
    TL_MAP1(out, x, n, [=], expr);                                                 \
  }
#define BINARY(name, expr)                                                         \
  extern "C" __global__ void name(float* out, const float* a, const float* b,      \
                                  u64 n) {                                         \
    TL_MAP2(out, a, b, n, [], expr);                                               \
  }
#define BINARY1(name, s0, expr)                                                    \
  extern "C" __global__ void name(float* out, const float* a, const float* b,      \
                                  u64 n, float s0) {                               \
    TL_MAP2(out, a, b, n, [=], expr);                                              \
  }
#define BINARY2(name, s0, s1, expr)                                                \
  extern "C" __global__ void name(float* out, const float* a, const float* b,      \
                                  u64 n, float s0, float s1) {                     \
    TL_MAP2(out, a, b, n, [=], expr);                                              \
  }
#define GRAD2(name, body)                                                          \
  extern "C" __global__ void name(float* da, float* db, const float* a,            \
                                  const float* b, const float* g, u64 n) {         \
    map_n<3, 2>({da, db}, {a, b, g}, n, [](const float* in, float* y) {            \
      float a = in[0], b = in[1], g = in[2];                                       \
      float *ra = &y[0], *rb = &y[1];                                              \
      body                                                                         \
    });                                                                            \
  }
