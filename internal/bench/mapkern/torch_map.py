# PyTorch's pointwise kernels at the sizes of mapkern.cu, timed with CUDA events (median of 21
# samples of 5 calls each, into a preallocated output): GB/s counting read + write.
import sys
import torch
n = 1 << int(sys.argv[1] if len(sys.argv) > 1 else 26)
x = (torch.rand(n, device="cuda") - 0.5) * 16
out = torch.empty_like(x)
ops = {"scale": lambda: torch.mul(x, 2.0, out=out), "exp": lambda: torch.exp(x, out=out),
       "tanh": lambda: torch.tanh(x, out=out), "sigmoid": lambda: torch.sigmoid(x, out=out),
       "gelu": lambda: torch.nn.functional.gelu(x, approximate="tanh"),
       "copy": lambda: out.copy_(x)}
# long: 2000 calls in a row per op, ms per call over the first and the last 200 (mapkern.cu long).
if len(sys.argv) > 2 and sys.argv[2] == "long":
    for name in ["tanh", "sigmoid", "gelu", "exp", "scale", "copy"]:
        f = ops[name]
        ev = [torch.cuda.Event(enable_timing=True) for _ in range(2001)]
        ev[0].record()
        for i in range(2000):
            f()
            ev[i + 1].record()
        ev[2000].synchronize()
        print("long     %-8s %-8s first 200: %8.4f ms/launch, last 200: %8.4f ms/launch" % (
            name, "torch", ev[0].elapsed_time(ev[200]) / 200, ev[1800].elapsed_time(ev[2000]) / 200))
    sys.exit(0)
m = x[: 16384 * 4096].view(16384, 4096)
ro = torch.empty(16384, device="cuda")
rows = {"rows sum": lambda: torch.sum(m, dim=1, out=ro), "rows max": lambda: torch.amax(m, dim=1, out=ro)}
for name, f in list(ops.items()) + list(rows.items()):
    for _ in range(3):
        f()
    t = []
    for _ in range(21):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(5):
            f()
        b.record()
        b.synchronize()
        t.append(a.elapsed_time(b) / 5)
    ms = sorted(t)[len(t) // 2]
    nbytes = 4.0 * m.numel() if name.startswith("rows") else 8.0 * n
    print("%-8s %-14s %8.4f ms %7.1f GB/s" % (name, "torch", ms, nbytes / ms / 1e6))
