#!/usr/bin/env python3
"""PyTorch CPU baseline of examples/fno's training step (one thread by default).

The FNO-1D of the FNO paper's code and neuraloperator, the size of issue 24's benchmark and of
examples/fno's BenchmarkFNOStep: a lifting nn.Linear(2, 64), 4 Fourier layers
h <- GELU(K(h) + W(h)) (no GELU after the last), K the spectral convolution in neuraloperator's
chain (torch.fft.rfft along the grid, an einsum over the 16 kept modes with a complex weight
(in, out, modes), torch.fft.irfft back to the grid), W a pointwise nn.Conv1d(64, 64, 1), then
nn.Linear(64, 128), GELU, nn.Linear(128, 1); the relative L2 loss (the mean over the batch of
||pred - y|| / ||y||), Adam (PyTorch's defaults, lr 1e-3), a batch of 64 samples of 1024 points
(random values, made once), the loss read back with loss.item() every step as the Go step does.

It times --steps steps after --warmup steps and prints, for scripts,

  torch_fno: step_ms MEDIAN best BEST cpu_ms CPU

the median and the best wall-clock time of a step and the mean CPU time of a step (near the wall
time: one thread busy; near twice: two).

  /usr/bin/python3 internal/bench/torch_fno.py [--threads 1] [--blas-threads N] [--steps 10]

One thread means one thread: --threads sets torch.set_num_threads and, before torch loads, the
OpenBLAS (and OpenMP, MKL) thread count, which torch.set_num_threads alone leaves at every CPU
(Debian's torch does its matrix products in OpenBLAS). --blas-threads 0 leaves OpenBLAS its
default, for comparison.
"""
import argparse
import os
import statistics
import time

torch = None  # imported in main, once the BLAS thread count is in the environment


def build(width, modes, layers):
    nn = torch.nn

    class SpectralConv1d(nn.Module):
        """neuraloperator's SpectralConv1d: weights scale * U[0, 1) in both parts, cfloat."""

        def __init__(self):
            super().__init__()
            scale = 1 / (width * width)
            self.weights = nn.Parameter(scale * torch.rand(width, width, modes, dtype=torch.cfloat))

        def forward(self, x):  # x: (batch, width, grid)
            n = x.shape[-1]
            x_ft = torch.fft.rfft(x)
            out_ft = torch.zeros(x.shape[0], width, n // 2 + 1, dtype=torch.cfloat)
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

        def forward(self, x):  # x: (batch, grid, 2)
            x = self.fc0(x).permute(0, 2, 1)
            for i, (conv, w) in enumerate(zip(self.convs, self.ws)):
                x = conv(x) + w(x)
                if i < layers - 1:
                    x = torch.nn.functional.gelu(x)
            x = x.permute(0, 2, 1)
            return self.fc2(torch.nn.functional.gelu(self.fc1(x)))

    return FNO1d()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--blas-threads", type=int, default=-1,
                    help="OpenBLAS threads (default: --threads; 0: OpenBLAS's own default, every CPU)")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--grid", type=int, default=1024)
    ap.add_argument("--width", type=int, default=64)
    ap.add_argument("--modes", type=int, default=16)
    ap.add_argument("--layers", type=int, default=4)
    args = ap.parse_args()
    blas = args.threads if args.blas_threads < 0 else args.blas_threads
    if blas > 0:
        for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[var] = str(blas)
    global torch
    import torch as torch_module
    torch = torch_module
    torch.set_num_threads(args.threads)
    torch.manual_seed(1)

    model = build(args.width, args.modes, args.layers)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(2)
    u0 = torch.randn(args.batch, args.grid, 1, generator=gen)
    xs = torch.linspace(0, 1, args.grid + 1)[:-1].reshape(1, args.grid, 1).expand(args.batch, -1, -1)
    x = torch.cat([u0, xs], dim=2)
    y = torch.randn(args.batch, args.grid, generator=gen)
    print("torch_fno: torch %s, %d threads, OpenBLAS threads: %s; batch %d, grid %d, width %d, %d modes, %d layers" % (
        torch.__version__, torch.get_num_threads(), os.environ.get("OPENBLAS_NUM_THREADS", "default"),
        args.batch, args.grid, args.width, args.modes, args.layers))

    def step():
        pred = model(x).reshape(args.batch, args.grid)
        loss = (torch.linalg.vector_norm(pred - y, dim=1) / torch.linalg.vector_norm(y, dim=1)).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss.item()

    for _ in range(args.warmup):
        step()
    times = []
    cpu_start = time.process_time()
    for _ in range(args.steps):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    cpu = (time.process_time() - cpu_start) / args.steps
    print("torch_fno: step_ms %.2f best %.2f cpu_ms %.2f" % (
        1e3 * statistics.median(times), 1e3 * min(times), 1e3 * cpu))


if __name__ == "__main__":
    main()
