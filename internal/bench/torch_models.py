#!/usr/bin/env python3
"""PyTorch twins of the model benchmark suite (issue 27, item 5): the examples' training steps,
timed eager, captured whole with torch.cuda.graph, and under torch.compile, against the Go rows
BenchmarkModelStep/<model>/{eager,graph} (examples/*/modelbench_test.go,
examples/internal/stepbench). internal/bench/models_table.py prints the table of both.

Models (the Go rows' sizes, activations, optimizer, learning-rate schedule type and batch):

  mlp        Fashion-MNIST MLP 784-256-10 (ReLU), batch 64, SGD lr 0.1, linear decay to 0
  mlp512     784-512-512-10 (ReLU), batch 128, AdamW (PyTorch's defaults), constant rate
  cnn        the examples' CNN: Conv 16, ReLU, MaxPool 2, Conv 32, ReLU, MaxPool 2, Linear 128,
             ReLU, Dropout 0.25, Linear 10; batch 64, SGD 0.05 momentum 0.9, linear decay
  gpt        GPT-2 style, 6 layers, d 512, 8 heads, context 256, batch 32, 91 characters;
             AdamW (0.9, 0.99, weight decay 0.1), clip 1, linear warm-up then cosine
  gpt_small  2 layers, d 128, 4 heads, context 32, batch 64, the same recipe
  fno        FNO-1D: 4 Fourier layers of width 64 with 16 modes, grid 256, batch 20, relative
             L2 loss, Adam 1e-3 with cosine annealing
  ssm        Mamba-style selective-scan blocks: 6 blocks of width 384 (768 scan channels, 4
             convolution taps), 64 windows of 256 characters; AdamW, clip 1, warm-up + cosine
  ssm_small  3 blocks of width 96, 32 windows of 128 characters

Variants (each a training step: the learning rate of the step set, forward, loss, backward,
[clipping,] optimizer step; the batch resident on the device and the same every step; no loss
read back; N steps then one synchronization, the median over rounds):

  eager       the plain step, foreach optimizers, a float learning rate set per step
  graph       the whole step captured with torch.cuda.graph after warm-up steps on a side stream
              (PyTorch's whole-network recipe): static inputs copied in before each replay;
              Adam(W) capturable=True and SGD fused=True with the learning rate a device tensor
              filled per step (the schedule followed). Should that fail, a second child captures
              with the rate fixed at capture, noted in the row
  compile_ro  torch.compile(mode="reduce-overhead") of the model and of the optimizer step
              (with clipping), the learning rate a 0-dim CPU tensor (PyTorch's recipe for
              compiled optimizers with schedules)
  compile_ma  the same with mode="max-autotune"

Every model and variant runs in a child process of this script with a time limit (a failing or
hanging one costs only its row): the eager and graph variants of a model in one child
(--timeout), then the reduce-overhead rows of every model (--compile-timeout each), then the
max-autotune rows (--autotune-timeout each), while the compile budget (--compile-budget
seconds for all compile rows together) lasts; a row over its limit or the budget is skipped
with a note. TF32 off (matmul and cuDNN), cudnn.benchmark on.

Output: one JSON object on stdout (and --out FILE): {"_meta": {...}, "models": {name: {"shape":
..., "eager": row, "graph": row, "compile_ro": row, "compile_ma": row}}}, a row being {"ms":
median ms per step, "rounds": [...], "note": ...}, {"error": ...} or {"skipped": reason}.
Progress goes to stderr.

  python3 internal/bench/torch_models.py --out models.json
  python3 internal/bench/torch_models.py --only gpt,fno --variants eager,graph
  /usr/bin/python3 internal/bench/torch_models.py --device cpu --quick   # testing the script

--device cpu --quick tests the script on a machine without a GPU: tiny models (gpt, ssm and fno
shrunk), 1 warm-up step, one round of 2 steps; the graph rows are skipped there (CUDA only), and
torch.compile where this torch has none. Its numbers are not a baseline.
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

MODELS = ["mlp", "mlp512", "cnn", "gpt", "gpt_small", "fno", "ssm", "ssm_small"]
VARIANTS = ["eager", "graph", "compile_ro", "compile_ma"]
COMPILE_MODES = {"compile_ro": "reduce-overhead", "compile_ma": "max-autotune"}
VOCAB = 91  # the Opticks corpus's distinct characters (examples/internal/text)
EPOCH_STEPS = 938  # full Fashion-MNIST at batch 64

# The models' settings, as the Go rows build them. sched: ("const",), ("linear", total),
# ("cosine", total, eta_min), ("warmup_cosine", steps, warmup, start_factor, floor).
SPECS = {
    "mlp": dict(kind="mlp", sizes=[784, 256, 10], batch=64, opt="sgd", lr=0.1, momentum=0.0,
                sched=("linear", 20 * EPOCH_STEPS)),
    "mlp512": dict(kind="mlp", sizes=[784, 512, 512, 10], batch=128, opt="adamw", lr=1e-3,
                   betas=(0.9, 0.999), wd=0.01, sched=("const",)),
    "cnn": dict(kind="cnn", channels=[16, 32], hidden=128, dropout=0.25, batch=64, opt="sgd",
                lr=0.05, momentum=0.9, sched=("linear", 10 * EPOCH_STEPS)),
    "gpt": dict(kind="gpt", layers=6, d=512, heads=8, seq=256, batch=32, opt="adamw", lr=1e-3,
                betas=(0.9, 0.99), wd=0.1, clip=1.0, sched=("warmup_cosine", 3000, 100, 0.01, 1e-4)),
    "gpt_small": dict(kind="gpt", layers=2, d=128, heads=4, seq=32, batch=64, opt="adamw", lr=5e-3,
                      betas=(0.9, 0.99), wd=0.1, clip=1.0, sched=("warmup_cosine", 1000, 30, 0.01, 5e-4)),
    "fno": dict(kind="fno", width=64, modes=16, layers=4, grid=256, batch=20, opt="adam", lr=1e-3,
                betas=(0.9, 0.999), wd=0.0, sched=("cosine", 20 * 50, 0.0)),
    "ssm": dict(kind="ssm", layers=6, d=384, conv=4, seq=256, batch=64, opt="adamw", lr=2e-3,
                betas=(0.9, 0.99), wd=0.1, clip=1.0, sched=("warmup_cosine", 3000, 100, 0.1, 2e-4)),
    "ssm_small": dict(kind="ssm", layers=3, d=96, conv=4, seq=128, batch=32, opt="adamw", lr=4e-3,
                      betas=(0.9, 0.99), wd=0.1, clip=1.0, sched=("warmup_cosine", 500, 25, 0.1, 4e-4)),
}

# --quick: shapes small enough for a CPU test of the script.
QUICK = {
    "gpt": dict(layers=1, d=64, heads=2, seq=32, batch=4),
    "gpt_small": dict(seq=16, batch=8),
    "fno": dict(grid=64, batch=4),
    "ssm": dict(layers=1, d=32, seq=16, batch=4),
    "ssm_small": dict(layers=1, seq=16, batch=4),
}


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def spec_of(name, quick):
    s = dict(SPECS[name])
    if quick:
        s.update(QUICK.get(name, {}))
    return s


def shape_of(s):
    """A one-line description of the model's settings, for the table."""
    k = s["kind"]
    if k == "mlp":
        body = "-".join(map(str, s["sizes"]))
    elif k == "cnn":
        body = "conv %s hidden %d dropout %g" % (",".join(map(str, s["channels"])), s["hidden"], s["dropout"])
    elif k == "gpt":
        body = "%d layers d %d %d heads T %d" % (s["layers"], s["d"], s["heads"], s["seq"])
    elif k == "fno":
        body = "%d layers width %d modes %d grid %d" % (s["layers"], s["width"], s["modes"], s["grid"])
    else:
        body = "%d blocks d %d T %d" % (s["layers"], s["d"], s["seq"])
    return "%s, batch %d, %s, %s" % (body, s["batch"], s["opt"], s["sched"][0])


