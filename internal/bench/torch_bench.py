#!/usr/bin/env python3
"""PyTorch baseline for the ops benchmarks (run on the GPU machine).

Times, on the GPU, fp32 with TF32 off, the same elementwise ops and whole-buffer reductions as
the Go benchmarks BenchmarkElementwise/<op>/cuda/n=N and BenchmarkReduce/<op>/cuda/n=N, plus the
eager host cost of a 1-element op (BenchmarkDispatch/cuda's counterpart).

GPU time: one CUDA event pair around each rep, after warm-up; the median over the reps.
GB/s counts (inputs + outputs) * 4 * n bytes, as the Go benchmarks do (a reduction: 1 input).

Prints one JSON object to stdout: {op: {"ms": .., "gbps": ..}, "dispatch": {"ns": ..},
"_meta": {...}}; --out FILE writes the same object to FILE. Progress goes to stderr.

  python3 internal/bench/torch_bench.py [--n 67108864] [--reps 50] [--warmup 5] [--out FILE]
"""
import argparse
import json
import statistics
import sys
import time


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=2 ** 26, help="elements per buffer (default 2**26)")
    ap.add_argument("--reps", type=int, default=50, help="timed reps per op (median taken)")
    ap.add_argument("--warmup", type=int, default=5, help="untimed reps per op")
    ap.add_argument("--dispatch-ops", type=int, default=20000, help="1-element ops per dispatch sample")
    ap.add_argument("--dispatch-samples", type=int, default=7, help="dispatch samples (median taken)")
    ap.add_argument("--ops", default="", help="comma-separated subset of ops (default: all)")
    ap.add_argument("--out", default="", help="also write the JSON object to this file")
    args = ap.parse_args()

    try:
        import torch
        import torch.nn.functional as F
    except ImportError as ex:
        log("torch_bench: cannot import torch: %s" % ex)
        emit({"_meta": {"error": "no torch: %s" % ex}}, args.out)
        return 1

    if not torch.cuda.is_available():
        log("torch_bench: CUDA is not available to PyTorch")
        res = {"_meta": {"error": "cuda unavailable", "torch": torch.__version__}}
        emit(res, args.out)
        return 1

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
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
    wanted = [s for s in args.ops.split(",") if s] or list(table)

    res = {}
    for name in wanted:
        if name not in table:
            log("torch_bench: unknown op", name)
            continue
        fn, nin, nout = table[name]
        try:
            for _ in range(args.warmup):
                fn()
            torch.cuda.synchronize()
            evs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                   for _ in range(args.reps)]
            keep = None
            for s, e in evs:
                keep = None  # free the previous result before the next op allocates
                s.record()
                keep = fn()
                e.record()
            torch.cuda.synchronize()
            del keep
            ms = statistics.median(s.elapsed_time(e) for s, e in evs)
            gbps = (nin + nout) * 4.0 * n / (ms * 1e-3) / 1e9
            res[name] = {"ms": round(ms, 5), "gbps": round(gbps, 2)}
            log("torch_bench: %-9s %9.4f ms %8.1f GB/s" % (name, ms, gbps))
        except Exception as ex:  # keep going: one op failing must not lose the others
            log("torch_bench: %s failed: %r" % (name, ex))
            res[name] = {"error": repr(ex)}

    # Kernel families at the shapes of the Go BenchmarkKernels rows (same names): median GPU ms.
    kernels = {}
    for name, (setup, target) in kernel_table(torch, F, dev).items():
        if args.ops and name not in wanted:
            continue
        try:
            fn = setup()
            ms = time_gpu(torch, fn, args.warmup, max(5, args.reps // 5))
            kernels[name] = {"ms": round(ms, 5), "target": target}
            log("torch_bench: %-48s %9.4f ms" % (name, ms))
        except Exception as ex:
            log("torch_bench: %s failed: %r" % (name, ex))
            kernels[name] = {"error": repr(ex), "target": target}
        finally:
            torch.use_deterministic_algorithms(False)
            fn = None
            torch.cuda.empty_cache()
    res["kernels"] = kernels

    # Eager dispatch: host time per 1-element op (x * 2.0), no sync per op, sync at the end.
    try:
        one = torch.ones(1, device=dev, dtype=torch.float32)
        y = None
        for _ in range(2000):
            y = one * 2.0
        torch.cuda.synchronize()
        samples = []
        for _ in range(args.dispatch_samples):
            k = args.dispatch_ops
            t0 = time.perf_counter()
            for _ in range(k):
                y = one * 2.0
            torch.cuda.synchronize()
            samples.append((time.perf_counter() - t0) / k * 1e9)
        del y
        ns = statistics.median(samples)
        res["dispatch"] = {"ns": round(ns, 1), "min_ns": round(min(samples), 1)}
        log("torch_bench: dispatch %.0f ns/op (min %.0f)" % (ns, min(samples)))
    except Exception as ex:
        log("torch_bench: dispatch failed: %r" % (ex,))
        res["dispatch"] = {"error": repr(ex)}

    # End-to-end training steps (names match the Go rows BenchmarkTrainStep/<name>/cuda).
    try:
        res["train_steps"] = train_steps(torch, F, dev)
    except Exception as ex:
        log("torch_bench: train steps failed: %r" % (ex,))
        res["train_steps"] = {"error": repr(ex)}

    res["_meta"] = {
        "n": n,
        "reps": args.reps,
        "warmup": args.warmup,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "device": torch.cuda.get_device_name(0),
        "tf32": bool(torch.backends.cuda.matmul.allow_tf32),
    }
    emit(res, args.out)
    return 0


def time_gpu(torch, fn, warmup, reps):
    """Median GPU ms of fn over reps (CUDA events), after warm-up."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    evs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
    keep = None
    for s, e in evs:
        keep = None
        s.record()
        keep = fn()
        e.record()
    torch.cuda.synchronize()
    del keep
    return statistics.median(s.elapsed_time(e) for s, e in evs)


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


def train_steps(torch, F, dev):
    """Eager training steps: {name: {"ms": wall ms per step, "gpu_ms": GPU ms per step}}.

    mlp_784_512_512_10_b128_adamw: Linear-ReLU-Linear-ReLU-Linear, cross-entropy on random
    labels, batch 128, torch.optim.AdamW (defaults), zero_grad(set_to_none=True) each step; the
    same batch every step (the Go row does the same). Wall time: 200 steps after 30 of warm-up,
    no synchronization inside the loop, one at the end (what a training loop pays)."""
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

    for _ in range(30):
        step()
    torch.cuda.synchronize()
    steps = 200
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    wall = (time.perf_counter() - t0) / steps * 1e3
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(steps):
        step()
    end.record()
    torch.cuda.synchronize()
    gpu = start.elapsed_time(end) / steps
    log("torch_bench: mlp step %.3f ms wall, %.3f ms between events" % (wall, gpu))
    return {"mlp_784_512_512_10_b128_adamw": {"ms": round(wall, 4), "gpu_ms": round(gpu, 4)}}


def emit(res, out):
    text = json.dumps(res, sort_keys=False)
    print(text, flush=True)
    if out:
        with open(out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    sys.exit(main())
