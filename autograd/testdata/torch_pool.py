# torch_pool.py writes torch_pool.json: PyTorch 1.13 CPU values and input gradients of max and
# average pooling (float64 computation on float32-representable inputs), and of smooth max
# pooling built from PyTorch ops (zero padding, unfold, logsumexp(beta*x)/beta), read by
# TestPoolAgainstTorch.
#   /usr/bin/python3 autograd/testdata/torch_pool.py > autograd/testdata/torch_pool.json
import json
import torch
import torch.nn.functional as F

torch.manual_seed(0)
cases = [
    # (name, kind, shape, kernel, stride, padding, count_include_pad, beta)
    ("max1d", "max", [2, 3, 11], [3], [2], [1], True, 0),
    ("max2d_resnet", "max", [2, 3, 9, 10], [3, 3], [2, 2], [1, 1], True, 0),
    ("max2d_k2", "max", [1, 4, 8, 6], [2, 2], [2, 2], [0, 0], True, 0),
    ("max3d", "max", [1, 2, 5, 4, 6], [2, 3, 2], [1, 2, 3], [1, 1, 0], True, 0),
    ("avg1d", "avg", [2, 2, 9], [4], [3], [2], True, 0),
    ("avg2d", "avg", [2, 3, 7, 8], [3, 3], [2, 1], [1, 1], True, 0),
    ("avg2d_nopad", "avg", [1, 3, 7, 8], [3, 2], [2, 2], [1, 1], False, 0),
    ("avg3d", "avg", [1, 2, 4, 5, 6], [2, 2, 3], [2, 1, 2], [1, 0, 1], False, 0),
    ("smooth2d", "smooth", [2, 2, 7, 6], [3, 2], [2, 2], [1, 1], True, 1.5),
    ("smoothmin2d", "smooth", [1, 3, 6, 6], [2, 2], [1, 2], [0, 1], True, -0.8),
]


def smooth2d(x, k, s, p, beta):
    n, c, h, w = x.shape
    xp = F.pad(x, (p[1], p[1], p[0], p[0]))  # padding cells read as 0
    cols = F.unfold(xp.reshape(n * c, 1, h + 2 * p[0], w + 2 * p[1]), k, stride=s)  # (n*c, kh*kw, L)
    oh = (h + 2 * p[0] - k[0]) // s[0] + 1
    ow = (w + 2 * p[1] - k[1]) // s[1] + 1
    y = torch.logsumexp(beta * cols, dim=1) / beta
    return y.reshape(n, c, oh, ow)


out = []
for name, kind, shape, k, s, p, cip, beta in cases:
    x = torch.randn(shape).float().double().requires_grad_()
    r = len(k)
    if kind == "max":
        f = [None, F.max_pool1d, F.max_pool2d, F.max_pool3d][r]
        y = f(x, k, s, p)
    elif kind == "avg":
        f = [None, F.avg_pool1d, F.avg_pool2d, F.avg_pool3d][r]
        y = f(x, k, s, p, count_include_pad=cip)
    else:
        y = smooth2d(x, k, s, p, beta)
    dy = torch.randn(y.shape).float().double()
    y.backward(dy)
    out.append({
        "name": name, "kind": kind, "shape": shape, "kernel": k, "stride": s, "padding": p,
        "count_include_pad": cip, "beta": beta,
        "x": x.detach().flatten().tolist(), "dy": dy.flatten().tolist(), "y_shape": list(y.shape),
        "y": y.detach().flatten().tolist(), "dx": x.grad.flatten().tolist(),
    })
print(json.dumps({"torch": torch.__version__, "cases": out}))
