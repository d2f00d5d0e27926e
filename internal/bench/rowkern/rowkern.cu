// rowkern.cu: device harness for the row kernels of ptx/softmax.ptx (host code only; the kernels
// are PTX modules loaded with cuModuleLoadData and launched with cuLaunchKernel, as the Go runtime
// does), to compare builds of the same kernels (e.g. other launch bounds) on one GPU:
//
//   rowkern A.ptx [B.ptx ...]
//
// For each module and each of softmax_fwd, log_softmax_fwd and layer_norm_fwd on a 16384 x 4096
// matrix (256 threads per block, the grid ops.perRow gives: min(rows, 32 * SMs)), it prints the
// registers per thread, the resident blocks per multiprocessor, the median time of 50 launches and
// GB/s, and checks that every module's outputs equal the first module's bit for bit. Exit status
// 1 on a mismatch or a CUDA error. ROWKERN_LN names another layer norm forward kernel with
// layer_norm_fwd's parameters (e.g. layer_norm_fwd_row); ROWKERN_GRID=g launches min(rows, g * SMs) blocks
// instead of the 32 * SMs of ops.perRow. Build: nvcc -O2 -o rowkern rowkern.cu -lcuda
#include "../drvapi.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

typedef unsigned long long u64;

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: rowkern A.ptx [B.ptx ...]\n");
    return 2;
  }
  CUdevice dev = drvDevice0();
  int sms = 0;
  CK(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));

  const u64 rows = 16384, cols = 4096, n = rows * cols;
  std::vector<float> hx(n), hg(cols), hb(cols);
  uint64_t s = 0x9e3779b97f4a7c15ull;
  auto next = [&]() {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return (float)((s >> 40) * (1.0 / (1 << 24)));  // [0, 1)
  };
  for (auto& v : hx) v = 8 * next() - 4;
  for (auto& v : hg) v = next() + 0.5f;
  for (auto& v : hb) v = next() - 0.5f;
  CUdeviceptr x, g, b, out, mean, sd;
  CK(cuMemAlloc(&x, 4 * n));
  CK(cuMemAlloc(&g, 4 * cols));
  CK(cuMemAlloc(&b, 4 * cols));
  CK(cuMemAlloc(&out, 4 * n));
  CK(cuMemAlloc(&mean, 4 * rows));
  CK(cuMemAlloc(&sd, 4 * rows));
  CK(cuMemcpyHtoD(x, hx.data(), 4 * n));
  CK(cuMemcpyHtoD(g, hg.data(), 4 * cols));
  CK(cuMemcpyHtoD(b, hb.data(), 4 * cols));
  CUevent e0, e1;
  CK(cuEventCreate(&e0, CU_EVENT_DEFAULT));
  CK(cuEventCreate(&e1, CU_EVENT_DEFAULT));

  const char* ln = getenv("ROWKERN_LN");
  const char* names[] = {"softmax_fwd", "log_softmax_fwd", ln && *ln ? ln : "layer_norm_fwd"};
  std::vector<std::vector<float>> ref(3);
  int bad = 0;
  printf("%-28s %-18s %5s %7s %10s %9s %s\n", "module", "kernel", "regs", "blk/SM", "median ms",
         "GB/s", "bits");
  for (int a = 1; a < argc; a++) {
    std::vector<char> src = readFile(argv[a]);
    CUmodule mod;
    char log[8192] = {0};
    CUjit_option opt[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void* val[] = {log, (void*)(uintptr_t)sizeof log};
    if (cuModuleLoadDataEx(&mod, src.data(), 2, opt, val) != CUDA_SUCCESS) {
      fprintf(stderr, "rowkern: %s: %s\n", argv[a], log);
      return 1;
    }
    for (int k = 0; k < 3; k++) {
      CUfunction f;
      CK(cuModuleGetFunction(&f, mod, names[k]));
      int regs = 0, blocks = 0;
      CK(cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, f));
      CK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, f, 256, 0));
      float inv = 1.0f / cols, eps = 1e-6f;
      u64 r = rows, c = cols;
      void* smArgs[] = {&out, &x, &r, &c};
      void* lnArgs[] = {&out, &mean, &sd, &x, &g, &b, &r, &c, &inv, &eps};
      void** args = k == 2 ? lnArgs : smArgs;
      const char* gs = getenv("ROWKERN_GRID");
      u64 per = gs && *gs ? strtoull(gs, 0, 10) : 32;
      unsigned grid = (unsigned)std::min<u64>(rows, per * (u64)sms);
      std::vector<float> ms;
      for (int it = 0; it < 55; it++) {
        CK(cuEventRecord(e0, 0));
        CK(cuLaunchKernel(f, grid, 1, 1, 256, 1, 1, 0, 0, args, 0));
        CK(cuEventRecord(e1, 0));
        CK(cuEventSynchronize(e1));
        float t;
        CK(cuEventElapsedTime(&t, e0, e1));
        if (it >= 5) ms.push_back(t);
      }
      std::sort(ms.begin(), ms.end());
      float med = ms[ms.size() / 2];
      std::vector<float> h(n);
      CK(cuMemcpyDtoH(h.data(), out, 4 * n));
      const char* bits = "ref";
      if (a == 1) {
        ref[k] = h;
      } else if (memcmp(ref[k].data(), h.data(), 4 * n) != 0) {
        bits = "MISMATCH";
        bad = 1;
      } else {
        bits = "same";
      }
      printf("%-28s %-18s %5d %7d %10.4f %9.1f %s\n", argv[a], names[k], regs, blocks, med,
             8.0 * n / (med * 1e-3) / 1e9, bits);
    }
    CK(cuModuleUnload(mod));
  }
  return bad;
}
