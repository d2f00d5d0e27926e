// elementwise.cu: the arithmetic pointwise kernels and their backward kernels; the ones built
// on exp, log and tanh are in elementwise_math.cu (a module of their own: a module is compiled
// by the driver's JIT on first use, in time proportional to its size). Each kernel's arithmetic
// is stated, operation by operation, in the doc comment of its CPU twin in package cpu
// (cpu/elementwise.go); both sides round every operation separately (--fmad=false) and use the
// shared float32 algorithms of f32math.cuh.
#include "common.cuh"
#include "f32math.cuh"
#include "map.cuh"

// ---- scalar rules shared by several kernels (twins in cpu/elementwise.go) ----

// tl_clampf: min(max(x, lo), hi) with NaN propagating: r = x < lo ? lo : x; r > hi ? hi : r.
__device__ __forceinline__ float tl_clampf(float x, float lo, float hi) {
  float r = x < lo ? lo : x;
  return r > hi ? hi : r;
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

// ---- forward ----
UNARY(abs_fwd, fabsf(x))
UNARY(sqrt_fwd, tl_sqrtf(x))
UNARY(inv_fwd, 1.0f / x)
UNARY(relu_fwd, x > 0.0f ? x : 0.0f)
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
BINARY(log_bwd, b / a)
BINARY(inv_bwd, -((b * (1.0f / a)) * (1.0f / a)))
BINARY2(clamp_bwd, lo, hi, (a > lo && a < hi) ? b : 0.0f)

// ---- backward: (a, b, g) -> (da, db) ----
GRAD2(max_bwd, { tl_max_bwdf(a, b, g, ra, rb); })
GRAD2(min_bwd, { tl_min_bwdf(a, b, g, ra, rb); })
GRAD2(mul_bwd, { *ra = g * b; *rb = g * a; })
GRAD2(div_bwd, { *ra = g / b; *rb = -(g * ((a / b) / b)); })

// ---- selection: bits move unchanged; a condition is true when != 0 (NaN too, -0 not) ----
// where_fwd: out = c ? a : b; where_bwd: (da, db) = c ? (g, 0) : (0, g); masked_fill:
// out = m ? v : x (twins: cpu.WhereFwd, cpu.WhereBwd, cpu.MaskedFill).
extern "C" __global__ void where_fwd(float* out, const float* c, const float* a, const float* b, u64 n) {
  map_n<3, 1>({out}, {c, a, b}, n, [](const float* in, float* y) { y[0] = in[0] != 0.0f ? in[1] : in[2]; });
}
extern "C" __global__ void where_bwd(float* da, float* db, const float* c, const float* g, u64 n) {
  map_n<2, 2>({da, db}, {c, g}, n, [](const float* in, float* y) {
    bool t = in[0] != 0.0f;
    y[0] = t ? in[1] : 0.0f;
    y[1] = t ? 0.0f : in[1];
  });
}
BINARY1(masked_fill, v, b != 0.0f ? v : a)
