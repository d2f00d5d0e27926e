/*
 * launch.c: the C baseline for BenchmarkDispatch. Host cost of one cuLaunchKernel from C.
 *
 * Loads libcuda.so.1 with dlopen (no CUDA headers, no link-time CUDA dependency), loads a PTX
 * file, and times cuLaunchKernel of its `scale` kernel
 *   scale(float* out, const float* x, unsigned long long n, float c)
 * on n = 1 (1 block of 256 threads), synchronizing only at the end of each sample, after a
 * warm-up. Each sample is LAUNCHES launches; the median over SAMPLES samples is printed.
 * Measured on the legacy default stream (what ops uses) and on a created non-blocking stream
 * (c_launch_stream_ns, informational); then, informational too, with a cuCtxSetCurrent before
 * every launch (c_launch_setcurrent_ns) and with a cuCtxGetCurrent check that sets the context
 * only when it is not current (c_launch_getcurrent_ns). c_call_ns is the cost of a trivial driver
 * call (cuDriverGetVersion), the twin of the Go benchmark BenchmarkDriverCall.
 * Also reports the time from main() (before dlopen and cuInit) to the first kernel completing.
 *
 *   gcc -O2 -o launch internal/bench/launch.c -ldl
 *   ./launch ptx/elementwise.ptx [--launches 200000] [--samples 5] [--first-only]
 *
 * Prints one JSON object on stdout; progress and errors go to stderr. Exit 1 on any failure.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int CUresult; /* 0 = CUDA_SUCCESS */
typedef int CUdevice;
typedef void *CUcontext;
typedef void *CUmodule;
typedef void *CUfunction;
typedef void *CUstream;
typedef unsigned long long CUdeviceptr;

