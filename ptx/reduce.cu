// reduce.cu: whole-buffer reductions in an order that depends on the length only.
//
// sum_chunks: block c reduces chunk c = x[c*8192, min(n, (c+1)*8192)). Thread t (of 256)
// accumulates, starting from -0.0 (the additive identity), the elements
// c*8192 + j*1024 + 4t + l for j = 0..7, l = 0..3 in that order, skipping indices >= n; then the
// 256 partials are combined by the halving tree p[t] += p[t+s] for s = 128, 64, ..., 1.
// out[c] = tree / divisor. The host repeats passes until one value is left (cpu.SumChunks is the
// twin and ops drives both the same way).
#include "common.cuh"

#define SUM_THREADS 256
#define SUM_CHUNK 8192

extern "C" __global__ void __launch_bounds__(SUM_THREADS)
    sum_chunks(float* out, const float* x, u64 n, float divisor) {
  __shared__ float part[SUM_THREADS];
  u64 base = (u64)blockIdx.x * SUM_CHUNK;
  u32 t = threadIdx.x;
  float v[32];
#pragma unroll
  for (int j = 0; j < 8; j++) {
    u64 e = base + (u64)j * 1024 + 4 * t;
    if (e + 4 <= n) {
      float4 q = *(const float4*)(x + e);
      v[4 * j] = q.x;
      v[4 * j + 1] = q.y;
      v[4 * j + 2] = q.z;
      v[4 * j + 3] = q.w;
    } else {
#pragma unroll
      for (int l = 0; l < 4; l++) v[4 * j + l] = e + l < n ? x[e + l] : -0.0f;
    }
  }
  float acc = -0.0f;
#pragma unroll
  for (int k = 0; k < 32; k++) acc = acc + v[k];
  part[t] = acc;
  __syncthreads();
#pragma unroll
  for (u32 s = 128; s >= 32; s >>= 1) {
    if (t < s) part[t] = part[t] + part[t + s];
    __syncthreads();
  }
  if (t < 32) {
    float w = part[t];
#pragma unroll
    for (int s = 16; s >= 1; s >>= 1) w = w + __shfl_down_sync(0xffffffffu, w, s);
    if (t == 0) out[blockIdx.x] = w / divisor;
  }
}
