// elementwise_math.cu: the pointwise kernels built on exp, log and tanh (f32math.cuh), forward
// and backward; the arithmetic ones are in elementwise.cu. Twins and arithmetic as there
// (cpu/elementwise.go, cpu/rules.go).
#include "common.cuh"
#include "f32math.cuh"
#include "map.cuh"

// ---- scalar rules (twins in cpu/rules.go) ----

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

// ---- forward ----
UNARY(exp_fwd, tl_expf(x))
UNARY(log_fwd, tl_logf(x))
UNARY(sigmoid_fwd, tl_sigmoidf(x))
UNARY(tanh_fwd, tl_tanhf(x))
UNARY(softplus_fwd, tl_softplusf(x))
UNARY(gelu_fwd, tl_geluf(x))
UNARY1(safe_log_fwd, eps, tl_logf(tl_softplusf(x) + eps))

// ---- backward: (x, g) -> dx ----
BINARY(exp_bwd, b * tl_expf(a))
BINARY(sigmoid_bwd, tl_sigmoid_bwdf(a, b))
BINARY(tanh_bwd, tl_tanh_bwdf(a, b))
BINARY(softplus_bwd, b * tl_sigmoidf(a))
BINARY(gelu_bwd, tl_gelu_bwdf(a, b))
BINARY1(safe_log_bwd, eps, (b * tl_sigmoidf(a)) / (tl_softplusf(a) + eps))
