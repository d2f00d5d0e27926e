// mapkern.cu: loop shapes of the pointwise kernels, timed on the GPU machine (nvcc there):
//
//   nvcc -O3 -arch=sm_90 --fmad=false -std=c++17 -o mapkern internal/bench/mapkern/mapkern.cu
//   ./mapkern [log2 n]        (loop variants; ./mapkern 26 long: sustained runs of the shipped
//                             kernels; python3 torch_map.py 26 long: PyTorch's, the same way)
//
// The element arithmetic is the project's (ptx/f32math.cuh, ptx/elementwise_math.cu's rules,
// through map.cuh's map_n for the shipped shape); only the loop around it changes, so every
// variant must give the bits of the shipped one (checked). Prints GB/s counting read + write.
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cstring>
#include "../../../ptx/common.cuh"
#include "../../../ptx/f32math.cuh"
#include "../../../ptx/map.cuh"
#include "../../../ptx/rowstat.cuh"
#include "../../../ptx/elementwise_math.cu"  // the rules (tl_geluf); its kernels are unused here

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1); } } while (0)

struct Scale { __device__ float operator()(float x) const { return x * 2.0f; } };
struct Exp { __device__ float operator()(float x) const { return tl_expf(x); } };
struct Tanh { __device__ float operator()(float x) const { return tl_tanhf(x); } };
struct Sigmoid { __device__ float operator()(float x) const { return tl_sigmoidf(x); } };
struct Gelu { __device__ float operator()(float x) const { return tl_geluf(x); } };

// shipped: map_n (one step per block with the launch of ops.mapGrid).
template <typename F> __global__ void shipped(float* out, const float* x, u64 n) {
  F f;
  map_n<1, 1>({out}, {x}, n, [=](const float* in, float* y) { y[0] = f(in[0]); });
}

template <typename G> __device__ __forceinline__ float4 ap4(const float4 v, const G& f) {
  return make_float4(f(v.x), f(v.y), f(v.z), f(v.w));
}

// load_step loads a thread's U float4s of the step at base (blockDim.x apart, clamped to the last
// one as map.cuh does); store_step applies f to them and stores those inside the buffer.
template <int U> __device__ __forceinline__ void load_step(float4 (&v)[U], const float* x, u64 base, u64 n4) {
#pragma unroll
  for (int k = 0; k < U; k++) v[k] = ((const float4*)x)[min(base + (u64)k * blockDim.x, n4 - 1)];
}
template <int U, typename F>
__device__ __forceinline__ void store_step(float* out, const float4 (&v)[U], u64 base, u64 n4, const F& f) {
#pragma unroll
  for (int k = 0; k < U; k++) {
    u64 i = base + (u64)k * blockDim.x;
    if (i < n4) ((float4*)out)[i] = ap4(v[k], f);
  }
}

// oneshot<U>: as shipped with U float4s per thread (all loads, then compute and store).
template <typename F, int U> __global__ void oneshot(float* out, const float* x, u64 n4) {
  u64 base = (u64)blockIdx.x * blockDim.x * U + threadIdx.x;
  float4 v[U];
  load_step(v, x, base, n4);
  store_step(out, v, base, n4, F());
}

// pipe<U>: a grid of few blocks walking the buffer; each thread loads its next step's U float4s
// before computing the current ones.
template <typename F, int U> __global__ void pipe(float* out, const float* x, u64 n4) {
  u64 stride = (u64)gridDim.x * blockDim.x * U;
  u64 base = (u64)blockIdx.x * blockDim.x * U + threadIdx.x;
  float4 cur[U], nxt[U];
  load_step(cur, x, base, n4);
  for (; base < n4; base += stride) {
    load_step(nxt, x, base + stride, n4);
    store_step(out, cur, base, n4, F());
#pragma unroll
    for (int k = 0; k < U; k++) cur[k] = nxt[k];
  }
}

// Row reductions (reduce_axis.cu's row_reduce): the fold with U loads issued before they are
// folded in ascending order (identical bits for every U by construction); U = 1 is the loop
// before ROW_LOADS, U = 8 the shipped one.
template <bool MAX, int U>
__global__ void __launch_bounds__(256) rowred(float* out, const float* x, u64 rows, u64 cols) {
  __shared__ float part[256];
  u32 t = threadIdx.x;
  for (u64 r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* row = x + r * cols;
    float acc = MAX ? NEG_INF : -0.0f;
    u64 c = t;
    if (U > 1) {
      for (; c + (U - 1) * 256 < cols; c += U * 256) {
        float v[U];
#pragma unroll
        for (int k = 0; k < U; k++) v[k] = row[c + k * 256];
#pragma unroll
        for (int k = 0; k < U; k++) acc = tree_op<MAX>(acc, v[k]);
      }
    }
    for (; c < cols; c += 256) acc = tree_op<MAX>(acc, row[c]);
    part[t] = acc;
    __syncthreads();
    float v = warp_tree<MAX>(part);
    if (t == 0) out[r] = cols == 0 ? 0.0f : v;
    __syncthreads();
  }
}

