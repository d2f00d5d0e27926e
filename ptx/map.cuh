// map.cuh: the loops and kernel-defining macros of the pointwise families (elementwise.cu,
// elementwise_math.cu). Parameters: destinations first, then inputs, then the length n, then
// float scalars. Buffers come from cuMemAlloc (256-byte aligned) and are never offset views, so
// whole float4 loads are aligned; the tail (n mod 4) is handled element by element.
#pragma once
#include "common.cuh"

// The map loops. A block covers 4 * blockDim.x float4s per step, each thread four of them,
// blockDim.x apart: the thread issues its four loads before any store, so that more loads are
// in flight than in a loop of load-store pairs (the store may alias the next load, so the
// compiler cannot hoist it). H100, 2^26 floats: add 2941 -> 3033 GB/s, tanh 2745 -> 2942
// (PyTorch 3022 / 2970). The module's PTX size sets its JIT time at first use (fully unrolled
// it took 2.7 s instead of 0.9), so the code stays small: the stores run in a loop that is not
// unrolled, shifting the loaded values down the register array (TL_MAP_SHIFT), and the loads
// past the end re-read the last float4 (TL_MAP_AT clamps the index) instead of branching; only
// the stores are guarded. The launch covers the buffer in one step per block (ops.mapGrid);
// the outer loop only runs for grids capped below that. An element's arithmetic does not
// depend on any of this. Outputs never overlap inputs except as the same buffer, and each
// element is read and then written by one thread.
#define TL_MAP_U 4
#define TL_MAP_SHIFT(a)                                                            \
  _Pragma("unroll") for (int r = 0; r + 1 < TL_MAP_U; r++) a[r] = a[r + 1]
#define TL_MAP_FOR(base, n4)                                                       \
  for (u64 base = (u64)blockIdx.x * blockDim.x * TL_MAP_U + threadIdx.x; base < (n4); \
       base += (u64)gridDim.x * blockDim.x * TL_MAP_U)
// TL_MAP_AT is the k-th float4 index of the thread's step, clamped to the last one (n4 >= 1).
#define TL_MAP_AT(base, k, n4) min((base) + (u64)(k) * blockDim.x, (n4) - 1)

template <typename F>
__device__ __forceinline__ void map1(float* out, const float* x, u64 n, F f) {
  u64 n4 = n / 4;
  const float4* x4 = (const float4*)x;
  float4* o4 = (float4*)out;
  TL_MAP_FOR(base, n4) {
    float4 v[TL_MAP_U];
#pragma unroll
    for (int k = 0; k < TL_MAP_U; k++) v[k] = x4[TL_MAP_AT(base, k, n4)];
#pragma unroll 1
    for (int k = 0; k < TL_MAP_U; k++) {
      u64 i = base + (u64)k * blockDim.x;
      if (i < n4) o4[i] = make_float4(f(v[0].x), f(v[0].y), f(v[0].z), f(v[0].w));
      TL_MAP_SHIFT(v);
    }
  }
  TL_FOR(j, n - 4 * n4) { u64 i = 4 * n4 + j; out[i] = f(x[i]); }
}

template <typename F>
__device__ __forceinline__ void map2(float* out, const float* a, const float* b, u64 n, F f) {
  u64 n4 = n / 4;
  const float4* a4 = (const float4*)a;
  const float4* b4 = (const float4*)b;
  float4* o4 = (float4*)out;
  TL_MAP_FOR(base, n4) {
    float4 u[TL_MAP_U], v[TL_MAP_U];
#pragma unroll
    for (int k = 0; k < TL_MAP_U; k++) {
      u64 i = TL_MAP_AT(base, k, n4);
      u[k] = a4[i];
      v[k] = b4[i];
    }
#pragma unroll 1
    for (int k = 0; k < TL_MAP_U; k++) {
      u64 i = base + (u64)k * blockDim.x;
      if (i < n4)
        o4[i] = make_float4(f(u[0].x, v[0].x), f(u[0].y, v[0].y), f(u[0].z, v[0].z),
                            f(u[0].w, v[0].w));
      TL_MAP_SHIFT(u);
      TL_MAP_SHIFT(v);
    }
  }
  TL_FOR(j, n - 4 * n4) { u64 i = 4 * n4 + j; out[i] = f(a[i], b[i]); }
}

