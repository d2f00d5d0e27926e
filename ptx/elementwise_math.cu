// elementwise_math.cu: the pointwise kernels built on exp, log and tanh (f32math.cuh), forward
// and backward; the arithmetic ones are in elementwise.cu. Twins and arithmetic as there
// (cpu/elementwise.go, cpu/rules.go).
#include "common.cuh"
#include "f32math.cuh"
#include "f32pow.cuh"
#include "map.cuh"

// ---- scalar rules (twins in cpu/rules.go) ----

// tl_log1p_unitf: log(1 + t) for t in [0, 1], no division (twin: cpu.log1pUnit, which states
// the algorithm); the constants and the table hold the bits of the Go ones (TestLog1pUnitTable).
#define TL_L1P_SCALE __uint_as_float(0x3f700000u)
#define TL_L1P_BIAS __uint_as_float(0x3f840000u)
#define TL_L1P_Q2 __uint_as_float(0xbf000000u)
#define TL_L1P_Q3 __uint_as_float(0x3eaaaaabu)
#define TL_L1P_Q4 __uint_as_float(0xbe800000u)
#define TL_L1P_Q5 __uint_as_float(0x3e4ccccdu)
static __device__ const unsigned int tl_l1p_invc[16] = {
    0x3f800000u, 0x3f6ffa3bu, 0x3f61e6fdu, 0x3f55573eu, 0x3f4a206bu, 0x3f3ffbb1u, 0x3f36d9f7u, 0x3f2e86fcu,
    0x3f26f439u, 0x3f1ff9d0u, 0x3f1993f9u, 0x3f13adf9u, 0x3f0e4071u, 0x3f091cd9u, 0x3f046f6du, 0x3f000000u};
static __device__ const unsigned int tl_l1p_logc[16] = {
    0x00000000u, 0x3d845e02u, 0x3e00139fu, 0x3e3aa957u, 0x3e71f42fu, 0x3e93568eu, 0x3eac4a30u, 0x3ec42535u,
    0x3edadbedu, 0x3ef0b81eu, 0x3f02ced9u, 0x3f0cd57cu, 0x3f166b98u, 0x3f1fd6ffu, 0x3f28b9b3u, 0x3f317218u};
__device__ __forceinline__ float tl_log1p_unitf(float t) {
  float w = tl_fmaf(t, TL_L1P_SCALE, TL_L1P_BIAS);
  unsigned int i = (__float_as_uint(w) >> 19) & 15u;
  float c = __uint_as_float(tl_l1p_invc[i]);
  float r = tl_fmaf(t, c, c - 1.0f);
  float q = tl_fmaf(r, TL_L1P_Q5, TL_L1P_Q4);
  q = tl_fmaf(r, q, TL_L1P_Q3);
  q = tl_fmaf(r, q, TL_L1P_Q2);
  return __uint_as_float(tl_l1p_logc[i]) + tl_fmaf(r * r, q, r);
}

// tl_softplusf: max(x, 0) + log1p(exp(-|x|)), the logarithm by tl_log1p_unitf.
__device__ __forceinline__ float tl_softplusf(float x) {
  return (x > 0.0f ? x : 0.0f) + tl_log1p_unitf(tl_expf(-fabsf(x)));
}
// tl_safe_log_bwdf: g * sigmoid(x) / (softplus(x) + eps), one exponential for both (twin:
// cpu.SafeLogBwdf).
__device__ __forceinline__ float tl_safe_log_bwdf(float x, float g, float eps) {
  float t = tl_expf(-fabsf(x));
  float s = (x >= 0.0f ? 1.0f : t) / (1.0f + t);
  return (g * s) / (((x > 0.0f ? x : 0.0f) + tl_log1p_unitf(t)) + eps);
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
// cpu.GeluBwdf (tl_gelu_vf = cpu.geluV). TL_GELU_K2 is exactly 2*float32(sqrt(2/pi)).
#define TL_GELU_C 0.044715f
#define TL_GELU_3C 0.134145f
#define TL_GELU_K2 1.5957691216f
__device__ __forceinline__ float tl_gelu_vf(float x) {
  return TL_GELU_K2 * tl_fmaf((TL_GELU_C * x) * x, x, x);
}
__device__ __forceinline__ float tl_geluf(float x) {
  return x / (1.0f + tlf_exp_fused(-tl_gelu_vf(x)));
}
__device__ __forceinline__ float tl_gelu_bwdf(float x, float g) {
  float s = 1.0f / (1.0f + tlf_exp_fused(-tl_gelu_vf(x)));
  float d = s + ((x * (s * (1.0f - s))) * TL_GELU_K2) * (1.0f + (TL_GELU_3C * x) * x);
  return g * d;
}

// tl_pow_scalarf: x^p with PyTorch's special exponents (twin: cpu.PowScalarf); tl_powf is in
// f32pow.cuh.
__device__ __forceinline__ float tl_pow_scalarf(float x, float p) {
  if (p == 0.0f) return 1.0f;
  if (p == 1.0f) return x;
  if (p == 0.5f) return tl_sqrtf(x);
  if (p == 2.0f) return x * x;
  if (p == 3.0f) return (x * x) * x;
  if (p == -0.5f) return 1.0f / tl_sqrtf(x);
  if (p == -1.0f) return 1.0f / x;
  if (p == -2.0f) return 1.0f / (x * x);
  return tl_powf(x, p);
}
// tl_pow_bwdf: PyTorch's pow_backward, 0 for p == 0, else g * (p * x^q), q = p - 1 rounded
// from the host's exponent (twin: cpu.PowBwdf).
__device__ __forceinline__ float tl_pow_bwdf(float x, float g, float p, float q) {
  return p == 0.0f ? 0.0f : g * (p * tl_pow_scalarf(x, q));
}

// ---- forward ----
UNARY(exp_fwd, tl_expf(x))
UNARY(log_fwd, tl_logf(x))
UNARY(sigmoid_fwd, tl_sigmoidf(x))
UNARY(tanh_fwd, tl_tanhf(x))
UNARY(softplus_fwd, tl_softplusf(x))
UNARY(gelu_fwd, tl_geluf(x))
UNARY1(safe_log_fwd, eps, tl_logf(tl_softplusf(x) + eps))
UNARY1(pow_fwd, p, tl_pow_scalarf(x, p))

// ---- backward: (x, g) -> dx ----
BINARY(exp_bwd, b * tl_expf(a))
BINARY(sigmoid_bwd, tl_sigmoid_bwdf(a, b))
BINARY(tanh_bwd, tl_tanh_bwdf(a, b))
BINARY(softplus_bwd, b * tl_sigmoidf(a))
BINARY(gelu_bwd, tl_gelu_bwdf(a, b))
BINARY1(safe_log_bwd, eps, tl_safe_log_bwdf(a, b, eps))
BINARY2(pow_bwd, p, q, tl_pow_bwdf(a, b, p, q))
