#!/usr/bin/env python3
"""PyTorch baseline for the Go benchmarks (run on the GPU machine by gpu-check.sh).

Times, on the GPU, fp32 with TF32 off (torch.backends.cuda.matmul.allow_tf32 and
torch.backends.cudnn.allow_tf32 False; cudnn.benchmark True, so cuDNN gets its best algorithm),
the same work as the Go benchmarks, keyed so that compare.py can pair the rows. Families
(--only picks some, --skip drops some; TORCH_BENCH_ARGS passes these through gpu-check.sh):

  elementwise  BenchmarkElementwise/<op>/cuda/n=N, BenchmarkReduce/<op>/cuda/n=N (top-level keys)
  kernels      BenchmarkKernels/<name>/cuda                              ("kernels")
  dispatch     BenchmarkDispatch/cuda: eager host cost of a 1-element op  ("dispatch")
  train        BenchmarkTrainStep/<name>/cuda                            ("train_steps")
  conv         BenchmarkConvTiles/<layer>/<op>/tile (ResNet-18 at batch 64) and
               BenchmarkConvShapes/<shape>/<op> (depthwise 1-D, 3-D)      ("conv")
  pool         BenchmarkPoolCUDA/<case>/<fwd|bwd> at (64, 64, 56, 56)     ("pool")
  attention    BenchmarkFlashAttention/<b>x<h>x<n>x<d>/causal=<c>/<fwd|fwdbwd>: SDPA's
               memory-efficient kernel                                   ("attention")
  scan         BenchmarkSelectiveScan/<fwd|bwd>/<const|var>/<b>x<t>x<s>: a PyTorch loop over
               time, and the HBM copy bandwidth for the roofline          ("scan")
  fft          BenchmarkFFTTier/<op>/<b>x<n>/<tier>, BenchmarkRfft/<op>/<b>x<n>: torch.fft
               ("fft")
  spectral     BenchmarkSpectralConvCUDA/<forward|forward+backward>: neuraloperator's
               rfft -> einsum -> irfft chain at batch 64, width 64, grid 4096, 64 modes
               ("spectral")
  steps        BenchmarkFNOStep, BenchmarkCNNStepCUDA: eager training steps ("steps")
  compile      the FNO step under torch.compile(mode="reduce-overhead"), in a child process with
               a time limit (--compile-timeout)                          ("steps")

Keys of the new families are the Go sub-benchmark names without "Benchmark<Family>/" and without
the path tag (/tile, /exact, /cufft), so compare.py pairs them mechanically. Each row is
{"ms": median ms, "shape": ..., "note": ...}, or {"error": ...} when it failed (the others go
on). GPU time: one CUDA event pair around each rep, after warm-up; the median over the reps
(training steps: wall time per step, the loss read back every step as the Go steps do).

Prints one JSON object to stdout; --out FILE writes the same object to FILE; progress goes to
stderr. --device cpu --quick is for testing this script on a machine without a GPU: tiny or
CPU-sized shapes (those of the Go benchmarks' CPU runs where they are small), few reps, the CPU
clock instead of CUDA events, torch.compile skipped; its numbers are not a baseline.

  python3 internal/bench/torch_bench.py [--only conv,attention] [--skip compile] [--out FILE]
  /usr/bin/python3 internal/bench/torch_bench.py --device cpu --quick --skip kernels
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

FAMILIES = ["elementwise", "kernels", "dispatch", "train", "conv", "pool", "attention", "scan",
            "fft", "spectral", "steps", "compile"]


def log(*a):
    print(*a, file=sys.stderr, flush=True)


class Bench:
    """The device, its clock and the run's settings, shared by the families."""

    def __init__(self, torch, dev, args):
        self.torch, self.dev, self.args = torch, dev, args
        self.cuda = dev.type == "cuda"
        self.quick = args.quick

    def sync(self):
        if self.cuda:
            self.torch.cuda.synchronize()

    def reps(self, full):
        """The number of timed reps of a family whose full count is full (3 with --quick)."""
        return 3 if self.quick else full

    def time(self, fn, warmup, reps, setup=None):
        """Median ms of fn over reps, after warmup untimed calls. setup, when given, runs before
        each call, untimed (outside the events), and its result is fn's argument. fn's result is
        kept until the next call has started (as a training loop would hold it)."""
        torch = self.torch
        call = (lambda: fn(setup())) if setup else fn
        for _ in range(warmup):
            call()
        self.sync()
        keep = None
        if self.cuda:
            evs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                   for _ in range(reps)]
            for s, e in evs:
                arg = setup() if setup else None
                keep = None  # free the previous result before the next op allocates
                s.record()
                keep = fn(arg) if setup else fn()
                e.record()
            torch.cuda.synchronize()
            ms = [s.elapsed_time(e) for s, e in evs]
        else:
            ms = []
            for _ in range(reps):
                arg = setup() if setup else None
                keep = None
                t0 = time.perf_counter()
                keep = fn(arg) if setup else fn()
                ms.append((time.perf_counter() - t0) * 1e3)
        del keep
        return statistics.median(ms)

    def free(self):
        if self.cuda:
            self.torch.cuda.empty_cache()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=0, help="elements per elementwise buffer (default 2**26; --quick 2**16)")
    ap.add_argument("--reps", type=int, default=50, help="timed reps per elementwise op (median taken)")
    ap.add_argument("--warmup", type=int, default=5, help="untimed reps per op")
    ap.add_argument("--dispatch-ops", type=int, default=20000, help="1-element ops per dispatch sample")
    ap.add_argument("--dispatch-samples", type=int, default=7, help="dispatch samples (median taken)")
    ap.add_argument("--ops", default="", help="comma-separated subset of elementwise ops and kernel rows (default: all)")
    ap.add_argument("--only", default="", help="comma-separated families to run (default: all): " + ",".join(FAMILIES))
    ap.add_argument("--skip", default="", help="comma-separated families not to run")
    ap.add_argument("--device", default="cuda", choices=("cuda", "cpu"),
                    help="cpu: test this script without a GPU (with --quick)")
    ap.add_argument("--quick", action="store_true", help="tiny shapes and few reps, for testing only")
    ap.add_argument("--compile-timeout", type=float, default=75,
                    help="seconds for the torch.compile child process (compile family)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)  # the compile child
    ap.add_argument("--out", default="", help="also write the JSON object to this file")
    args = ap.parse_args()
    if not args.n:
        args.n = 2 ** 16 if args.quick else 2 ** 26
    if args.quick:
        args.reps, args.warmup = min(args.reps, 5), min(args.warmup, 1)
        args.dispatch_ops, args.dispatch_samples = min(args.dispatch_ops, 2000), min(args.dispatch_samples, 3)
    only = [f for f in args.only.split(",") if f]
    skip = [f for f in args.skip.split(",") if f]
    for f in only + skip:
        if f not in FAMILIES:
            log("torch_bench: unknown family %r (families: %s)" % (f, ",".join(FAMILIES)))
            return 2
    families = [f for f in (only or FAMILIES) if f not in skip]

    try:
        import torch
        import torch.nn.functional as F
    except ImportError as ex:
        log("torch_bench: cannot import torch: %s" % ex)
        emit({"_meta": {"error": "no torch: %s" % ex}}, args.out)
        return 1

    if args.device == "cuda" and not torch.cuda.is_available():
        log("torch_bench: CUDA is not available to PyTorch (--device cpu --quick tests the script)")
        res = {"_meta": {"error": "cuda unavailable", "torch": torch.__version__}}
        emit(res, args.out)
        return 1

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True  # cuDNN's best algorithm per shape (the conv rows)
    dev = torch.device(args.device)
    bench = Bench(torch, dev, args)
    res = {}
    t_start = time.perf_counter()
    timings = {}

    def run(family, fn, key=None):
        """Runs one family, keeping the others going when it fails; key: where its rows go."""
        if family not in families:
            return
        t0 = time.perf_counter()
        try:
            out = fn()
            if key and out is not None:
                res[key] = out
        except Exception as ex:  # one family failing must not lose the others
            log("torch_bench: family %s failed: %r" % (family, ex))
            if key:
                res[key] = {"error": repr(ex)}
        finally:
            bench.free()
        timings[family] = round(time.perf_counter() - t0, 1)
        log("torch_bench: family %s took %.1f s" % (family, timings[family]))

    if args.child:  # the compile child: the FNO step under torch.compile only
        res["steps"] = {}
        run("compile", lambda: res["steps"].update(fno_step(bench, F, compiled=True)))
        emit(res, args.out)
        return 0

    run("elementwise", lambda: res.update(elementwise(bench, F)))
    run("kernels", lambda: kernels(bench, F), "kernels")
    run("dispatch", lambda: dispatch(bench), "dispatch")
    run("train", lambda: train_steps(bench, F), "train_steps")
    run("conv", lambda: conv_rows(bench, F), "conv")
    run("pool", lambda: pool_rows(bench, F), "pool")
    run("attention", lambda: attention_rows(bench, F), "attention")
    run("scan", lambda: scan_rows(bench), "scan")
    run("fft", lambda: fft_rows(bench), "fft")
    run("spectral", lambda: spectral_rows(bench), "spectral")
    steps = {}
    run("steps", lambda: (steps.update(fno_step(bench, F, compiled=False)), steps.update(cnn_step(bench, F))))
    run("compile", lambda: steps.update(compile_child(bench)))
    if steps:
        res["steps"] = steps

    res["_meta"] = {
        "n": args.n,
        "reps": args.reps,
        "warmup": args.warmup,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "device": torch.cuda.get_device_name(0) if bench.cuda else "cpu",
        "device_type": dev.type,
        "quick": args.quick,
        "families": families,
        "family_seconds": timings,
        "seconds": round(time.perf_counter() - t_start, 1),
        "tf32": bool(torch.backends.cuda.matmul.allow_tf32) or bool(torch.backends.cudnn.allow_tf32),
        "cudnn_benchmark": bool(torch.backends.cudnn.benchmark),
    }
    emit(res, args.out)
    return 0


def elementwise(bench, F):
    """Elementwise ops and whole-buffer reductions: {op: {"ms", "gbps"}} (top-level keys).

    GB/s counts (inputs + outputs) * 4 * n bytes, as the Go benchmarks do (a reduction: 1 input)."""
    torch, dev, args = bench.torch, bench.dev, bench.args
    n = args.n
    gen = torch.Generator(device=dev)
    gen.manual_seed(1234)

    def randn():
        return torch.randn(n, device=dev, dtype=torch.float32, generator=gen)

    x = randn()
    b = randn()
    g = randn()
    pos = torch.rand(n, device=dev, dtype=torch.float32, generator=gen) + 0.5  # sqrt input
    c = 1.7
    aten = torch.ops.aten

    # name -> (callable, number of buffers read, number written)
    table = {
        "copy": (lambda: torch.clone(x), 1, 1),
        "add": (lambda: torch.add(x, b), 2, 1),
        "mul": (lambda: torch.mul(x, b), 2, 1),
        "axpy": (lambda: torch.add(x, b, alpha=c), 2, 1),  # a + c*b, one fused kernel
        "scale": (lambda: torch.mul(x, c), 1, 1),
        "relu": (lambda: torch.relu(x), 1, 1),
        "relu_bwd": (lambda: aten.threshold_backward(g, x, 0.0), 2, 1),
        "exp": (lambda: torch.exp(x), 1, 1),
        "tanh": (lambda: torch.tanh(x), 1, 1),
        "sigmoid": (lambda: torch.sigmoid(x), 1, 1),
        "gelu": (lambda: F.gelu(x, approximate="tanh"), 1, 1),
        "gelu_bwd": (lambda: aten.gelu_backward(g, x, approximate="tanh"), 2, 1),
        "sqrt": (lambda: torch.sqrt(pos), 1, 1),
        "sum": (lambda: torch.sum(x), 1, 0),
        "mean": (lambda: torch.mean(x), 1, 0),
    }
    wanted = [s for s in args.ops.split(",") if s in table] if args.ops else list(table)
    res = {}
    for name in wanted:
        fn, nin, nout = table[name]
        try:
            ms = bench.time(fn, args.warmup, args.reps)
            gbps = (nin + nout) * 4.0 * n / (ms * 1e-3) / 1e9
            res[name] = {"ms": round(ms, 5), "gbps": round(gbps, 2)}
            log("torch_bench: %-9s %9.4f ms %8.1f GB/s" % (name, ms, gbps))
        except Exception as ex:  # keep going: one op failing must not lose the others
            log("torch_bench: %s failed: %r" % (name, ex))
            res[name] = {"error": repr(ex)}
    return res


def kernels(bench, F):
    """Kernel families at the shapes of the Go BenchmarkKernels rows (same names): median GPU ms.
    Their shapes are fixed and large: --quick runs none."""
    torch, args = bench.torch, bench.args
    out = {}
    if bench.quick:
        log("torch_bench: kernels skipped with --quick (fixed large shapes)")
        return out
    wanted = [s for s in args.ops.split(",") if s]
    for name, (setup, target) in kernel_table(torch, F, bench.dev).items():
        if wanted and name not in wanted:
            continue
        fn = None
        try:
            fn = setup()
            ms = bench.time(fn, args.warmup, max(5, args.reps // 5))
            out[name] = {"ms": round(ms, 5), "target": target}
            log("torch_bench: %-48s %9.4f ms" % (name, ms))
        except Exception as ex:
            log("torch_bench: %s failed: %r" % (name, ex))
            out[name] = {"error": repr(ex), "target": target}
        finally:
            torch.use_deterministic_algorithms(False)
            fn = None
            bench.free()
    return out


def dispatch(bench):
    """Eager dispatch: host time per 1-element op (x * 2.0), no sync per op, sync at the end."""
    torch, args = bench.torch, bench.args
    one = torch.ones(1, device=bench.dev, dtype=torch.float32)
    y = None
    for _ in range(2000):
        y = one * 2.0
    bench.sync()
    samples = []
    for _ in range(args.dispatch_samples):
        k = args.dispatch_ops
        t0 = time.perf_counter()
        for _ in range(k):
            y = one * 2.0
        bench.sync()
        samples.append((time.perf_counter() - t0) / k * 1e9)
    del y
    ns = statistics.median(samples)
    log("torch_bench: dispatch %.0f ns/op (min %.0f)" % (ns, min(samples)))
    return {"ns": round(ns, 1), "min_ns": round(min(samples), 1)}


def kernel_table(torch, F, dev):
    """name -> (setup returning the timed callable, target ratio torch_ms/our_ms).

    Names match the Go rows BenchmarkKernels/<name>/cuda (ops/kernels_bench_test.go); targets are
    those of shared/reference/performance-targets.md."""
    aten = torch.ops.aten

    def rnd(*shape):
        return torch.rand(*shape, device=dev, dtype=torch.float32)

    def softmax(r, c, log=False):
        def setup():
            x = rnd(r, c)
            return (lambda: torch.log_softmax(x, -1)) if log else (lambda: torch.softmax(x, -1))
        return setup

    def softmax_bwd():
        x = rnd(16384, 4096)
        y, g = torch.softmax(x, -1), rnd(16384, 4096)
        return lambda: aten._softmax_backward_data(g, y, -1, torch.float32)

    def layer_norm_fwd():
        x, w, b = rnd(16384, 4096), rnd(4096), rnd(4096)
        return lambda: F.layer_norm(x, (4096,), w, b, eps=1e-6)

    def layer_norm_bwd():
        x, w, b, g = rnd(16384, 4096), rnd(4096), rnd(4096), rnd(16384, 4096)
        _, mean, rstd = aten.native_layer_norm(x, [4096], w, b, 1e-6)
        return lambda: aten.native_layer_norm_backward(g, x, [4096], mean, rstd, w, b, [True, True, True])

    def matmul(m, n, p, batch=0):
        def setup():
            if batch:
                a, b = rnd(batch, m, n), rnd(batch, n, p)
                return lambda: torch.bmm(a, b)
            a, b = rnd(m, n), rnd(n, p)
            return lambda: torch.mm(a, b)
        return setup

    def scores(batch, m, n, p):
        # Attention's Q·Kᵀ: k holds (p, n) per batch, multiplied through a transposed view.
        def setup():
            q, k = rnd(batch, m, n), rnd(batch, p, n)
            return lambda: q @ k.transpose(-2, -1)
        return setup

    def unary(shape, f):
        def setup():
            x = rnd(*shape)
            return lambda: f(x)
        return setup

    def index(det, scatter):
        def setup():
            k, rows, cols = 1 << 20, 65536, 64
            j = torch.arange(k, device=dev, dtype=torch.int64)
            idx = (j * 2654435761 % (1 << 32)) % rows
            mat, vals = rnd(rows, cols), rnd(k, cols)
            if not scatter:
                return lambda: torch.index_select(mat, 0, idx)
            torch.use_deterministic_algorithms(det)
            return lambda: mat.index_add(0, idx, vals)
        return setup

    return {
        "transpose2d_8192x8192": (unary((8192, 8192), lambda x: x.t().contiguous()), 2.0),
        "softmax_16384x4096": (softmax(16384, 4096), 1.0),
        "softmax_4096x32768": (softmax(4096, 32768), 1.5),
        "log_softmax_16384x4096": (softmax(16384, 4096, log=True), 1.0),
        "log_softmax_4096x32768": (softmax(4096, 32768, log=True), 1.5),
        "softmax_bwd_16384x4096": (softmax_bwd, 1.6),
        "layer_norm_fwd_16384x4096": (layer_norm_fwd, 1.3),
        "layer_norm_bwd_16384x4096": (layer_norm_bwd, 1.8),
        "reduce_sum_by_row_16384x4096": (unary((16384, 4096), lambda x: x.sum(1)), 1.0),
        "reduce_max_by_row_16384x4096": (unary((16384, 4096), lambda x: x.amax(1)), 1.0),
        "reduce_sum_by_row_262144x128": (unary((262144, 128), lambda x: x.sum(1)), 1.3),
        "reduce_max_by_row_262144x128": (unary((262144, 128), lambda x: x.amax(1)), 1.3),
        "reduce_sum_by_column_16384x4096": (unary((16384, 4096), lambda x: x.sum(0)), 1.0),
        "reduce_sum_axis_64x1024x1024@1": (unary((64, 1024, 1024), lambda x: x.sum(1)), 1.0),
        "broadcast_to_64x1x4096->64x256x4096": (unary((64, 1, 4096), lambda x: x.expand(64, 256, 4096).contiguous()), 1.0),
        "reduce_from_broadcast_64x256x4096->64x1x4096": (unary((64, 256, 4096), lambda x: x.sum(1, keepdim=True)), 1.0),
        "reduce_from_broadcast_256x1x256->256x1024x256": (unary((256, 1024, 256), lambda x: x.sum(1, keepdim=True)), 1.0),
        "swap_adjacent_64x512x64x32@1": (unary((64, 512, 64, 32), lambda x: x.transpose(1, 2).contiguous()), 1.0),
        "gather_rows_1Mx64_from_65536": (index(False, False), 1.0),
        "scatter_add_rows_1Mx64_to_65536": (index(False, True), 1.0),
        "scatter_add_rows_1Mx64_to_65536_deterministic": (index(True, True), 1.5),
        # Go []int indices converted, checked, uploaded (and sorted) in every call, against
        # PyTorch's index tensor already on the device: informational, no target.
        "gather_rows_1Mx64_from_65536_host": (index(False, False), None),
        "scatter_add_rows_1Mx64_to_65536_host": (index(False, True), None),
        "scatter_add_rows_1Mx64_to_65536_deterministic_host": (index(True, True), None),
        "matmul_1024x1024x1024": (matmul(1024, 1024, 1024), 0.75),
        "matmul_2048x2048x2048": (matmul(2048, 2048, 2048), 0.9),
        "matmul_4096x4096x4096": (matmul(4096, 4096, 4096), 0.9),
        "matmul_256x4096x4096": (matmul(256, 4096, 4096), 0.75),
        "bmm_64x512x64x512": (matmul(512, 64, 512, batch=64), 1.5),
        # The same shape as attention's scores, q @ k^T (the targets file calls it attention-like).
        "bmm_64x512x64x512_nt": (scores(64, 512, 64, 512), 1.5),
        # The 64-column product of attention's backward (dA = dC · B^T has this shape): 128 x 64
        # tiles; no target.
        "bmm_64x512x512x64": (matmul(512, 512, 64, batch=64), None),
    }


def train_steps(bench, F):
    """Eager training steps: {name: {"ms": wall ms per step, "gpu_ms": GPU ms per step}}.

    mlp_784_512_512_10_b128_adamw: Linear-ReLU-Linear-ReLU-Linear, cross-entropy on random
    labels, batch 128, torch.optim.AdamW (defaults), zero_grad(set_to_none=True) each step; the
    same batch every step (the Go row does the same). Wall time: 200 steps after 30 of warm-up,
    no synchronization inside the loop, one at the end (what a training loop pays)."""
    torch, dev = bench.torch, bench.dev
    gen = torch.Generator(device=dev)
    gen.manual_seed(7)
    model = torch.nn.Sequential(torch.nn.Linear(784, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512),
                                torch.nn.ReLU(), torch.nn.Linear(512, 10)).to(dev)
    opt = torch.optim.AdamW(model.parameters())
    x = torch.rand(128, 784, device=dev, generator=gen)
    y = torch.randint(0, 10, (128,), device=dev, generator=gen)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()

    for _ in range(3 if bench.quick else 30):
        step()
    bench.sync()
    steps = 5 if bench.quick else 200
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    bench.sync()
    wall = (time.perf_counter() - t0) / steps * 1e3
    gpu = None
    if bench.cuda:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(steps):
            step()
        end.record()
        torch.cuda.synchronize()
        gpu = round(start.elapsed_time(end) / steps, 4)
    log("torch_bench: mlp step %.3f ms wall, %s ms between events" % (wall, gpu))
    return {"mlp_784_512_512_10_b128_adamw": {"ms": round(wall, 4), "gpu_ms": gpu}}


def timed_rows(bench, table, warmup, reps, label):
    """Times each row of table, {key: (setup returning fn, extra fields or None)}, one at a time
    (its tensors freed before the next); a row that fails records its error and the rest go on."""
    out = {}
    for key, (setup, extra) in table.items():
        fn = None
        try:
            fn = setup()
            ms = bench.time(fn, warmup, reps)
            row = {"ms": round(ms, 5)}
            for k, v in (extra or {}).items():
                row[k] = round(v(ms), 3) if callable(v) else v
            out[key] = row
            log("torch_bench: %-10s %-44s %9.4f ms" % (label, key, ms))
        except Exception as ex:
            log("torch_bench: %s %s failed: %r" % (label, key, ex))
            out[key] = {"error": repr(ex)}
        finally:
            fn = None
            bench.free()
    return out


# The convolutions of ResNet-18 on 224x224 images (channels in, out, input size, kernel, stride,
# padding), as ops/conv_bench_test.go's convResNet18 (BenchmarkConvTiles).
RESNET18 = [(3, 64, 224, 7, 2, 3),
            (64, 64, 56, 3, 1, 1), (64, 128, 56, 3, 2, 1), (128, 128, 28, 3, 1, 1), (128, 256, 28, 3, 2, 1),
            (256, 256, 14, 3, 1, 1), (256, 512, 14, 3, 2, 1), (512, 512, 7, 3, 1, 1),
            (64, 128, 56, 1, 2, 0), (128, 256, 28, 1, 2, 0), (256, 512, 14, 1, 2, 0)]


def conv_rows(bench, F):
    """cuDNN (TF32 off, benchmark mode) convolutions, forward, input gradient and weight gradient
    (aten.convolution_backward with one output asked for, as autograd asks), no bias:

      c<in>x<out>/<hw>x<hw>/k<k>/s<s>/<op>   ResNet-18's layers at batch 64 (BenchmarkConvTiles;
                                             --quick: batch 1)
      depthwise1d/<n>x1024x1024/k4p3/<op>    groups 1024, 4 taps, padding 3 (BenchmarkConvShapes)
      conv3d/<n>x32x32x32x32/k32x3x3x3p1/<op>  (BenchmarkConvShapes)

    where n is 8 (--quick: 1, the Go CPU run's batch)."""
    torch = bench.torch
    aten = torch.ops.aten
    dev = bench.dev
    batch = 1 if bench.quick else 64
    small = 1 if bench.quick else 8

    def rows(prefix, n, cin, cout, spatial, k, s, p, groups, shape):
        r = len(spatial)
        outs = [(x + 2 * p - k) // s + 1 for x in spatial]
        conv = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[r]
        flops = 2.0 * n * cout * (cin // groups) * k ** r * math.prod(outs)
        tensors = {}

        def make():
            if not tensors:
                tensors["x"] = torch.randn(n, cin, *spatial, device=dev)
                tensors["w"] = torch.randn(cout, cin // groups, *([k] * r), device=dev)
                tensors["dy"] = torch.randn(n, cout, *outs, device=dev)
            return tensors["x"], tensors["w"], tensors["dy"]

        def op(which):
            def setup():
                x, w, dy = make()
                if which == "fwd":
                    return lambda: conv(x, w, None, s, p, 1, groups)
                mask, i = ([True, False, False], 0) if which == "bwd_input" else ([False, True, False], 1)
                return lambda: aten.convolution_backward(dy, x, w, None, [s] * r, [p] * r, [1] * r, False,
                                                         [0] * r, groups, mask)[i]
            return setup

        for which in ("fwd", "bwd_input", "bwd_weight"):
            extra = {"tflops": lambda ms, f=flops: f / (ms * 1e-3) / 1e12}
            if shape:
                extra["shape"] = shape
            table[prefix + "/" + which] = (op(which), extra)

    table = {}
    for cin, cout, hw, k, s, p in RESNET18:
        rows("c%dx%d/%dx%d/k%d/s%d" % (cin, cout, hw, hw, k, s), batch, cin, cout, [hw, hw], k, s, p, 1,
             "ResNet-18 layers at batch %d" % batch)
    rows("depthwise1d/%dx1024x1024/k4p3" % small, small, 1024, 1024, [1024], 4, 1, 3, 1024, None)
    rows("conv3d/%dx32x32x32x32/k32x3x3x3p1" % small, small, 32, 32, [32, 32, 32], 3, 1, 1, 1, None)
    # A layer's three rows share its tensors (made at its first row): dropping its rows from the
    # table frees them before the next layer's are made.
    out = {}
    keys = list(table)
    for i in range(0, len(keys), 3):
        part = {k: table.pop(k) for k in keys[i:i + 3]}
        out.update(timed_rows(bench, part, 3, bench.reps(10), "conv"))
        del part
    return out


def pool_rows(bench, F):
    """Max pooling 3x3 stride 2 padding 1 and average pooling 2x2 stride 2 (count_include_pad) on
    (64, 64, 56, 56) (--quick: batch 2), forward and backward as autograd runs them (the max
    backward from the forward's indices), and max pooling's training pair (fwd_offsets: the
    forward returning indices; bwd_offsets: the backward from them): BenchmarkPoolCUDA's rows. GB/s as the Go rows count
    them: forward (input + output) * 4 bytes, backward (2 * input + output) * 4."""
    torch = bench.torch
    aten = torch.ops.aten
    batch = 2 if bench.quick else 64
    x = torch.randn(batch, 64, 56, 56, device=bench.dev)
    nin = x.numel()
    shape = "%dx64x56x56" % batch
    mo, idx = F.max_pool2d(x, 3, 2, 1, return_indices=True)
    ao = F.avg_pool2d(x, 2, 2, 0, False, True)
    mg, ag = torch.randn_like(mo), torch.randn_like(ao)

    def gb(nbytes):
        return lambda ms: nbytes / (ms * 1e-3) / 1e9

    table = {
        "max3x3s2p1/fwd": (lambda: lambda: F.max_pool2d(x, 3, 2, 1), {"gbps": gb(4 * (nin + mo.numel())), "shape": shape}),
        "max3x3s2p1/bwd": (lambda: lambda: aten.max_pool2d_with_indices_backward(mg, x, [3, 3], [2, 2], [1, 1], [1, 1], False, idx),
                           {"gbps": gb(4 * (2 * nin + mo.numel())), "shape": shape}),
        # the training pair: the forward that keeps the indices, the backward from them
        "max3x3s2p1/fwd_offsets": (lambda: lambda: F.max_pool2d(x, 3, 2, 1, return_indices=True),
                                   {"gbps": gb(4 * (nin + 2 * mo.numel())), "shape": shape}),
        "max3x3s2p1/bwd_offsets": (lambda: lambda: aten.max_pool2d_with_indices_backward(mg, x, [3, 3], [2, 2], [1, 1], [1, 1], False, idx),
                                   {"gbps": gb(4 * (nin + 2 * mo.numel())), "shape": shape}),
        "avg2x2s2/fwd": (lambda: lambda: F.avg_pool2d(x, 2, 2, 0, False, True), {"gbps": gb(4 * (nin + ao.numel())), "shape": shape}),
        "avg2x2s2/bwd": (lambda: lambda: aten.avg_pool2d_backward(ag, x, [2, 2], [2, 2], [0, 0], False, True, None),
                         {"gbps": gb(4 * (2 * nin + ao.numel())), "shape": shape}),
    }
    return timed_rows(bench, table, 3, bench.reps(20), "pool")


def sdpa_backend(torch, cuda):
    """(a function returning a context manager that forces SDPA's memory-efficient kernel, its
    description); flash attention refuses fp32, so this is what PyTorch runs for fp32 anyway."""
    import contextlib
    if not hasattr(torch.nn.functional, "scaled_dot_product_attention"):
        return None, "math (q k^T, softmax, @ v): torch %s has no scaled_dot_product_attention" % torch.__version__
    if not cuda:
        return contextlib.nullcontext, "sdpa, default backend (cpu)"
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
        return (lambda: sdpa_kernel([SDPBackend.EFFICIENT_ATTENTION])), "sdpa memory-efficient"
    except ImportError:
        pass
    if hasattr(torch.backends.cuda, "sdp_kernel"):
        return (lambda: torch.backends.cuda.sdp_kernel(enable_flash=False, enable_math=False,
                                                       enable_mem_efficient=True)), "sdpa memory-efficient"
    return contextlib.nullcontext, "sdpa, default backend"


def attention_rows(bench, F):
    """Attention fp32 forward and forward + backward on (batch, heads, n, d), scale 1/sqrt(d),
    causal and not, keyed as BenchmarkFlashAttention's rows: <b>x<h>x<n>x<d>/causal=<c>/<fwd|fwdbwd>.
    PyTorch >= 2.0: F.scaled_dot_product_attention with the memory-efficient kernel forced; older
    PyTorch (the CPU test machine's 1.13): the composed math, noted in each row."""
    torch = bench.torch
    ctx, note = sdpa_backend(torch, bench.cuda)
    log("torch_bench: attention: %s" % note)
    shapes = [(1, 4, 1024, 64)]
    if not bench.quick:
        shapes += [(8, 16, 1024, 64), (4, 16, 4096, 64), (8, 8, 1024, 128)]

    def attend(q, k, v, causal):
        if ctx is not None:
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        s = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1]))
        if causal:
            n = q.shape[-2]
            s = s.masked_fill(torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
        return torch.softmax(s, -1) @ v

    out = {}
    for b, h, n, d in shapes:
        q, k, v, g = (torch.rand(b, h, n, d, device=bench.dev) * 4 - 2 for _ in range(4))
        flops = 4.0 * b * h * n * n * d
        for causal in (False, True):
            name = "%dx%dx%dx%d/causal=%s" % (b, h, n, d, "true" if causal else "false")

            def fwd(causal=causal):
                with torch.no_grad():
                    return attend(q, k, v, causal)

            leaves = [t.detach().requires_grad_() for t in (q, k, v)]

            def fwdbwd(causal=causal, leaves=leaves):
                for t in leaves:
                    t.grad = None
                attend(*leaves, causal).backward(g)

            def table(note, fwd=fwd, fwdbwd=fwdbwd, flops=flops, name=name):
                return {name + "/fwd": (lambda: fwd, {"tflops": lambda ms: flops / (ms * 1e-3) / 1e12, "note": note}),
                        name + "/fwdbwd": (lambda: fwdbwd, {"note": note})}

            if ctx is None:
                out.update(timed_rows(bench, table(note), 3, bench.reps(10), "attention"))
                continue
            with ctx():
                got = timed_rows(bench, table(note), 3, bench.reps(10), "attention")
            failed = {k: v for k, v in got.items() if "error" in v}
            if failed:  # the forced kernel refused this shape: PyTorch's own choice, noted
                why = "%s refused (%s); default backend" % (note, next(iter(failed.values()))["error"][:80])
                retry = {k: v for k, v in table(why).items() if k in failed}
                got.update(timed_rows(bench, retry, 3, bench.reps(10), "attention"))
            out.update(got)
        del q, k, v, g
        bench.free()
    return out


def scan_rows(bench):
    """The diagonal selective scan h[t] = a*h[t-1] + b*x[t] over (batch 8, seqLen 1024, state
    16384) (--quick: state 1024, the Go CPU run's), a and b shared ("const", shape (state)) or per
    token ("var", (batch, seqLen, state)), as a PyTorch loop over time: forward one addcmul per
    step into the output (b*x computed once); backward autograd's through the same loop over
    unbound steps (the forward graph built untimed before each rep), gradients for a, b, x and h0 as the Go
    backward returns. Keys: BenchmarkSelectiveScan's fwd|bwd/const|var/<b>x<t>x<s>. GB/s as
    the Go rows count bytes. "_hbm_copy": the copy bandwidth (read + write) of 2^26 floats
    (--quick 2^20) for the roofline."""
    torch = bench.torch
    dev = bench.dev
    batch, seq, state = 8, 1024, (1024 if bench.quick else 16384)
    n = batch * seq * state
    out = {}
    m = 1 << (20 if bench.quick else 26)
    buf = torch.empty(m, device=dev)
    ms = bench.time(lambda: buf.clone(), 3, bench.reps(20))
    out["_hbm_copy"] = {"ms": round(ms, 5), "gbps": round(8.0 * m / (ms * 1e-3) / 1e9, 2)}
    del buf
    log("torch_bench: scan       hbm copy %.1f GB/s" % out["_hbm_copy"]["gbps"])
    for varying in (False, True):
        tag = "var" if varying else "const"
        coef = (batch, seq, state) if varying else (state,)
        a = 0.5 + 0.45 * torch.rand(*coef, device=dev)
        b = 4 * torch.rand(*coef, device=dev) - 2
        x = 2 * torch.rand(batch, seq, state, device=dev) - 1
        dy = 2 * torch.rand(batch, seq, state, device=dev) - 1
        h0 = 2 * torch.rand(batch, state, device=dev) - 1
        ins = 4 if varying else 2

        def fwd(a=a, b=b, x=x, h0=h0, varying=varying):
            bx = b * x
            y = torch.empty_like(x)
            prev = h0
            for t in range(seq):
                torch.addcmul(bx[:, t], a[:, t] if varying else a, prev, out=y[:, t])
                prev = y[:, t]
            return y

        leaves = [t.detach().requires_grad_() for t in (a, b, x, h0)]

        def graph(leaves=leaves, varying=varying):
            la, lb, lx, lh = leaves
            for t in leaves:
                t.grad = None
            # unbind, not bx[:, t]: the backward of one slice per step would write a whole
            # zero gradient per step; unbind's stacks the steps' gradients once
            bxs = (lb * lx).unbind(1)
            las = la.unbind(1) if varying else [la] * seq
            hs, prev = [], lh
            for t in range(seq):
                prev = torch.addcmul(bxs[t], las[t], prev)
                hs.append(prev)
            return torch.stack(hs, 1)

        def bwd(y, dy=dy):
            y.backward(dy)

        shape = "%dx%dx%d" % (batch, seq, state)
        try:
            ms = bench.time(fwd, 1, bench.reps(5))
            out["fwd/%s/%s" % (tag, shape)] = {"ms": round(ms, 5), "gbps": round(4.0 * n * ins / (ms * 1e-3) / 1e9, 2),
                                              "note": "torch loop over time"}
            log("torch_bench: scan       fwd/%s/%s %9.4f ms" % (tag, shape, ms))
            ms = bench.time(bwd, 1, bench.reps(3), setup=graph)
            out["bwd/%s/%s" % (tag, shape)] = {"ms": round(ms, 5), "gbps": round(8.0 * n * ins / (ms * 1e-3) / 1e9, 2),
                                              "note": "autograd through the torch loop"}
            log("torch_bench: scan       bwd/%s/%s %9.4f ms" % (tag, shape, ms))
        except Exception as ex:
            log("torch_bench: scan %s failed: %r" % (tag, ex))
            out.setdefault("fwd/%s/%s" % (tag, shape), {"error": repr(ex)})
            out.setdefault("bwd/%s/%s" % (tag, shape), {"error": repr(ex)})
        del a, b, x, dy, h0, leaves
        bench.free()
    return out


def fft_rows(bench):
    """torch.fft.rfft of (batch, n) real rows and torch.fft.irfft(spectrum, n) back, keyed as
    BenchmarkFFTTier's and BenchmarkRfft's rows: rfft|irfft/<batch>x<n>. GB/s as the Go rows
    count bytes (the input's floats * 4)."""
    torch = bench.torch
    shapes = [(64, 8192), (64, 6000)]
    if not bench.quick:
        shapes = [(4096, 8192), (4096, 6000), (4096, 1000)] + shapes
    out = {}
    for batch, n in shapes:
        x = torch.randn(batch, n, device=bench.dev)
        spec = torch.fft.rfft(x)
        table = {
            "rfft/%dx%d" % (batch, n): (lambda x=x: lambda: torch.fft.rfft(x),
                                        {"gbps": lambda ms, b=4.0 * x.numel(): b / (ms * 1e-3) / 1e9}),
            "irfft/%dx%d" % (batch, n): (lambda s=spec, n=n: lambda: torch.fft.irfft(s, n=n),
                                         {"gbps": lambda ms, b=8.0 * spec.numel(): b / (ms * 1e-3) / 1e9}),
        }
        out.update(timed_rows(bench, table, 3, bench.reps(20), "fft"))
        del x, spec
        bench.free()
    return out


def spectral_rows(bench):
    """The spectral convolution of an FNO-1D layer as neuraloperator writes it, on x of (batch,
    width, grid) (channels first: the chain needs no transposes; the Go op takes (batch, grid,
    width)) and a complex weight (width, width, modes): rfft over the grid, einsum "bix,iox->box"
    over the kept modes into a zero spectrum, irfft back. "forward" under no_grad; "forward+
    backward" the forward with autograd and backward(dy) for x and the weight. Batch 64, width
    64, grid 4096, 64 modes (--quick: 16, 64, 1024, 16): BenchmarkSpectralConvCUDA's rows."""
    torch = bench.torch
    dev = bench.dev
    batch, width, grid, modes = (16, 64, 1024, 16) if bench.quick else (64, 64, 4096, 64)
    x = torch.randn(batch, width, grid, device=dev)
    w = torch.rand(width, width, modes, dtype=torch.cfloat, device=dev) / (width * width)
    dy = torch.randn(batch, width, grid, device=dev)

    def chain(x, w):
        x_ft = torch.fft.rfft(x)
        out_ft = torch.zeros(batch, width, grid // 2 + 1, dtype=torch.cfloat, device=dev)
        out_ft[:, :, :modes] = torch.einsum("bix,iox->box", x_ft[:, :, :modes], w)
        return torch.fft.irfft(out_ft, n=grid)

    def fwd():
        with torch.no_grad():
            return chain(x, w)

    xl, wl = x.detach().requires_grad_(), w.detach().requires_grad_()

    def fwdbwd():
        xl.grad = wl.grad = None
        chain(xl, wl).backward(dy)

    shape = "batch %d, width %d, grid %d, %d modes" % (batch, width, grid, modes)
    table = {"forward": (lambda: fwd, {"shape": shape}), "forward+backward": (lambda: fwdbwd, {"shape": shape})}
    return timed_rows(bench, table, 3, bench.reps(10), "spectral")


def fno_model(torch, width, modes, layers, dev):
    """The FNO-1D of internal/bench/torch_fno.py (neuraloperator's), on dev: Linear(2, width), layers
    Fourier layers h <- GELU(K(h) + W(h)) (no GELU after the last; K the spectral convolution, W a
    pointwise Conv1d), Linear(width, 128), GELU, Linear(128, 1)."""
    nn = torch.nn

    class SpectralConv1d(nn.Module):
        def __init__(self):
            super().__init__()
            self.weights = nn.Parameter(torch.rand(width, width, modes, dtype=torch.cfloat) / (width * width))

        def forward(self, x):  # (batch, width, grid)
            n = x.shape[-1]
            x_ft = torch.fft.rfft(x)
            out_ft = torch.zeros(x.shape[0], width, n // 2 + 1, dtype=torch.cfloat, device=x.device)
            out_ft[:, :, :modes] = torch.einsum("bix,iox->box", x_ft[:, :, :modes], self.weights)
            return torch.fft.irfft(out_ft, n=n)

    class FNO1d(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc0 = nn.Linear(2, width)
            self.convs = nn.ModuleList([SpectralConv1d() for _ in range(layers)])
            self.ws = nn.ModuleList([nn.Conv1d(width, width, 1) for _ in range(layers)])
            self.fc1 = nn.Linear(width, 128)
            self.fc2 = nn.Linear(128, 1)

        def forward(self, x):  # (batch, grid, 2)
            x = self.fc0(x).permute(0, 2, 1)
            for i, (conv, w) in enumerate(zip(self.convs, self.ws)):
                x = conv(x) + w(x)
                if i < layers - 1:
                    x = torch.nn.functional.gelu(x)
            x = x.permute(0, 2, 1)
            return self.fc2(torch.nn.functional.gelu(self.fc1(x)))

    return FNO1d().to(dev)


def step_times(bench, step, warmup, steps):
    """Median wall ms of step() (which reads its loss back, synchronizing) over steps calls."""
    for _ in range(warmup):
        step()
    bench.sync()
    ts = []
    for _ in range(steps):
        t0 = time.perf_counter()
        step()
        ts.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ts)


def fno_step(bench, F, compiled):
    """examples/fno's BenchmarkFNOStep in PyTorch: FNO-1D, 4 layers, width 64, 16 modes, grid
    1024, batch 64 (--quick: grid 256, batch 4), relative L2 loss, Adam (lr 1e-3), the loss read
    back every step; eager ("fno1d/eager") or the model under torch.compile(mode=
    "reduce-overhead") ("fno1d/compile", the optimizer eager)."""
    torch = bench.torch
    key = "fno1d/compile" if compiled else "fno1d/eager"
    batch, grid = (4, 256) if bench.quick else (64, 1024)
    shape = "4 layers, width 64, 16 modes, grid %d, batch %d, Adam" % (grid, batch)
    try:
        torch.manual_seed(1)
        model = fno_model(torch, 64, 16, 4, bench.dev)
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        run = torch.compile(model, mode="reduce-overhead") if compiled else model
        u0 = torch.randn(batch, grid, 1, device=bench.dev)
        xs = torch.linspace(0, 1, grid + 1, device=bench.dev)[:-1].reshape(1, grid, 1).expand(batch, -1, -1)
        x = torch.cat([u0, xs], dim=2)
        y = torch.randn(batch, grid, device=bench.dev)

        def step():
            pred = run(x).reshape(batch, grid)
            loss = (torch.linalg.vector_norm(pred - y, dim=1) / torch.linalg.vector_norm(y, dim=1)).mean()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            return loss.item()

        t0 = time.perf_counter()
        ms = step_times(bench, step, 3 if bench.quick else (8 if compiled else 5), 3 if bench.quick else 30)
        log("torch_bench: step       %-44s %9.4f ms (%.1f s with warm-up)" % (key, ms, time.perf_counter() - t0))
        return {key: {"ms": round(ms, 4), "shape": shape}}
    except Exception as ex:
        log("torch_bench: %s failed: %r" % (key, ex))
        return {key: {"error": repr(ex)[:400], "shape": shape}}


def cnn_step(bench, F):
    """examples/fashionmnist's -model cnn step (BenchmarkCNNStepCUDA): Conv2d(1, 16, 3, padding 1),
    ReLU, MaxPool 2, Conv2d(16, 32, 3, padding 1), ReLU, MaxPool 2, Linear(1568, 128), ReLU,
    Dropout 0.25, Linear(128, 10), cross-entropy, SGD (lr 0.05, momentum 0.9), batch 64; each
    step uploads its batch from host memory (16 random batches in turn, as the Go loader uploads
    its batches) and reads the loss back."""
    torch = bench.torch
    nn = torch.nn
    key = "cnn/eager"
    shape = "fashionmnist cnn 16,32 hidden 128, batch 64, SGD momentum"
    try:
        torch.manual_seed(1)
        model = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2, 2),
                              nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2, 2), nn.Flatten(),
                              nn.Linear(32 * 7 * 7, 128), nn.ReLU(), nn.Dropout(0.25), nn.Linear(128, 10)).to(bench.dev)
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        xs = [torch.rand(64, 784) for _ in range(16)]
        ys = [torch.randint(0, 10, (64,)) for _ in range(16)]
        turn = [0]

        def step():
            i = turn[0] % len(xs)
            turn[0] += 1
            xb = xs[i].to(bench.dev).view(64, 1, 28, 28)
            yb = ys[i].to(bench.dev)
            loss = F.cross_entropy(model(xb), yb)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            return loss.item()

        ms = step_times(bench, step, 3 if bench.quick else 10, 5 if bench.quick else 50)
        log("torch_bench: step       %-44s %9.4f ms" % (key, ms))
        return {key: {"ms": round(ms, 4), "shape": shape}}
    except Exception as ex:
        log("torch_bench: %s failed: %r" % (key, ex))
        return {key: {"error": repr(ex)[:400], "shape": shape}}


def compile_child(bench):
    """fno_step(compiled=True) in a child process (this script with --child) that is killed, with
    its process group, after --compile-timeout seconds: a slow or stuck compilation costs at most
    that. Skipped on the CPU and with --quick."""
    key = "fno1d/compile"
    torch = bench.torch
    args = bench.args
    if not bench.cuda or bench.quick:
        log("torch_bench: compile skipped (needs CUDA, not --quick)")
        return {}
    if not hasattr(torch, "compile"):
        return {key: {"error": "torch %s has no torch.compile" % torch.__version__}}
    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    cmd = [sys.executable, os.path.abspath(__file__), "--child", "--only", "compile", "--out", path]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, start_new_session=True)
    try:
        proc.wait(timeout=args.compile_timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, 9)
        except OSError:
            pass
        proc.wait()
        os.unlink(path)
        log("torch_bench: compile timed out after %.0f s" % args.compile_timeout)
        return {key: {"error": "timed out after %.0f s (--compile-timeout)" % args.compile_timeout}}
    try:
        with open(path) as f:
            got = json.load(f).get("steps") or {}
    except (OSError, ValueError) as ex:
        got = {key: {"error": "child exit %s, no result: %r" % (proc.returncode, ex)}}
    os.unlink(path)
    return got


def emit(res, out):
    text = json.dumps(res, sort_keys=False)
    print(text, flush=True)
    if out:
        with open(out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    sys.exit(main())
