#!/usr/bin/env python3
"""PyTorch (cuBLAS) baseline for sgemm.cu's timing shapes: fp32, TF32 off.

Prints one line per shape, "TORCH shape=<name> ms=<median> tflops=<x>", timed with CUDA events
around each rep after warm-up (median of --reps). The shapes match kShapes in sgemm.cu.
"""
import argparse
import statistics

import torch

SHAPES = [
    ("1024^3", 1, 1024, 1024, 1024, False, False),
    ("2048^3", 1, 2048, 2048, 2048, False, False),
    ("4096^3", 1, 4096, 4096, 4096, False, False),
    ("256x4096x4096", 1, 256, 4096, 4096, False, False),
    ("bmm64x512x64x512", 64, 512, 64, 512, False, False),
    ("bmm64x512x64x512_nt", 64, 512, 64, 512, False, True),
    ("bmm64x512x64x512_tn", 64, 512, 64, 512, True, False),
    ("bmm64x512x64x512_tt", 64, 512, 64, 512, True, True),
    ("bmm64x512x128x512", 64, 512, 128, 512, False, False),
    ("bmm64x512x512x64_nt", 64, 512, 512, 64, False, True),
    ("bmm64x64x512x512_tn", 64, 64, 512, 512, True, False),
    ("bmm64x512x512x64", 64, 512, 512, 64, False, False),
    ("4096x1024x64", 1, 4096, 1024, 64, False, False),
    ("16384x1024x64_tn", 1, 16384, 1024, 64, True, False),
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
    for name, b, m, n, p, ta, tb in SHAPES:
        g = torch.Generator(device=dev).manual_seed(7)
        if ta or tb:
            # Stored transposed (as sgemm.cu's transA / transB), multiplied through views.
            A = torch.rand(b, n, m, device=dev, generator=g) * 2 - 1 if ta else \
                torch.rand(b, m, n, device=dev, generator=g) * 2 - 1
            B = torch.rand(b, p, n, device=dev, generator=g) * 2 - 1 if tb else \
                torch.rand(b, n, p, device=dev, generator=g) * 2 - 1
            Av = A.transpose(1, 2) if ta else A
            Bv = B.transpose(1, 2) if tb else B
            C = torch.empty(b, m, p, device=dev)
            f = lambda: torch.bmm(Av, Bv, out=C)
        elif b == 1:
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
