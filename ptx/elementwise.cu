// elementwise.cu: pointwise kernels and their backward kernels. Each kernel's arithmetic is
// stated, operation by operation, in the doc comment of its CPU twin in package cpu
// (cpu/elementwise.go); both sides round every operation separately (--fmad=false) and use
// the shared float32 algorithms of f32math.cuh.
//
// Parameters: destinations first, then inputs, then the length n, then float scalars.
// Buffers come from cuMemAlloc (256-byte aligned) and are never offset views, so whole float4
// loads are aligned; the tail (n mod 4) is handled element by element.
#include "common.cuh"
#include "f32math.cuh"

// ---- scalar rules shared by several kernels (twins in cpu/elementwise.go) ----

// tl_clampf: min(max(x, lo), hi) with NaN propagating: r = x < lo ? lo : x; r > hi ? hi : r.
__device__ __forceinline__ float tl_clampf(float x, float lo, float hi) {
  float r = x < lo ? lo : x;
  return r > hi ? hi : r;
}
// tl_maxf / tl_minf propagate NaN (as a + b) and otherwise return a > b ? a : b (a < b ? a : b).
__device__ __forceinline__ float tl_maxf(float a, float b) {
  return (a != a || b != b) ? a + b : (a > b ? a : b);
}
__device__ __forceinline__ float tl_minf(float a, float b) {
  return (a != a || b != b) ? a + b : (a < b ? a : b);
}
// tl_max_bwdf routes g to the strictly larger input and splits it 0.5/0.5 otherwise (ties, NaN).
__device__ __forceinline__ void tl_max_bwdf(float a, float b, float g, float* da, float* db) {
  if (a > b) { *da = g; *db = 0.0f; }
  else if (b > a) { *da = 0.0f; *db = g; }
  else { float h = 0.5f * g; *da = h; *db = h; }
}
__device__ __forceinline__ void tl_min_bwdf(float a, float b, float g, float* da, float* db) {
  if (a < b) { *da = g; *db = 0.0f; }
  else if (b < a) { *da = 0.0f; *db = g; }
  else { float h = 0.5f * g; *da = h; *db = h; }
}
// tl_softplusf: max(x, 0) + log1p(exp(-|x|)).
__device__ __forceinline__ float tl_softplusf(float x) {
  return (x > 0.0f ? x : 0.0f) + tl_log1pf(tl_expf(-fabsf(x)));
}
__device__ __forceinline__ float tl_sigmoid_bwdf(float x, float g) {
  float s = tl_sigmoidf(x);
  return g * (s * (1.0f - s));
}
__device__ __forceinline__ float tl_tanh_bwdf(float x, float g) {
  float t = tl_tanhf(x);
  return g * (1.0f - t * t);
}
// GELU, tanh approximation, through 0.5*(1 + tanh(u)) = 1/(1 + exp(-2u)); twins: cpu.Geluf and
// cpu.GeluBwdf. TL_GELU_K2 is exactly 2*float32(sqrt(2/pi)).
#define TL_GELU_C 0.044715f
#define TL_GELU_3C 0.134145f
#define TL_GELU_K2 1.5957691216f
__device__ __forceinline__ float tl_geluf(float x) {
  float v = TL_GELU_K2 * (x + ((TL_GELU_C * x) * x) * x);
  return x / (1.0f + tl_expf(-v));
}
__device__ __forceinline__ float tl_gelu_bwdf(float x, float g) {
  float v = TL_GELU_K2 * (x + ((TL_GELU_C * x) * x) * x);
  float s = 1.0f / (1.0f + tl_expf(-v));
  float d = s + ((x * (s * (1.0f - s))) * TL_GELU_K2) * (1.0f + (TL_GELU_3C * x) * x);
  return g * d;
}

