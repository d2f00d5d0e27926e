// f32math_parity.cu: computes, on a GPU, the hashes that cpu/testdata/f32math_gpu_golden.txt
// records and that TestGPUGolden recomputes with the Go functions (see f32math_golden_test.go
// for the hash definition).
//
// Build (nvcc 11.8 as for the project's PTX: virtual compute_70 code only, JIT-compiled by the
// driver, no contraction):
//   nvcc -arch=compute_70 -code=compute_70 --fmad=false -o parity f32math_parity.cu
// (newer nvcc that no longer accepts compute_70: -arch=sm_90 --fmad=false; the functions use
// only correctly rounded IEEE operations, so the architecture does not change the results).
// Run on a machine with a GPU:  ./parity > f32math_gpu_golden.txt
#include <cstdio>
#include <cstdlib>
#include "../../ptx/f32math.cuh"

typedef unsigned long long u64;
typedef unsigned int u32;

__host__ __device__ inline u64 mix64(u64 x) {
  u64 z = x + 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

enum { F_EXP, F_EXPM1, F_LOG, F_LOG1P, F_TANH, F_SIGMOID, F_SIN2PI, F_COS2PI, F_SQRT, F_COUNT };
static const char* kNames[F_COUNT] = {"exp", "expm1", "log", "log1p", "tanh", "sigmoid",
                                      "sin2pi", "cos2pi", "sqrt"};

__device__ float eval_unary(int fn, float x) {
  float s, c;
  switch (fn) {
    case F_EXP: return tl_expf(x);
    case F_EXPM1: return tl_expm1f(x);
    case F_LOG: return tl_logf(x);
    case F_LOG1P: return tl_log1pf(x);
    case F_TANH: return tl_tanhf(x);
    case F_SIGMOID: return tl_sigmoidf(x);
    case F_SIN2PI: tl_sincos2pif(x, &s, &c); return s;
    case F_COS2PI: tl_sincos2pif(x, &s, &c); return c;
    default: return tl_sqrtf(x);
  }
}

// Each thread hashes 256 consecutive bit patterns; chunk = bits >> 24.
__global__ void unary_kernel(int fn, u64* sums) {
  u64 tid = (u64)blockIdx.x * blockDim.x + threadIdx.x;
  u64 base = tid * 256;
  u64 acc = 0;
  for (u32 j = 0; j < 256; j++) {
    u32 bits = (u32)(base + j);
    float y = eval_unary(fn, __uint_as_float(bits));
    acc += mix64(((u64)bits << 32) | (u64)__float_as_uint(y));
  }
  atomicAdd(&sums[base >> 24], acc);
}

__device__ u32 fma_exp_field(long long e) { return (u32)(e < 0 ? 0 : (e > 254 ? 254 : e)); }

// fma_case is the twin of fmaCase in f32math_golden_test.go.
__device__ void fma_case(u64 i, u32* pa, u32* pb, u32* pc) {
  u64 r0 = mix64(i * 4 + 0), r1 = mix64(i * 4 + 1), r2 = mix64(i * 4 + 2);
  u32 sa = (u32)(r1 >> 63) << 31, sb = (u32)(r1 >> 62 & 1) << 31, sc = (u32)(r2 >> 63) << 31;
  u32 a, b, c;
  switch (i & 7) {
    case 0:
    case 1:
      a = (u32)r0;
      b = (u32)(r0 >> 32);
      c = (u32)r1;
      break;
    case 2: {  // moderate exponents, c near the product: cancellation
      long long ea = 95 + (long long)(r0 % 64), eb = 95 + (long long)((r0 >> 8) % 64);
      a = sa | (u32)ea << 23 | ((u32)r1 & 0x7fffff);
      b = sb | (u32)eb << 23 | ((u32)(r1 >> 23) & 0x7fffff);
      long long ec = ea + eb - 127 + (long long)(r2 % 40) - 32;
      c = sc | fma_exp_field(ec) << 23 | ((u32)(r2 >> 9) & 0x7fffff);
      break;
    }
    case 3: {  // product near half an ulp of c: ties after rounding to float64
      long long ea = 1 + (long long)(r0 % 190), eb = 1 + (long long)((r0 >> 8) % 190);
      u32 ma = (u32)((r0 >> 16) % 16), mb = 0x7fffff - (u32)((r0 >> 24) % 16);
      if ((r0 >> 32) & 1) mb = (u32)((r0 >> 33) % 16);
      a = sa | (u32)ea << 23 | ma;
      b = sb | (u32)eb << 23 | mb;
      long long ec = ea + eb - 127 + 25 + (long long)((r0 >> 40) % 3) - 1;
      if (ec < 1) {
        c = sc | ((u32)r2 & 0x7fffff);
      } else if (ec > 254) {
        c = sc | 0x7f7fffffu;
      } else {
        c = sc | (u32)ec << 23 | ((u32)r2 & 0x7fffff);
      }
      break;
    }
    case 4: {  // subnormal and tiny results
      long long ea = 1 + (long long)(r0 % 126);
      long long eb = 105 - ea + (long long)((r0 >> 8) % 40) - 20;
      if (eb < 1) eb = 1;
      a = sa | (u32)ea << 23 | ((u32)r1 & 0x7fffff);
      b = sb | fma_exp_field(eb) << 23 | ((u32)(r1 >> 23) & 0x7fffff);
      switch (r2 % 4) {
        case 0: c = sc; break;
        case 3: c = sc | (u32)(1 + (r2 >> 30) % 3) << 23 | ((u32)(r2 >> 2) & 0x7fffff); break;
        default: c = sc | ((u32)(r2 >> 2) & 0x7fffff); break;
      }
      break;
    }
    case 5: {  // overflow neighbourhood
      long long ea = 177 + (long long)(r0 % 30);
      long long eb = 372 + (long long)((r0 >> 8) % 13) - ea;
      a = sa | (u32)ea << 23 | ((u32)r1 & 0x7fffff);
      b = sb | fma_exp_field(eb) << 23 | ((u32)(r1 >> 23) & 0x7fffff);
      switch (r2 % 3) {
        case 0: c = sc | 0x7f7fffffu; break;
        case 1: c = sc | (u32)(253 + (r2 >> 2) % 2) << 23 | ((u32)(r2 >> 4) & 0x7fffff); break;
        default: c = (u32)(r2 >> 8); break;
      }
      break;
    }
    case 6: {  // c = -(a*b rounded) + 0 or 1 ulp either way: exact cancellation
      long long ea = 64 + (long long)(r0 % 128), eb = 64 + (long long)((r0 >> 8) % 128);
      a = sa | (u32)ea << 23 | ((u32)r1 & 0x7fffff);
      b = sb | (u32)eb << 23 | ((u32)(r1 >> 23) & 0x7fffff);
      c = (__float_as_uint(__uint_as_float(a) * __uint_as_float(b)) ^ 0x80000000u) +
          (u32)(r2 % 3) - 1;
      break;
    }
    default: {  // specials
      const u32 tab[16] = {0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u,
                           0x7fc00000u, 0x3f800000u, 0xbf800000u, 0x7f7fffffu,
                           0xff7fffffu, 0x00000001u, 0x80000001u, 0x00800000u,
                           0x80800000u, 0x7fa00001u, 0x3f000000u, 0x4b800000u};
      a = (r0 & 1) ? (u32)r1 : tab[(r0 >> 1) % 16];
      b = (r0 & 32) ? (u32)(r1 >> 32) : tab[(r0 >> 8) % 16];
      c = (r0 & 1024) ? (u32)r2 : tab[(r0 >> 16) % 16];
      break;
    }
  }
  *pa = a;
  *pb = b;
  *pc = c;
}

// 2^24 triples, each thread 256 of them; chunk = i >> 16.
__global__ void fma_kernel(u64* sums) {
  u64 tid = (u64)blockIdx.x * blockDim.x + threadIdx.x;
  u64 base = tid * 256;
  u64 acc = 0;
  for (u32 j = 0; j < 256; j++) {
    u64 i = base + j;
    u32 a, b, c;
    fma_case(i, &a, &b, &c);
    float y = tl_fmaf(__uint_as_float(a), __uint_as_float(b), __uint_as_float(c));
    acc += mix64((i << 32) | (u64)__float_as_uint(y));
  }
  atomicAdd(&sums[base >> 16], acc);
}

static void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    exit(1);
  }
}

