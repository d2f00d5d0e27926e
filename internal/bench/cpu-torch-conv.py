# cpu-torch-conv.py: PyTorch's CPU side of cpu-torch-conv.sh. Prints one line per op (fwd,
# bwd_input, bwd_weight): the median milliseconds of `calls` timed calls after 2 warm-up calls,
# for conv2d of (batch, c, h, w) with (k, c, 3, 3) weights, padding 1, no bias, float32.
import statistics, sys, time
import torch

batch, c, hw, k, threads, calls = (int(a) for a in sys.argv[1:7])
torch.set_num_threads(threads)
torch.manual_seed(1)
x = torch.randn(batch, c, hw, hw)
w = torch.randn(k, c, 3, 3)
dy = torch.randn(batch, k, hw, hw)
F = torch.nn.functional
ops = {
    "fwd": lambda: F.conv2d(x, w, padding=1),
    "bwd_input": lambda: torch.nn.grad.conv2d_input(x.shape, w, dy, padding=1),
    "bwd_weight": lambda: torch.nn.grad.conv2d_weight(x, w.shape, dy, padding=1),
}
with torch.no_grad():
    for name, f in ops.items():
        for _ in range(2):
            f()
        ts = []
        for _ in range(calls):
            t = time.perf_counter()
            f()
            ts.append((time.perf_counter() - t) * 1e3)
        print(name, f"{statistics.median(ts):.3f}")
