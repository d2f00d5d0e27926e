// common.cuh: helpers shared by every kernel family.
#pragma once

typedef unsigned long long u64;
typedef unsigned int u32;

// Grid-stride loop over [0, n). The arithmetic of an element never depends on the launch
// geometry, only on its index.
#define TL_FOR(i, n)                                                              \
  for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < (n);              \
       i += (u64)gridDim.x * blockDim.x)

// tl_maxf / tl_minf propagate NaN (as a + b) and otherwise return a > b ? a : b (a < b ? a : b):
// cpu.Maxf / cpu.Minf.
__device__ __forceinline__ float tl_maxf(float a, float b) {
  return (a != a || b != b) ? a + b : (a > b ? a : b);
}
__device__ __forceinline__ float tl_minf(float a, float b) {
  return (a != a || b != b) ? a + b : (a < b ? a : b);
}

// tl_splitmix64 is the SplitMix64 output function for state x (all arithmetic mod 2^64);
// cpu.SplitMix64 is its twin.
__device__ __forceinline__ u64 tl_splitmix64(u64 x) {
  u64 z = x + 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