static void rows_bench(const float* x, int sms) {
  const u64 rows = 16384, cols = 4096;
  float* out; CK(cudaMalloc(&out, rows * 4));
  std::vector<float> ref(rows), got(rows);
  unsigned grid = (unsigned)std::min<u64>(rows, (u64)sms * 32);
  struct RV { const char* name; void (*k)(float*, const float*, u64, u64); };
  RV vs[] = {{"sum/u1", rowred<false, 1>}, {"sum/u4", rowred<false, 4>}, {"sum/u8 shipped", rowred<false, 8>},
             {"max/u1", rowred<true, 1>}, {"max/u4", rowred<true, 4>}, {"max/u8 shipped", rowred<true, 8>}};
  for (int i = 0; i < 6; i++) {
    RV& v = vs[i];
    v.k<<<grid, 256>>>(out, x, rows, cols);
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(i % 3 == 0 ? ref.data() : got.data(), out, rows * 4, cudaMemcpyDeviceToHost));
    bool same = i % 3 == 0 || memcmp(ref.data(), got.data(), rows * 4) == 0;
    cudaEvent_t a, b; CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
    std::vector<float> t;
    for (int r = 0; r < 21; r++) {
      CK(cudaEventRecord(a));
      for (int j = 0; j < 5; j++) v.k<<<grid, 256>>>(out, x, rows, cols);
      CK(cudaEventRecord(b)); CK(cudaEventSynchronize(b));
      float ms; CK(cudaEventElapsedTime(&ms, a, b)); t.push_back(ms / 5);
    }
    std::sort(t.begin(), t.end());
    printf("rows     %-14s %8.4f ms %7.1f GB/s %s\n", v.name, t[10], 4.0 * rows * cols / t[10] / 1e6,
           same ? "same-bits" : "DIFFERENT");
  }
}

static float time_ms(void (*launch)(float*, const float*, u64, int), float* out, const float* x,
                     u64 n, int sms) {
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
  for (int i = 0; i < 3; i++) launch(out, x, n, sms);
  std::vector<float> t;
  for (int r = 0; r < 21; r++) {
    CK(cudaEventRecord(a));
    for (int i = 0; i < 5; i++) launch(out, x, n, sms);
    CK(cudaEventRecord(b));
    CK(cudaEventSynchronize(b));
    float ms; CK(cudaEventElapsedTime(&ms, a, b));
    t.push_back(ms / 5);
  }
  CK(cudaGetLastError());
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// l_shipped launches as ops.mapGrid: 128 threads, one step of TL_MAP_U float4s per thread.
template <typename F> void l_shipped(float* o, const float* x, u64 n, int) {
  u64 span = 128 * TL_MAP_U;
  u64 blocks = (n / 4 + span - 1) / span; shipped<F><<<(unsigned)blocks, 128>>>(o, x, n); }
template <typename F, int U, int T> void l_oneshot(float* o, const float* x, u64 n, int) {
  u64 n4 = n / 4; u64 blocks = (n4 + (u64)T * U - 1) / ((u64)T * U);
  oneshot<F, U><<<(unsigned)blocks, T>>>(o, x, n4); }
template <typename F, int U, int B> void l_pipe(float* o, const float* x, u64 n, int sms) {
  pipe<F, U><<<sms * B, 256>>>(o, x, n / 4); }

struct Variant { const char* name; void (*launch)(float*, const float*, u64, int); };

template <typename F> void run(const char* fname, float* out, float* ref, const float* x,
                               u64 n, int sms, std::vector<float>& host_ref, std::vector<float>& host) {
  Variant vs[] = {
      {"shipped", l_shipped<F>},
      {"oneshot1/t128", l_oneshot<F, 1, 128>}, {"oneshot2/t128", l_oneshot<F, 2, 128>},
      {"oneshot2", l_oneshot<F, 2, 256>}, {"oneshot4", l_oneshot<F, 4, 256>},
      {"oneshot8", l_oneshot<F, 8, 256>}, {"oneshot4/t128", l_oneshot<F, 4, 128>},
      {"oneshot4/t512", l_oneshot<F, 4, 512>},
      {"pipe1x8", l_pipe<F, 1, 8>}, {"pipe2x4", l_pipe<F, 2, 4>}, {"pipe2x8", l_pipe<F, 2, 8>},
      {"pipe4x2", l_pipe<F, 4, 2>}, {"pipe4x4", l_pipe<F, 4, 4>},
  };
  l_shipped<F>(ref, x, n, sms);
  CK(cudaDeviceSynchronize());
  CK(cudaMemcpy(host_ref.data(), ref, n * 4, cudaMemcpyDeviceToHost));
  for (auto& v : vs) {
    CK(cudaMemset(out, 0xff, n * 4));
    v.launch(out, x, n, sms);
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(host.data(), out, n * 4, cudaMemcpyDeviceToHost));
    bool same = memcmp(host.data(), host_ref.data(), n * 4) == 0;
    float ms = time_ms(v.launch, out, x, n, sms);
    printf("%-8s %-14s %8.4f ms %7.1f GB/s %s\n", fname, v.name, ms, 8.0 * n / ms / 1e6,
           same ? "same-bits" : "DIFFERENT");
  }
}