int main() {
  cudaDeviceProp prop;
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  u64* d;
  check(cudaMalloc(&d, 256 * sizeof(u64)), "cudaMalloc");
  u64 h[256];
  printf("# f32math GPU golden hashes: produced by cpu/testdata/f32math_parity.cu\n");
  printf("# device %s (sm_%d%d), CUDA runtime %d\n", prop.name, prop.major, prop.minor,
         CUDART_VERSION);
  printf("# name chunk hash (chunk = input bits >> 24; fma: triple index >> 16)\n");
  for (int fn = 0; fn < F_COUNT; fn++) {
    check(cudaMemset(d, 0, sizeof(h)), "cudaMemset");
    unary_kernel<<<(1u << 24) / 256, 256>>>(fn, d);
    check(cudaGetLastError(), "launch");
    check(cudaMemcpy(h, d, sizeof(h), cudaMemcpyDeviceToHost), "cudaMemcpy");
    for (int i = 0; i < 256; i++) printf("%s %02x %016llx\n", kNames[fn], i, h[i]);
  }
  check(cudaMemset(d, 0, sizeof(h)), "cudaMemset");
  fma_kernel<<<(1u << 16) / 256, 256>>>(d);
  check(cudaGetLastError(), "launch");
  check(cudaMemcpy(h, d, sizeof(h), cudaMemcpyDeviceToHost), "cudaMemcpy");
  for (int i = 0; i < 256; i++) printf("fma %02x %016llx\n", i, h[i]);
  return 0;
}
