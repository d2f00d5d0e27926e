// drvapi.h: the helpers of the driver-API harnesses (sgemm/sgemm.cu, rowkern/rowkern.cu), which
// load PTX with cuModuleLoadData as the Go runtime does: CK(call) exits with the CUDA error's name
// and text, readFile returns a file's bytes with a terminating 0 (a PTX image), drvDevice0 makes
// device 0's primary context current.
#pragma once
#include <cuda.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

static void drvCheck(CUresult r, const char* what, int line) {
  if (r == CUDA_SUCCESS) return;
  const char *name = "?", *text = "?";
  cuGetErrorName(r, &name);
  cuGetErrorString(r, &text);
  fprintf(stderr, "line %d: %s: %s (%s)\n", line, what, name, text);
  exit(1);
}
#define CK(x) drvCheck((x), #x, __LINE__)

static std::vector<char> readFile(const char* path) {
  FILE* f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "cannot open %s\n", path);
    exit(1);
  }
  std::vector<char> b;
  char buf[1 << 16];
  size_t k;
  while ((k = fread(buf, 1, sizeof buf, f)) > 0) b.insert(b.end(), buf, buf + k);
  fclose(f);
  b.push_back(0);
  return b;
}

// drvDevice0 initializes the driver, makes device 0's primary context current and returns the
// device.
static CUdevice drvDevice0() {
  CK(cuInit(0));
  CUdevice dev;
  CK(cuDeviceGet(&dev, 0));
  CUcontext ctx;
  CK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CK(cuCtxSetCurrent(ctx));
  return dev;
}