static CUresult (*p_cuInit)(unsigned int);
static CUresult (*p_cuDriverGetVersion)(int *);
static CUresult (*p_cuDeviceGet)(CUdevice *, int);
static CUresult (*p_cuDeviceGetName)(char *, int, CUdevice);
static CUresult (*p_cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
static CUresult (*p_cuCtxSetCurrent)(CUcontext);
static CUresult (*p_cuCtxGetCurrent)(CUcontext *);
static CUresult (*p_cuCtxSynchronize)(void);
static CUresult (*p_cuModuleLoadData)(CUmodule *, const void *);
static CUresult (*p_cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
static CUresult (*p_cuMemAlloc)(CUdeviceptr *, size_t);
static CUresult (*p_cuMemFree)(CUdeviceptr);
static CUresult (*p_cuMemcpyHtoD)(CUdeviceptr, const void *, size_t);
static CUresult (*p_cuMemcpyDtoH)(void *, CUdeviceptr, size_t);
static CUresult (*p_cuStreamCreate)(CUstream *, unsigned int);
static CUresult (*p_cuStreamSynchronize)(CUstream);
static CUresult (*p_cuLaunchKernel)(CUfunction, unsigned int, unsigned int, unsigned int,
                                    unsigned int, unsigned int, unsigned int, unsigned int,
                                    CUstream, void **, void **);
static CUresult (*p_cuGetErrorName)(CUresult, const char **);
static CUresult (*p_cuGetErrorString)(CUresult, const char **);

static void die(const char *what, const char *detail) {
  fprintf(stderr, "launch: %s: %s\n", what, detail);
  printf("{\"error\": \"%s: %s\"}\n", what, detail);
  exit(1);
}

static void check(CUresult r, const char *call) {
  if (r == 0) return;
  const char *name = "?", *text = "?";
  if (p_cuGetErrorName) p_cuGetErrorName(r, &name);
  if (p_cuGetErrorString) p_cuGetErrorString(r, &text);
  char buf[512];
  snprintf(buf, sizeof buf, "error %d %s (%s)", r, name ? name : "?", text ? text : "?");
  die(call, buf);
}

static void *sym(void *lib, const char *name) {
  void *p = dlsym(lib, name);
  if (!p) die("dlsym", name);
  return p;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static char *read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) die("open PTX file", path);
  if (fseek(f, 0, SEEK_END) != 0) die("seek", path);
  long len = ftell(f);
  if (len < 0) die("ftell", path);
  rewind(f);
  char *buf = malloc((size_t)len + 1);
  if (!buf) die("malloc", path);
  if (fread(buf, 1, (size_t)len, f) != (size_t)len) die("read", path);
  buf[len] = 0; /* cuModuleLoadData wants a NUL-terminated PTX image */
  fclose(f);
  return buf;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Launch state shared by the timing loops. */
static CUfunction g_fn;
static CUdeviceptr g_out, g_x;
static unsigned long long g_n = 1;
static float g_c = 2.0f;
static void *g_params[4];
static CUcontext g_ctx;

/* What each launch does first: nothing, cuCtxSetCurrent, or cuCtxGetCurrent and a
   cuCtxSetCurrent only when another context is current (the per-op context binding choices). */
enum { BIND_NONE, BIND_SET, BIND_CHECK };
static int g_bind = BIND_NONE;

static void launch_once(CUstream s) {
  if (g_bind == BIND_SET) check(p_cuCtxSetCurrent(g_ctx), "cuCtxSetCurrent");
  if (g_bind == BIND_CHECK) {
    CUcontext cur = NULL;
    check(p_cuCtxGetCurrent(&cur), "cuCtxGetCurrent");
    if (cur != g_ctx) check(p_cuCtxSetCurrent(g_ctx), "cuCtxSetCurrent");
  }
  check(p_cuLaunchKernel(g_fn, 1, 1, 1, 256, 1, 1, 0, s, g_params, NULL), "cuLaunchKernel");
}

static void sync_stream(CUstream s) {
  if (s) check(p_cuStreamSynchronize(s), "cuStreamSynchronize");
  else check(p_cuCtxSynchronize(), "cuCtxSynchronize");
}

/* Median ns per launch over `samples` samples of `launches` launches each, synced at the end. */
static double time_launches(CUstream s, long launches, int samples, double *min_out) {
  for (long i = 0; i < 20000 && i < launches; i++) launch_once(s); /* warm-up */
  sync_stream(s);
  double *ns = calloc((size_t)samples, sizeof *ns);
  if (!ns) die("calloc", "samples");
  for (int k = 0; k < samples; k++) {
    double t0 = now_s();
    for (long i = 0; i < launches; i++) launch_once(s);
    sync_stream(s);
    ns[k] = (now_s() - t0) / (double)launches * 1e9;
  }
  qsort(ns, (size_t)samples, sizeof *ns, cmp_double);
  double med = samples % 2 ? ns[samples / 2] : 0.5 * (ns[samples / 2 - 1] + ns[samples / 2]);
  *min_out = ns[0];
  free(ns);
  return med;
}

int main(int argc, char **argv) {
  double t_start = now_s();
  const char *ptx_path = NULL;
  long launches = 200000;
  int samples = 5, first_only = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--launches") && i + 1 < argc) launches = atol(argv[++i]);
    else if (!strcmp(argv[i], "--samples") && i + 1 < argc) samples = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--first-only")) first_only = 1;
    else if (argv[i][0] == '-') {
      fprintf(stderr, "usage: %s FILE.ptx [--launches N] [--samples K] [--first-only]\n", argv[0]);
      return 2;
    } else ptx_path = argv[i];
  }
  if (!ptx_path || launches < 1 || samples < 1) {
    fprintf(stderr, "usage: %s FILE.ptx [--launches N] [--samples K] [--first-only]\n", argv[0]);
    return 2;
  }

  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) die("dlopen libcuda.so.1", dlerror());
  p_cuGetErrorName = sym(lib, "cuGetErrorName");
  p_cuGetErrorString = sym(lib, "cuGetErrorString");
  p_cuInit = sym(lib, "cuInit");
  p_cuDriverGetVersion = sym(lib, "cuDriverGetVersion");
  p_cuDeviceGet = sym(lib, "cuDeviceGet");
  p_cuDeviceGetName = sym(lib, "cuDeviceGetName");
  p_cuDevicePrimaryCtxRetain = sym(lib, "cuDevicePrimaryCtxRetain");
  p_cuCtxSetCurrent = sym(lib, "cuCtxSetCurrent");
  p_cuCtxGetCurrent = sym(lib, "cuCtxGetCurrent");
  p_cuCtxSynchronize = sym(lib, "cuCtxSynchronize");
  p_cuModuleLoadData = sym(lib, "cuModuleLoadData");
  p_cuModuleGetFunction = sym(lib, "cuModuleGetFunction");
  p_cuMemAlloc = sym(lib, "cuMemAlloc_v2");
  p_cuMemFree = sym(lib, "cuMemFree_v2");
  p_cuMemcpyHtoD = sym(lib, "cuMemcpyHtoD_v2");
  p_cuMemcpyDtoH = sym(lib, "cuMemcpyDtoH_v2");
  p_cuStreamCreate = sym(lib, "cuStreamCreate");
  p_cuStreamSynchronize = sym(lib, "cuStreamSynchronize");
  p_cuLaunchKernel = sym(lib, "cuLaunchKernel");

  char *ptx = read_file(ptx_path);

  check(p_cuInit(0), "cuInit");
  int drv = 0;
  check(p_cuDriverGetVersion(&drv), "cuDriverGetVersion");
  CUdevice dev;
  check(p_cuDeviceGet(&dev, 0), "cuDeviceGet");
  char name[256] = {0};
  check(p_cuDeviceGetName(name, (int)sizeof name - 1, dev), "cuDeviceGetName");
  CUcontext ctx;
  check(p_cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  check(p_cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
  g_ctx = ctx;
  double t_ctx = now_s();

  CUmodule mod;
  check(p_cuModuleLoadData(&mod, ptx), "cuModuleLoadData");
  check(p_cuModuleGetFunction(&g_fn, mod, "scale"), "cuModuleGetFunction(scale)");
  double t_mod = now_s();

  check(p_cuMemAlloc(&g_out, 256), "cuMemAlloc_v2");
  check(p_cuMemAlloc(&g_x, 256), "cuMemAlloc_v2");
  float host_x = 3.0f, host_out = 0.0f;
  check(p_cuMemcpyHtoD(g_x, &host_x, sizeof host_x), "cuMemcpyHtoD_v2");
  g_params[0] = &g_out;
  g_params[1] = &g_x;
  g_params[2] = &g_n;
  g_params[3] = &g_c;
  launch_once(NULL);
  check(p_cuCtxSynchronize(), "cuCtxSynchronize");
  double t_first = now_s();
  check(p_cuMemcpyDtoH(&host_out, g_out, sizeof host_out), "cuMemcpyDtoH_v2");
  if (host_out != 6.0f) {
    char buf[64];
    snprintf(buf, sizeof buf, "scale(3, 2) gave %g, want 6", (double)host_out);
    die("first kernel", buf);
  }

  const char *cache = getenv("CUDA_CACHE_DISABLE");
  int cache_off = cache && !strcmp(cache, "1");
  char head[768];
  snprintf(head, sizeof head,
           "{\"c_first_kernel_ms\": %.2f, \"c_init_ms\": %.2f, \"c_module_load_ms\": %.2f, "
           "\"jit_cache\": \"%s\", \"driver_version\": %d, \"device\": \"%s\"",
           (t_first - t_start) * 1e3, (t_ctx - t_start) * 1e3, (t_mod - t_ctx) * 1e3,
           cache_off ? "disabled" : "default", drv, name);
  if (first_only) {
    printf("%s}\n", head);
    return 0;
  }

  /* default stream, a created non-blocking stream, then the default stream again; the lower
     of the two default-stream medians is reported (guards against a noisy first pass) */
  double min_def, min_str, min_def2;
  double med_def = time_launches(NULL, launches, samples, &min_def);
  CUstream s;
  check(p_cuStreamCreate(&s, 1 /* CU_STREAM_NON_BLOCKING */), "cuStreamCreate");
  double med_str = time_launches(s, launches, samples, &min_str);
  double med_def2 = time_launches(NULL, launches, samples, &min_def2);
  double c_launch = med_def < med_def2 ? med_def : med_def2;
  double min_set, min_chk;
  g_bind = BIND_SET;
  double med_set = time_launches(NULL, launches, samples, &min_set);
  g_bind = BIND_CHECK;
  double med_chk = time_launches(NULL, launches, samples, &min_chk);
  g_bind = BIND_NONE;

  int ver = 0;
  double c_call = 1e30;
  for (int k = 0; k < samples; k++) { /* the best of the samples: a trivial call has no variance to report */
    double t0 = now_s();
    for (long i = 0; i < launches; i++) check(p_cuDriverGetVersion(&ver), "cuDriverGetVersion");
    double ns = (now_s() - t0) / (double)launches * 1e9;
    if (ns < c_call) c_call = ns;
  }

  check(p_cuMemFree(g_out), "cuMemFree_v2");
  check(p_cuMemFree(g_x), "cuMemFree_v2");
  printf("%s, \"c_call_ns\": %.1f, \"c_launch_ns\": %.1f, \"c_launch_ns_passes\": [%.1f, %.1f], "
         "\"c_launch_min_ns\": %.1f, \"c_launch_stream_ns\": %.1f, \"launches\": %ld, "
         "\"samples\": %d, \"c_launch_setcurrent_ns\": %.1f, \"c_launch_getcurrent_ns\": %.1f}\n",
         head, c_call, c_launch, med_def, med_def2, min_def < min_def2 ? min_def : min_def2, med_str,
         launches, samples, med_set, med_chk);
  free(ptx);
  return 0;
}
