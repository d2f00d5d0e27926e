#!/usr/bin/env python3
"""PyTorch (cuBLAS) baseline for sgemm.cu's timing shapes: fp32, TF32 off.

Prints one line per shape, "TORCH shape=<name> ms=<median> tflops=<x>", timed with CUDA events
around each rep after warm-up (median of --reps). The shapes match kShapes in sgemm.cu.
"""
import argparse
import statistics

import torch

SHAPES = [
    ("1024^3", 1, 1024, 1024, 1024),
    ("2048^3", 1, 2048, 2048, 2048),
    ("4096^3", 1, 4096, 4096, 4096),
    ("256x4096x4096", 1, 256, 4096, 4096),
    ("bmm64x512x64x512", 64, 512, 64, 512),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=15)
    args = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    dev = torch.device("cuda")
    print("TORCH_INFO", torch.__version__, torch.version.cuda, torch.cuda.get_device_name(0))
    for name, b, m, n, p in SHAPES:
        g = torch.Generator(device=dev).manual_seed(7)
        if b == 1:
            A = torch.rand(m, n, device=dev, generator=g) * 2 - 1
            B = torch.rand(n, p, device=dev, generator=g) * 2 - 1
            C = torch.empty(m, p, device=dev)
            f = lambda: torch.mm(A, B, out=C)
        else:
            A = torch.rand(b, m, n, device=dev, generator=g) * 2 - 1
            B = torch.rand(b, n, p, device=dev, generator=g) * 2 - 1
            C = torch.empty(b, m, p, device=dev)
            f = lambda: torch.bmm(A, B, out=C)
        for _ in range(3):
            f()
        torch.cuda.synchronize()
        ms = []
        for _ in range(args.reps):
            e0 = torch.cuda.Event(enable_timing=True)
            e1 = torch.cuda.Event(enable_timing=True)
            e0.record()
            f()
            e1.record()
            e1.synchronize()
            ms.append(e0.elapsed_time(e1))
        t = statistics.median(ms)
        print(f"TORCH shape={name} ms={t:.4f} tflops={2.0 * b * m * n * p / (t * 1e-3) / 1e12:.2f}",
              flush=True)


if __name__ == "__main__":
    main()
