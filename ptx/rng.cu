// rng.cu: counter-based random kernels. Element i depends only on (key, i): SplitMix64 of
// key + i (wrapping), low 32 bits. The key is a parameter, or comes from a count in device memory
// (tl_draw_key), so that a captured step draws new numbers at each replay. Twins: cpu/rng.go.
#include "common.cuh"
#include "f32math.cuh"

// tl_uniformf maps the low 32 bits u of z to float32(u) * 2^-32 (one rounding, RNE), and sends
// the rare result 1.0 (u >= 2^32 - 128) to 0x1.fffffep-1, the largest float32 below 1.
__device__ __forceinline__ float tl_uniformf(u64 z) {
  float f = (float)(u32)z * 2.3283064365386963e-10f;
  return f < 1.0f ? f : 0.99999994f;
}

// tl_draw_key returns the key of a draw (cpu.DrawKey): key itself when count is null, else
// SplitMix64(key ^ (*count + offset)), which is ops.KeyOf(seed, *count + offset) when key is
// SplitMix64(seed).
__device__ __forceinline__ u64 tl_draw_key(u64 key, const u64* count, u64 offset) {
  return count ? tl_splitmix64(key ^ (*count + offset)) : key;
}

extern "C" __global__ void rand_uniform(float* out, const u64* count, u64 n, u64 key, u64 offset) {
  u64 k = tl_draw_key(key, count, offset);
  TL_FOR(i, n) { out[i] = tl_uniformf(tl_splitmix64(k + i)); }
}

// bernoulli_mask: out[i] = keep > uniform(i) ? 1 : 0 (float32 compare).
extern "C" __global__ void bernoulli_mask(float* out, const u64* count, u64 n, u64 key, u64 offset,
                                          float keep) {
  u64 k = tl_draw_key(key, count, offset);
  TL_FOR(i, n) { out[i] = keep > tl_uniformf(tl_splitmix64(k + i)) ? 1.0f : 0.0f; }
}

// rand_normal: Box-Muller (cosine branch) on the draws 2i and 2i+1:
// u1 = ((r1 >> 9) + 0.5) * 2^-23 in (0, 1), u2 = (r2 >> 8) * 2^-24 in [0, 1),
// z = sqrt(-2 log u1) * cos(2 pi u2), out = mean + std * z.
extern "C" __global__ void rand_normal(float* out, const u64* count, u64 n, u64 key, u64 offset,
                                       float mean, float std) {
  u64 k = tl_draw_key(key, count, offset);
  TL_FOR(i, n) {
    u32 r1 = (u32)tl_splitmix64(k + 2 * i);
    u32 r2 = (u32)tl_splitmix64(k + 2 * i + 1);
    float u1 = ((float)(r1 >> 9) + 0.5f) * 1.1920928955078125e-07f;
    float u2 = (float)(r2 >> 8) * 5.9604644775390625e-08f;
    float s, c;
    tl_sincos2pif(u2, &s, &c);
    float z = tl_sqrtf(-2.0f * tl_logf(u1)) * c;
    out[i] = mean + std * z;
  }
}