def lr_at(s, k):
    """The learning rate of step k (0-based) of the schedule, the closed forms of the Go
    schedulers (nn.NewLinearLR, NewCosineAnnealingLR, NewLinearWarmup)."""
    base, sch = s["lr"], s["sched"]
    if sch[0] == "const":
        return base
    if sch[0] == "linear":
        return base * (1 - min(k, sch[1]) / sch[1])
    if sch[0] == "cosine":
        total, eta = sch[1], sch[2]
        return eta + (base - eta) * (1 + math.cos(math.pi * k / total)) / 2
    steps, warm, f0, floor = sch[1:]
    if k < warm:
        return base * (f0 + (1 - f0) * k / warm)
    total = max(steps - warm, 1)
    return floor + (base - floor) * (1 + math.cos(math.pi * (k - warm) / total)) / 2


# ---- the models ----

def build_model(torch, s, dev):
    """Returns (model, inputs, loss_fn): inputs the batch's tensors on dev, loss_fn(model,
    *inputs) the step's loss."""
    nn = torch.nn
    F = torch.nn.functional
    gen = torch.Generator(device="cpu")
    gen.manual_seed(2)
    k = s["kind"]
    if k in ("mlp", "cnn"):
        if k == "mlp":
            layers = []
            sizes = s["sizes"]
            for i in range(len(sizes) - 1):
                layers.append(nn.Linear(sizes[i], sizes[i + 1]))
                if i < len(sizes) - 2:
                    layers.append(nn.ReLU())
            model = nn.Sequential(*layers)
        else:
            c1, c2 = s["channels"]
            model = nn.Sequential(nn.Unflatten(1, (1, 28, 28)),
                                  nn.Conv2d(1, c1, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2, 2),
                                  nn.Conv2d(c1, c2, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2, 2),
                                  nn.Flatten(), nn.Linear(c2 * 7 * 7, s["hidden"]), nn.ReLU(),
                                  nn.Dropout(s["dropout"]), nn.Linear(s["hidden"], 10))
        x = torch.rand(s["batch"], 784, generator=gen)
        y = torch.randint(0, 10, (s["batch"],), generator=gen)

        def loss_fn(m, x, y):
            return F.cross_entropy(m(x), y)

        return model.to(dev), (x.to(dev), y.to(dev)), loss_fn
    if k == "gpt":
        model = gpt_model(torch, s)
        x = torch.randint(0, VOCAB, (s["batch"], s["seq"]), generator=gen)
        y = torch.randint(0, VOCAB, (s["batch"], s["seq"]), generator=gen)

        def loss_fn(m, x, y):
            return F.cross_entropy(m(x).reshape(-1, VOCAB), y.reshape(-1))

        return model.to(dev), (x.to(dev), y.to(dev)), loss_fn
    if k == "fno":
        model = fno_model(torch, s)
        b, g = s["batch"], s["grid"]
        u0 = torch.randn(b, g, 1, generator=gen)
        xs = (torch.arange(g, dtype=torch.float32) / g).reshape(1, g, 1).expand(b, g, 1)
        x = torch.cat([u0, xs], dim=2)
        y = torch.randn(b, g, generator=gen)

        def loss_fn(m, x, y):
            pred = m(x).reshape(y.shape)
            return (torch.linalg.vector_norm(pred - y, dim=1) / torch.linalg.vector_norm(y, dim=1)).mean()

        return model.to(dev), (x.to(dev), y.to(dev)), loss_fn
    model = ssm_model(torch, s)
    x = torch.randint(0, VOCAB, (s["batch"], s["seq"]), generator=gen)
    y = torch.randint(0, VOCAB, (s["batch"], s["seq"]), generator=gen)

    def loss_fn(m, x, y):
        return F.cross_entropy(m(x).reshape(-1, VOCAB), y.reshape(-1))

    return model.to(dev), (x.to(dev), y.to(dev)), loss_fn