template <typename F>
__device__ __forceinline__ void map1(float* out, const float* x, u64 n, F f) {
  u64 n4 = n / 4;
  const float4* x4 = (const float4*)x;
  float4* o4 = (float4*)out;
  TL_FOR(i, n4) {
    float4 v = x4[i];
    o4[i] = make_float4(f(v.x), f(v.y), f(v.z), f(v.w));
  }
  TL_FOR(j, n - 4 * n4) { u64 i = 4 * n4 + j; out[i] = f(x[i]); }
}

template <typename F>
__device__ __forceinline__ void map2(float* out, const float* a, const float* b, u64 n, F f) {
  u64 n4 = n / 4;
  const float4* a4 = (const float4*)a;
  const float4* b4 = (const float4*)b;
  float4* o4 = (float4*)out;
  TL_FOR(i, n4) {
    float4 u = a4[i], v = b4[i];
    o4[i] = make_float4(f(u.x, v.x), f(u.y, v.y), f(u.z, v.z), f(u.w, v.w));
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
  TL_FOR(i, n4) {
    float4 u = a4[i], v = b4[i], w = g4[i];
    float4 ra, rb;
    f(u.x, v.x, w.x, &ra.x, &rb.x);
    f(u.y, v.y, w.y, &ra.y, &rb.y);
    f(u.z, v.z, w.z, &ra.z, &rb.z);
    f(u.w, v.w, w.w, &ra.w, &rb.w);
    da4[i] = ra;
    db4[i] = rb;
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

// ---- forward ----
UNARY(abs_fwd, fabsf(x))
UNARY(sqrt_fwd, tl_sqrtf(x))
UNARY(exp_fwd, tl_expf(x))
UNARY(log_fwd, tl_logf(x))
UNARY(inv_fwd, 1.0f / x)
UNARY(relu_fwd, x > 0.0f ? x : 0.0f)
UNARY(sigmoid_fwd, tl_sigmoidf(x))
UNARY(tanh_fwd, tl_tanhf(x))
UNARY(softplus_fwd, tl_softplusf(x))
UNARY(gelu_fwd, tl_geluf(x))
UNARY1(safe_log_fwd, eps, tl_logf(tl_softplusf(x) + eps))
UNARY1(scale, c, x * c)
UNARY2(clamp_fwd, lo, hi, tl_clampf(x, lo, hi))
BINARY(add, a + b)
BINARY(sub, a - b)
BINARY(mul_fwd, a * b)
BINARY(div_fwd, a / b)
BINARY(max_fwd, tl_maxf(a, b))
BINARY(min_fwd, tl_minf(a, b))
BINARY1(axpy, c, tl_fmaf(c, b, a))

// ---- backward: (x, g) -> dx ----
BINARY(abs_bwd, (float)((a > 0.0f) - (a < 0.0f)) * b)
BINARY(sqrt_bwd, a > 0.0f ? b * (1.0f / (2.0f * tl_sqrtf(a))) : 0.0f)
BINARY(relu_bwd, a > 0.0f ? b : 0.0f)
BINARY(exp_bwd, b * tl_expf(a))
BINARY(log_bwd, b / a)
BINARY(inv_bwd, -((b * (1.0f / a)) * (1.0f / a)))
BINARY(sigmoid_bwd, tl_sigmoid_bwdf(a, b))
BINARY(tanh_bwd, tl_tanh_bwdf(a, b))
BINARY(softplus_bwd, b * tl_sigmoidf(a))
BINARY(gelu_bwd, tl_gelu_bwdf(a, b))
BINARY1(safe_log_bwd, eps, (b * tl_sigmoidf(a)) / (tl_softplusf(a) + eps))
BINARY2(clamp_bwd, lo, hi, (a > lo && a < hi) ? b : 0.0f)

// ---- backward: (a, b, g) -> (da, db) ----
GRAD2(max_bwd, { tl_max_bwdf(a, b, g, ra, rb); })
GRAD2(min_bwd, { tl_min_bwdf(a, b, g, ra, rb); })
GRAD2(mul_bwd, { *ra = g * b; *rb = g * a; })
GRAD2(div_bwd, { *ra = g / b; *rb = -(g * (a / (b * b))); })
