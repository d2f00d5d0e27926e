# Learning rates of torch.optim.lr_scheduler for the cases of sched_test.go (TestSchedulersMatchTorch).
# Regenerate with PyTorch 1.13:
#   /usr/bin/python3 autograd/nn/testdata/sched_torch.py > autograd/nn/testdata/sched_torch.json
# Each case records the optimizer's learning rate after k scheduler steps, k = 0 (right after the
# scheduler is constructed) to steps, as Python's repr (the shortest text that reads back exactly).
import json
import warnings

import torch
from torch.optim import SGD
from torch.optim import lr_scheduler as S

warnings.filterwarnings("ignore")  # SequentialLR's step(0) of the next scheduler warns


def warm(start, n, inner):
    return lambda o: S.SequentialLR(o, [S.LinearLR(o, start_factor=start, total_iters=n), inner(o)], milestones=[n])


CASES = [
    ("step", 0.1, 20, lambda o: S.StepLR(o, step_size=3, gamma=0.5)),
    ("multistep", 0.1, 15, lambda o: S.MultiStepLR(o, milestones=[9, 2, 5, 5], gamma=0.3)),
    ("exponential", 0.1, 300, lambda o: S.ExponentialLR(o, gamma=0.97)),
    ("cosine", 0.1, 120, lambda o: S.CosineAnnealingLR(o, T_max=50, eta_min=1e-4)),
    ("cosine_short", 3e-4, 20, lambda o: S.CosineAnnealingLR(o, T_max=7)),
    ("warmup_cosine", 0.1, 60, warm(0.01, 10, lambda o: S.CosineAnnealingLR(o, T_max=40))),
    ("warmup_step", 0.5, 30, warm(0.25, 5, lambda o: S.StepLR(o, step_size=4, gamma=0.5))),
    ("warmup_exponential", 0.1, 20, warm(0.1, 3, lambda o: S.ExponentialLR(o, gamma=0.9))),
    ("warmup_multistep", 1.0, 20, warm(0.5, 4, lambda o: S.MultiStepLR(o, milestones=[3, 8], gamma=0.1))),
    ("onecycle", 0.1, 100, lambda o: S.OneCycleLR(o, max_lr=0.5, total_steps=100, cycle_momentum=False)),
    ("onecycle_linear", 0.1, 37, lambda o: S.OneCycleLR(o, max_lr=2e-3, total_steps=37, pct_start=0.25,
                                                          anneal_strategy="linear", div_factor=10.0,
                                                          final_div_factor=100.0, cycle_momentum=False)),
    ("onecycle_tiny", 0.1, 3, lambda o: S.OneCycleLR(o, max_lr=1.0, total_steps=3, cycle_momentum=False)),
]

out = {"torch": torch.__version__, "cases": []}
for name, lr, steps, make in CASES:
    opt = SGD([torch.zeros(1, requires_grad=True)], lr=lr)
    sched = make(opt)
    lrs = [opt.param_groups[0]["lr"]]
    for _ in range(steps):
        opt.step()
        sched.step()
        lrs.append(opt.param_groups[0]["lr"])
    out["cases"].append({"name": name, "lrs": [repr(float(v)) for v in lrs]})
print(json.dumps(out, indent=1))