def gpt_model(torch, s):
    """examples/gpt's model: token and position embeddings, pre-norm blocks (LayerNorm, causal
    attention with separate q, k, v projections, residual; LayerNorm, Linear 4d, GELU tanh,
    Linear d, residual), final LayerNorm, a head without bias; GPT-2's initialization."""
    nn = torch.nn
    F = torch.nn.functional
    L, d, H, T = s["layers"], s["d"], s["heads"], s["seq"]
    sdpa = getattr(F, "scaled_dot_product_attention", None)

    def linear(i, o, std, bias=True):
        m = nn.Linear(i, o, bias=bias)
        nn.init.normal_(m.weight, 0, std)
        if bias:
            nn.init.zeros_(m.bias)
        return m

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1, self.ln_2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.q, self.k, self.v = linear(d, d, 0.02), linear(d, d, 0.02), linear(d, d, 0.02)
            self.out = linear(d, d, 0.02 / math.sqrt(2 * L))
            self.fc, self.proj = linear(d, 4 * d, 0.02), linear(4 * d, d, 0.02 / math.sqrt(2 * L))

        def forward(self, x):
            b, t, _ = x.shape
            h = self.ln_1(x)
            q, k, v = (p(h).view(b, t, H, d // H).transpose(1, 2) for p in (self.q, self.k, self.v))
            if sdpa is not None:
                y = sdpa(q, k, v, is_causal=True)
            else:  # torch < 2.0
                a = (q @ k.transpose(-2, -1)) / math.sqrt(d // H)
                mask = torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1)
                y = a.masked_fill(mask, float("-inf")).softmax(-1) @ v
            x = x + self.out(y.transpose(1, 2).reshape(b, t, d))
            return x + self.proj(F.gelu(self.fc(self.ln_2(x)), approximate="tanh"))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(VOCAB, d), nn.Embedding(T, d)
            nn.init.normal_(self.wte.weight, 0, 0.02)
            nn.init.normal_(self.wpe.weight, 0, 0.02)
            self.h = nn.Sequential(*[Block() for _ in range(L)])
            self.ln_f = nn.LayerNorm(d)
            self.lm_head = linear(d, VOCAB, 0.02, bias=False)
            self.register_buffer("pos", torch.arange(T), persistent=False)

        def forward(self, idx):
            t = idx.shape[1]
            h = self.wte(idx) + self.wpe(self.pos[:t])
            return self.lm_head(self.ln_f(self.h(h)))

    torch.manual_seed(1)
    return GPT()


def fno_model(torch, s):
    """examples/fno's FNO-1D, channels last as ours: Linear(2, width), Fourier layers h <-
    GELU(K(h) + W(h)) (no GELU after the last; K: rfft along the grid, the lowest modes mixed by
    the complex (modes, in, out) weight re + i im, irfft of the zero-padded spectrum; W a
    Linear), Linear(width, 128), GELU, Linear(128, 1); GELU the tanh form (ours)."""
    nn = torch.nn
    F = torch.nn.functional
    W, M, L = s["width"], s["modes"], s["layers"]

    class Spectral(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight_re = nn.Parameter(torch.rand(M, W, W) / (W * W))
            self.weight_im = nn.Parameter(torch.rand(M, W, W) / (W * W))

        def forward(self, h):  # (batch, grid, width)
            n = h.shape[1]
            hf = torch.fft.rfft(h, dim=1)[:, :M]
            w = torch.complex(self.weight_re, self.weight_im)
            return torch.fft.irfft(torch.einsum("bmi,mio->bmo", hf, w), n=n, dim=1)

    class FNO(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc0 = nn.Linear(2, W)
            self.convs = nn.ModuleList([Spectral() for _ in range(L)])
            self.ws = nn.ModuleList([nn.Linear(W, W) for _ in range(L)])
            self.fc1, self.fc2 = nn.Linear(W, 128), nn.Linear(128, 1)

        def forward(self, x):
            h = self.fc0(x)
            for i in range(L):
                h = self.convs[i](h) + self.ws[i](h)
                if i < L - 1:
                    h = F.gelu(h, approximate="tanh")
            return self.fc2(F.gelu(self.fc1(h), approximate="tanh"))

    torch.manual_seed(1)
    return FNO()


def ssm_model(torch, s):
    """examples/ssm's model, batch first: an embedding, blocks x + out_proj(y) with h =
    RMSNorm(x), (u, z) = in_proj(h), u = SiLU(causal depthwise Conv1d of u), dt =
    softplus(dt_proj(u)), a = exp(-dt exp(A_log)), the scan s[t] = a[t] s[t-1] + dt[t] u[t] as
    a loop over time (Mamba's selective_scan_ref: PyTorch has no scan op), y = (s + D u)
    SiLU(z); a final RMSNorm and a head without bias."""
    nn = torch.nn
    F = torch.nn.functional
    L, d, C = s["layers"], s["d"], s["conv"]
    inner = 2 * d

    class RMSNorm(nn.Module):  # torch.nn.RMSNorm where this torch has it
        def __init__(self, n):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(n))

        def forward(self, x):
            eps = torch.finfo(x.dtype).eps
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * self.weight

    norm = getattr(nn, "RMSNorm", RMSNorm)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm = norm(d)
            self.in_proj = nn.Linear(d, 2 * inner, bias=False)
            self.conv1d = nn.Conv1d(inner, inner, C, groups=inner, padding=C - 1)
            self.dt_proj = nn.Linear(inner, inner)
            f = torch.linspace(0, 1, inner)
            g = torch.tensor([((j * 7) % inner) / max(inner - 1, 1) for j in range(inner)])
            dt = torch.exp(math.log(1e-3) + g * (math.log(1e-1) - math.log(1e-3)))
            with torch.no_grad():
                self.dt_proj.bias.copy_(dt + torch.log(-torch.expm1(-dt)))
            self.A_log = nn.Parameter(torch.log(1 + 15 * f))
            self.D = nn.Parameter(torch.ones(inner))
            self.out_proj = nn.Linear(inner, d, bias=False)
            with torch.no_grad():
                self.out_proj.weight.mul_(1 / math.sqrt(L))

        def forward(self, x):  # (batch, T, d)
            t = x.shape[1]
            u, z = self.in_proj(self.norm(x)).chunk(2, dim=-1)
            u = F.silu(self.conv1d(u.transpose(1, 2))[..., :t].transpose(1, 2))
            dt = F.softplus(self.dt_proj(u))
            a = torch.exp(dt * -torch.exp(self.A_log))
            bu = dt * u
            state = torch.zeros_like(bu[:, 0])
            ys = []
            for i in range(t):
                state = a[:, i] * state + bu[:, i]
                ys.append(state)
            y = (torch.stack(ys, dim=1) + u * self.D) * F.silu(z)
            return x + self.out_proj(y)

    class SSM(nn.Module):
        def __init__(self):
            super().__init__()
            self.embedding = nn.Embedding(VOCAB, d)
            self.layers = nn.Sequential(*[Block() for _ in range(L)])
            self.norm_f = norm(d)
            self.lm_head = nn.Linear(d, VOCAB, bias=False)

        def forward(self, idx):
            return self.lm_head(self.norm_f(self.layers(self.embedding(idx))))

    torch.manual_seed(1)
    return SSM()


def make_optimizer(torch, s, params, dev, variant, fixed_lr):
    """Returns (optimizer, set_lr, note): set_lr(v) makes v the learning rate of the next step."""
    kw = {}
    note = ""
    lr = s["lr"]
    tensor_lr = None
    if variant == "graph" and not fixed_lr:
        tensor_lr = torch.tensor(lr, device=dev)
        kw = {"capturable": True} if s["opt"] != "sgd" else {"fused": True}
    elif variant == "graph":
        kw = {"capturable": True} if s["opt"] != "sgd" else {}
        note = "learning rate fixed at capture"
    elif variant.startswith("compile"):
        tensor_lr = torch.tensor(lr)  # 0-dim, on the CPU: the compiled optimizer's recipe
    arg = tensor_lr if tensor_lr is not None else lr
    if s["opt"] == "sgd":
        opt = torch.optim.SGD(params, lr=arg, momentum=s["momentum"], **kw)
    elif s["opt"] == "adam":
        opt = torch.optim.Adam(params, lr=arg, betas=s["betas"], weight_decay=s["wd"], **kw)
    else:
        opt = torch.optim.AdamW(params, lr=arg, betas=s["betas"], weight_decay=s["wd"], **kw)
    if tensor_lr is not None:
        def set_lr(v):
            tensor_lr.fill_(v)
    elif variant == "graph":
        def set_lr(v):  # the rate is baked into the graph
            pass
    else:
        def set_lr(v):
            for g in opt.param_groups:
                g["lr"] = v
    return opt, set_lr, note


# ---- one child: the variants of one model ----

class Clock:
    def __init__(self, torch, dev):
        self.torch, self.cuda = torch, dev.type == "cuda"

    def sync(self):
        if self.cuda:
            self.torch.cuda.synchronize()


def measure(clock, step, warmup, rounds, steps):
    """Median ms per step over rounds of steps steps, each round ended by a synchronization,
    after warmup untimed steps; and the rounds' values."""
    for _ in range(warmup):
        step()
    clock.sync()
    per = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        clock.sync()
        per.append((time.perf_counter() - t0) / steps * 1e3)
    return statistics.median(per), per


def run_variant(torch, s, dev, variant, args):
    if variant == "graph" and dev.type != "cuda":
        return {"skipped": "torch.cuda.graph needs CUDA"}
    if variant.startswith("compile") and not hasattr(torch, "compile"):
        return {"skipped": "torch %s has no torch.compile" % torch.__version__}
    clock = Clock(torch, dev)
    model, inputs, loss_fn = build_model(torch, s, dev)
    params = list(model.parameters())
    opt, set_lr, note = make_optimizer(torch, s, params, dev, variant, args.fixed_lr)
    clip = s.get("clip")
    count = [0]

    def next_lr():
        set_lr(lr_at(s, count[0]))
        count[0] += 1

    def update():
        if clip:
            torch.nn.utils.clip_grad_norm_(params, clip)
        opt.step()

    t_setup = time.perf_counter()
    if variant == "eager":
        def step():
            next_lr()
            opt.zero_grad(set_to_none=True)
            loss_fn(model, *inputs).backward()
            update()
    elif variant == "graph":
        static = [t.clone() for t in inputs]
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # warm-up on a side stream, as PyTorch's recipe does
            for _ in range(3):
                next_lr()
                opt.zero_grad(set_to_none=True)
                loss_fn(model, *static).backward()
                update()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        opt.zero_grad(set_to_none=True)
        with torch.cuda.graph(graph):
            static_loss = loss_fn(model, *static)
            static_loss.backward()
            update()

        def step():
            next_lr()
            for dst, src in zip(static, inputs):
                dst.copy_(src)
            graph.replay()
    else:
        mode = COMPILE_MODES[variant]

        def forward(*xs):
            return loss_fn(model, *xs)

        forward_c = torch.compile(forward, mode=mode)
        update_c = torch.compile(update, mode=mode)

        def step():
            next_lr()
            opt.zero_grad(set_to_none=True)
            forward_c(*inputs).backward()
            update_c()
    warmup = args.warmup if variant in ("eager", "graph") else max(args.warmup, args.compile_warmup)
    t0 = time.perf_counter()
    for _ in range(warmup):
        step()
    clock.sync()
    warm_s = time.perf_counter() - t0
    ms, per = measure(clock, step, 0, args.rounds, args.steps)
    row = {"ms": round(ms, 4), "rounds": [round(x, 4) for x in per],
           "setup_s": round(warm_s + (t0 - t_setup), 1)}
    if note:
        row["note"] = note
    if variant.startswith("compile"):
        row["note"] = ("the loss (model and loss function) and the optimizer step (with clipping) compiled; "
                       "%d warm-up steps took %.1f s" % (warmup, warm_s))
    log("torch_models: %-10s %-10s %10.4f ms/step (rounds %s)" % (args.only, variant, ms,
                                                               ", ".join("%.4f" % x for x in per)))
    return row


def child(args):
    import torch
    dev = torch.device(args.device)
    setup_torch(torch)
    s = spec_of(args.only, args.quick)
    out = {}
    for v in args.variants.split(","):
        try:
            out[v] = run_variant(torch, s, dev, v, args)
        except Exception as ex:  # the next variant (or the parent's retry) goes on
            log("torch_models: %s %s failed: %r" % (args.only, v, ex))
            out[v] = {"error": repr(ex)[:400]}
        if dev.type == "cuda":
            torch.cuda.empty_cache()
    emit(out, args.out)
    return 0


def setup_torch(torch):
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    if hasattr(torch, "set_float32_matmul_precision"):
        torch.set_float32_matmul_precision("highest")


# ---- the parent ----

def spawn(args, model, variants, timeout, fixed_lr=False):
    """Runs one child; returns {variant: row}, rows of {"error"/"skipped"} when it failed or
    ran past timeout seconds (its process group killed)."""
    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    cmd = [sys.executable, os.path.abspath(__file__), "--child", "--only", model, "--variants", ",".join(variants),
           "--device", args.device, "--out", path, "--warmup", str(args.warmup), "--rounds", str(args.rounds),
           "--steps", str(args.steps), "--compile-warmup", str(args.compile_warmup)]
    if args.quick:
        cmd.append("--quick")
    if fixed_lr:
        cmd.append("--fixed-lr")
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, start_new_session=True)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, 9)
        except OSError:
            pass
        proc.wait()
        os.unlink(path)
        log("torch_models: %s %s: over the limit of %.0f s, killed" % (model, ",".join(variants), timeout))
        return {v: {"skipped": "over the time limit (%.0f s)" % timeout} for v in variants}
    try:
        with open(path) as f:
            got = json.load(f)
    except (OSError, ValueError) as ex:
        got = {v: {"error": "child exit %s, no result: %r" % (proc.returncode, ex)} for v in variants}
    os.unlink(path)
    for row in got.values():
        row.setdefault("child_s", round(time.perf_counter() - t0, 1))
    return got


def parent(args):
    try:
        import torch
    except ImportError as ex:
        log("torch_models: cannot import torch: %s" % ex)
        emit({"_meta": {"error": "no torch: %s" % ex}}, args.out)
        return 1
    if args.device == "cuda" and not torch.cuda.is_available():
        log("torch_models: CUDA is not available to PyTorch (--device cpu --quick tests the script)")
        emit({"_meta": {"error": "cuda unavailable", "torch": torch.__version__}}, args.out)
        return 1
    models = [m for m in args.only.split(",") if m] or MODELS
    variants = [v for v in args.variants.split(",") if v] or VARIANTS
    for m in models:
        if m not in SPECS:
            log("torch_models: unknown model %r (models: %s)" % (m, ",".join(MODELS)))
            return 2
    for v in variants:
        if v not in VARIANTS:
            log("torch_models: unknown variant %r (variants: %s)" % (v, ",".join(VARIANTS)))
            return 2
    t_start = time.perf_counter()
    res = {}
    for m in models:
        res[m] = {"shape": shape_of(spec_of(m, args.quick))}
        plain = [v for v in ("eager", "graph") if v in variants]
        if plain:
            res[m].update(spawn(args, m, plain, args.timeout))
        g = res[m].get("graph", {})
        if "error" in g:  # the schedule's tensor learning rate did not capture: a fixed rate
            log("torch_models: %s graph failed (%s); capturing with the rate fixed" % (m, g["error"][:120]))
            retry = spawn(args, m, ["graph"], args.timeout, fixed_lr=True)["graph"]
            retry["note"] = (retry.get("note", "") + "; the schedule's tensor rate failed: " + g["error"][:200]).lstrip("; ")
            res[m]["graph"] = retry
    budget_end = time.perf_counter() + args.compile_budget
    for v, limit in (("compile_ro", args.compile_timeout), ("compile_ma", args.autotune_timeout)):
        if v not in variants:
            continue
        for m in models:
            if not hasattr(torch, "compile"):
                res[m][v] = {"skipped": "torch %s has no torch.compile" % torch.__version__}
                continue
            left = budget_end - time.perf_counter()
            if left < 20:
                res[m][v] = {"skipped": "compile budget (%.0f s) spent" % args.compile_budget}
                continue
            res[m].update(spawn(args, m, [v], min(limit, left)))
    meta = {
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "device": torch.cuda.get_device_name(0) if args.device == "cuda" else "cpu",
        "device_type": args.device,
        "threads": torch.get_num_threads(),
        "quick": args.quick,
        "tf32": False,
        "warmup": args.warmup,
        "rounds": args.rounds,
        "steps": args.steps,
        "seconds": round(time.perf_counter() - t_start, 1),
    }
    emit({"_meta": meta, "models": res}, args.out)
    return 0


def emit(res, out):
    text = json.dumps(res)
    print(text, flush=True)
    if out:
        with open(out, "w") as f:
            f.write(text + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", default="", help="comma-separated models (default: all): " + ",".join(MODELS))
    ap.add_argument("--variants", default="", help="comma-separated variants (default: all): " + ",".join(VARIANTS))
    ap.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    ap.add_argument("--quick", action="store_true", help="tiny models and few steps, for testing only")
    ap.add_argument("--warmup", type=int, default=5, help="untimed steps before the timing")
    ap.add_argument("--compile-warmup", type=int, default=10, help="untimed steps of the compiled variants")
    ap.add_argument("--rounds", type=int, default=3, help="timed rounds (the median is reported)")
    ap.add_argument("--steps", type=int, default=20, help="steps per round")
    ap.add_argument("--timeout", type=float, default=300, help="seconds for a model's eager and graph child")
    ap.add_argument("--compile-timeout", type=float, default=120, help="seconds for a reduce-overhead child")
    ap.add_argument("--autotune-timeout", type=float, default=180, help="seconds for a max-autotune child")
    ap.add_argument("--compile-budget", type=float, default=240,
                    help="seconds for all compile children together (reduce-overhead rows first)")
    ap.add_argument("--out", default="", help="also write the JSON object to this file")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--fixed-lr", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.quick:
        args.warmup, args.compile_warmup, args.rounds, args.steps = 1, 2, 1, 2
    if args.child:
        return child(args)
    return parent(args)


if __name__ == "__main__":
    sys.exit(main())
