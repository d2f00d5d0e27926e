#!/usr/bin/env python3
"""PyTorch CPU baseline of BenchmarkTrainStep/mlp_784_512_512_10_b128_adamw/cpu.

The step of torch_bench.py's train_steps on the CPU (Debian's python3-torch works): the
784-512-512-10 MLP, batch 128, cross-entropy, AdamW with PyTorch's defaults, torch threads =
the CPU count. Prints ms per step (median of --samples samples of --steps steps).

  /usr/bin/python3 internal/bench/torch_cpu_step.py [--steps 100] [--samples 5]
"""
import argparse
import os
import statistics
import time

import torch
import torch.nn.functional as F


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--samples", type=int, default=5)
    args = ap.parse_args()
    torch.set_num_threads(os.cpu_count())
    torch.manual_seed(7)
    model = torch.nn.Sequential(torch.nn.Linear(784, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512),
                                torch.nn.ReLU(), torch.nn.Linear(512, 10))
    opt = torch.optim.AdamW(model.parameters())
    x = torch.rand(128, 784)
    y = torch.randint(0, 10, (128,))

    def step():
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(model(x), y).backward()
        opt.step()

    for _ in range(20):
        step()
    samples = []
    for _ in range(args.samples):
        t0 = time.perf_counter()
        for _ in range(args.steps):
            step()
        samples.append((time.perf_counter() - t0) / args.steps * 1e3)
    print("torch %s cpu, %d threads: mlp_784_512_512_10_b128_adamw %.3f ms/step (samples %s)" % (
        torch.__version__, torch.get_num_threads(), statistics.median(samples),
        " ".join("%.3f" % s for s in samples)))


if __name__ == "__main__":
    main()