// long: the shipped tanh, sigmoid and gelu over 2000 launches each on inputs in [0, 1) (as
// the Go benchmarks) and in [-8, 8), then exp and scale: ms per launch over the first and the
// last 200 (torch_map.py's long mode times PyTorch the same way).
template <typename F> void long_run(const char* fname, const char* data, float* out, const float* x, u64 n) {
  cudaEvent_t ev[2001];
  for (auto& v : ev) CK(cudaEventCreate(&v));
  CK(cudaEventRecord(ev[0]));
  for (int i = 0; i < 2000; i++) { l_shipped<F>(out, x, n, 0); CK(cudaEventRecord(ev[i + 1])); }
  CK(cudaEventSynchronize(ev[2000]));
  float first, last;
  CK(cudaEventElapsedTime(&first, ev[0], ev[200]));
  CK(cudaEventElapsedTime(&last, ev[1800], ev[2000]));
  printf("long     %-8s %-8s first 200: %8.4f ms/launch, last 200: %8.4f ms/launch\n", fname, data,
         first / 200, last / 200);
  for (auto& v : ev) CK(cudaEventDestroy(v));
}

int main(int argc, char** argv) {
  int lg = argc > 1 ? atoi(argv[1]) : 26;
  if (argc > 2 && strcmp(argv[2], "long") == 0) {
    u64 n = 1ull << lg;
    std::vector<float> h(n);
    float *x01, *x8, *out;
    CK(cudaMalloc(&x01, n * 4)); CK(cudaMalloc(&x8, n * 4)); CK(cudaMalloc(&out, n * 4));
    unsigned s = 777;
    for (u64 i = 0; i < n; i++) { s = s * 1664525u + 1013904223u; h[i] = (s >> 8) * (1.0f / 16777216.0f); }
    CK(cudaMemcpy(x01, h.data(), n * 4, cudaMemcpyHostToDevice));
    for (u64 i = 0; i < n; i++) h[i] = (h[i] - 0.5f) * 16.0f;
    CK(cudaMemcpy(x8, h.data(), n * 4, cudaMemcpyHostToDevice));
    long_run<Tanh>("tanh", "[0,1)", out, x01, n);
    long_run<Tanh>("tanh", "[-8,8)", out, x8, n);
    long_run<Sigmoid>("sigmoid", "[0,1)", out, x01, n);
    long_run<Sigmoid>("sigmoid", "[-8,8)", out, x8, n);
    long_run<Gelu>("gelu", "[0,1)", out, x01, n);
    long_run<Gelu>("gelu", "[-8,8)", out, x8, n);
    long_run<Exp>("exp", "[0,1)", out, x01, n);
    long_run<Scale>("scale", "[0,1)", out, x01, n);
    return 0;
  }
  u64 n = 1ull << lg;
  int sms; CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  std::vector<float> host(n), host_ref(n);
  unsigned s = 12345;
  for (u64 i = 0; i < n; i++) { s = s * 1664525u + 1013904223u; host[i] = ((s >> 8) * (1.0f / 16777216.0f) - 0.5f) * 16.0f; }
  float *x, *out, *ref;
  CK(cudaMalloc(&x, n * 4)); CK(cudaMalloc(&out, n * 4)); CK(cudaMalloc(&ref, n * 4));
  CK(cudaMemcpy(x, host.data(), n * 4, cudaMemcpyHostToDevice));
  run<Scale>("scale", out, ref, x, n, sms, host_ref, host);
  run<Exp>("exp", out, ref, x, n, sms, host_ref, host);
  run<Tanh>("tanh", out, ref, x, n, sms, host_ref, host);
  run<Sigmoid>("sigmoid", out, ref, x, n, sms, host_ref, host);
  run<Gelu>("gelu", out, ref, x, n, sms, host_ref, host);
  rows_bench(x, sms);
  return 0;
}