// map3to2 computes two outputs from three inputs (the binary backward kernels).
template <typename F>
__device__ __forceinline__ void map3to2(float* da, float* db, const float* a, const float* b,
                                        const float* g, u64 n, F f) {
  u64 n4 = n / 4;
  const float4* a4 = (const float4*)a;
  const float4* b4 = (const float4*)b;
  const float4* g4 = (const float4*)g;
  float4* da4 = (float4*)da;
  float4* db4 = (float4*)db;
  TL_MAP_FOR(base, n4) {
    float4 u[TL_MAP_U], v[TL_MAP_U], w[TL_MAP_U];
#pragma unroll
    for (int k = 0; k < TL_MAP_U; k++) {
      u64 i = TL_MAP_AT(base, k, n4);
      u[k] = a4[i];
      v[k] = b4[i];
      w[k] = g4[i];
    }
#pragma unroll 1
    for (int k = 0; k < TL_MAP_U; k++) {
      u64 i = base + (u64)k * blockDim.x;
      if (i < n4) {
        float4 ra, rb;
        f(u[0].x, v[0].x, w[0].x, &ra.x, &rb.x);
        f(u[0].y, v[0].y, w[0].y, &ra.y, &rb.y);
        f(u[0].z, v[0].z, w[0].z, &ra.z, &rb.z);
        f(u[0].w, v[0].w, w[0].w, &ra.w, &rb.w);
        da4[i] = ra;
        db4[i] = rb;
      }
      TL_MAP_SHIFT(u);
      TL_MAP_SHIFT(v);
      TL_MAP_SHIFT(w);
    }
  }
  TL_FOR(j, n - 4 * n4) {
    u64 i = 4 * n4 + j;
    f(a[i], b[i], g[i], &da[i], &db[i]);
  }
}

#define UNARY(name, expr)                                                          \
  extern "C" __global__ void name(float* out, const float* x, u64 n) {             \
    map1(out, x, n, [](float x) -> float { return expr; });             \
  }
#define UNARY1(name, s0, expr)                                                     \
  extern "C" __global__ void name(float* out, const float* x, u64 n, float s0) {   \
    map1(out, x, n, [=](float x) -> float { return expr; });            \
  }
#define UNARY2(name, s0, s1, expr)                                                 \
  extern "C" __global__ void name(float* out, const float* x, u64 n, float s0,     \
                                  float s1) {                                      \
    map1(out, x, n, [=](float x) -> float { return expr; });            \
  }
#define BINARY(name, expr)                                                         \
  extern "C" __global__ void name(float* out, const float* a, const float* b,      \
                                  u64 n) {                                         \
    map2(out, a, b, n, [](float a, float b) -> float { return expr; }); \
  }
#define BINARY1(name, s0, expr)                                                    \
  extern "C" __global__ void name(float* out, const float* a, const float* b,      \
                                  u64 n, float s0) {                               \
    map2(out, a, b, n, [=](float a, float b) -> float { return expr; });\
  }
#define BINARY2(name, s0, s1, expr)                                                \
  extern "C" __global__ void name(float* out, const float* a, const float* b,      \
                                  u64 n, float s0, float s1) {                     \
    map2(out, a, b, n,                                                             \
         [=](float a, float b) -> float { return expr; });              \
  }
#define GRAD2(name, body)                                                          \
  extern "C" __global__ void name(float* da, float* db, const float* a,            \
                                  const float* b, const float* g, u64 n) {         \
    map3to2(da, db, a, b, g, n,                                                    \
            [](float a, float b, float g, float* ra, float* rb) body);   \
  }
