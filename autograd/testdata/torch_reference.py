"""Writes torch_reference.json: PyTorch's values of the losses of loss.go and of RMSprop steps,
which loss_test.go and optim_test.go compare against (so that CI needs no PyTorch).

    /usr/bin/python3 autograd/testdata/torch_reference.py   # PyTorch 1.13, CPU, float32

Every input is stored as the float32 value PyTorch used; outputs and gradients are PyTorch's
float32 results.
"""
import json
import os
import warnings

import torch
import torch.nn.functional as F

torch.manual_seed(23)
warnings.filterwarnings("ignore", message="reduction: 'mean' divides")  # kl_div's mean, on purpose


def vals(t):
    return [float(v) for v in t.detach().reshape(-1).tolist()]


cases = []


def loss_case(name, fn, x, y, extra, grad_y=True, **opts):
    x = x.clone().requires_grad_(True)
    y = y.clone().requires_grad_(grad_y)
    out = fn(x, y)
    out.sum().backward()
    c = {"name": name, "shape": list(x.shape), "x": vals(x), "y": vals(y), "out": vals(out),
         "out_shape": list(out.shape), "grad_x": vals(x.grad)}
    if grad_y:
        c["grad_y"] = vals(y.grad)
    c.update(extra)
    c.update(opts)
    cases.append(c)


# Binary cross-entropy with logits: large logits of both signs, soft and hard targets.
x = torch.tensor([[0.0, 30.0, -30.0], [100.0, -100.0, 2.5], [-1.25, 0.5, 7.0], [-6.0, 1e-3, -0.75]])
y = torch.tensor([[0.0, 1.0, 0.0], [0.3, 1.0, 0.75], [1.0, 0.0, 0.5], [0.25, 1.0, 0.0]])
w = torch.tensor([0.5, 2.0, 1.25])
pw = torch.tensor([3.0, 0.5, 1.5])
for red in ["mean", "sum", "none"]:
    loss_case("bce_with_logits/" + red, lambda a, b: F.binary_cross_entropy_with_logits(a, b, reduction=red),
              x, y, {}, reduction=red)
loss_case("bce_with_logits/weight", lambda a, b: F.binary_cross_entropy_with_logits(a, b, weight=w),
          x, y, {"weight": vals(w)}, reduction="mean")
loss_case("bce_with_logits/pos_weight", lambda a, b: F.binary_cross_entropy_with_logits(a, b, pos_weight=pw, reduction="sum"),
          x, y, {"pos_weight": vals(pw)}, reduction="sum")
loss_case("bce_with_logits/both", lambda a, b: F.binary_cross_entropy_with_logits(a, b, weight=w, pos_weight=pw, reduction="none"),
          x, y, {"weight": vals(w), "pos_weight": vals(pw)}, reduction="none")

# L1, smooth L1 and Huber: differences of 0 and exactly at the kinks (|x - y| = beta or delta).
x = torch.tensor([0.5, -1.0, 2.0, 3.0, -0.25, 1.5, 4.0, -2.0])
y = torch.tensor([0.5, 0.0, 1.0, 0.5, 0.25, -1.0, 1.5, -1.5])  # differences 0, -1, 1, 2.5, -0.5, 2.5, 2.5, -0.5
for red in ["mean", "sum", "none"]:
    loss_case("l1_loss/" + red, lambda a, b: F.l1_loss(a, b, reduction=red), x, y, {}, reduction=red)
for beta in [1.0, 0.5, 2.5, 0.0]:
    for red in ["mean", "none"]:
        loss_case("smooth_l1_loss/beta=%g/%s" % (beta, red),
                  lambda a, b: F.smooth_l1_loss(a, b, reduction=red, beta=beta), x, y, {}, reduction=red, beta=beta)
for delta in [1.0, 2.5, 0.5]:
    for red in ["mean", "sum"]:
        loss_case("huber_loss/delta=%g/%s" % (delta, red),
                  lambda a, b: F.huber_loss(a, b, reduction=red, delta=delta), x, y, {}, reduction=red, delta=delta)

# KL divergence: a zero target (0 log 0 = 0), every reduction, and log targets.
inp = F.log_softmax(torch.randn(3, 4), dim=1)
tgt = F.softmax(torch.randn(3, 4), dim=1)
tgt[0, 1] = 0.0
for red in ["batchmean", "sum", "mean", "none"]:
    loss_case("kl_div/" + red, lambda a, b: F.kl_div(a, b, reduction=red), inp, tgt, {}, grad_y=False, reduction=red)
ltgt = F.log_softmax(torch.randn(3, 4), dim=1)
for red in ["batchmean", "none"]:
    loss_case("kl_div/log_target/" + red, lambda a, b: F.kl_div(a, b, reduction=red, log_target=True),
              inp, ltgt, {}, reduction=red, log_target=True)

# NLL: log-probabilities with labels, an ignored row, class weights.
lp = F.log_softmax(torch.randn(5, 4), dim=1)
nll = []
for labels, ignore in [([1, 3, 2, 0, 2], None), ([1, 3, -100, 0, 2], -100)]:
    for weight in [None, torch.tensor([0.5, 2.0, 1.0, 0.25])]:
        for red in ["mean", "sum", "none"]:
            x = lp.clone().requires_grad_(True)
            kw = {"reduction": red}
            if ignore is not None:
                kw["ignore_index"] = ignore
            if weight is not None:
                kw["weight"] = weight
            out = F.nll_loss(x, torch.tensor(labels), **kw)
            out.sum().backward()
            nll.append({"shape": list(x.shape), "x": vals(x), "labels": labels, "ignore": ignore,
                        "weight": None if weight is None else vals(weight), "reduction": red,
                        "out": vals(out), "out_shape": list(out.shape), "grad_x": vals(x.grad)})

# RMSprop: three steps of fixed gradients on a small tensor.
p0 = torch.tensor([0.5, -1.5, 2.0, 0.0, -0.25])
grads = [torch.tensor([0.1, -0.2, 0.3, 0.0, 1.5]), torch.tensor([-0.4, 0.25, 0.3, 1e-3, -2.0]),
         torch.tensor([0.05, 0.5, -0.3, -1e-3, 0.75])]
rms = []
for opts in [{}, {"lr": 0.01, "alpha": 0.9, "eps": 1e-6, "weight_decay": 0.1},
             {"lr": 0.005, "momentum": 0.9}, {"lr": 0.01, "centered": True},
             {"lr": 0.02, "alpha": 0.95, "eps": 1e-5, "weight_decay": 0.05, "momentum": 0.5, "centered": True}]:
    p = p0.clone().requires_grad_(True)
    opt = torch.optim.RMSprop([p], **opts)
    steps = []
    for g in grads:
        p.grad = g.clone()
        opt.step()
        steps.append(vals(p))
    st = opt.state[p]
    rms.append({"opts": opts, "p0": vals(p0), "grads": [vals(g) for g in grads], "params": steps,
                "square_avg": vals(st["square_avg"]),
                "momentum_buffer": vals(st["momentum_buffer"]) if "momentum_buffer" in st else None,
                "grad_avg": vals(st["grad_avg"]) if "grad_avg" in st else None,
                "step": float(st["step"])})

out = {"torch": torch.__version__, "losses": cases, "nll": nll, "rmsprop": rms}
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch_reference.json"), "w") as f:
    f.write('{"torch": %s' % json.dumps(torch.__version__))
    for key in ["losses", "nll", "rmsprop"]:  # one case a line
        f.write(',\n "%s": [\n  ' % key + ",\n  ".join(json.dumps(c) for c in out[key]) + "\n ]")
    f.write("\n}\n")
