# torch_conv.py writes torch_conv.json: PyTorch 1.13 CPU values and gradients of convolutions
# and transposed convolutions (float64 computation on float32-representable inputs, so the file
# holds the exact mathematical results to float64 precision), read by TestConvAgainstTorch.
#   /usr/bin/python3 autograd/testdata/torch_conv.py > autograd/testdata/torch_conv.json
import json
import torch

torch.manual_seed(0)
cases = [
    # (name, transposed, batch, cin, cout, in, k, stride, padding, dilation, groups, output_padding)
    ("conv1d", False, 2, 3, 4, [11], [3], [2], [1], [1], 1, [0]),
    ("conv1d_depthwise_dil", False, 1, 4, 4, [9], [3], [1], [2], [2], 4, [0]),
    ("conv2d", False, 2, 3, 5, [7, 6], [3, 3], [1, 2], [1, 0], [1, 1], 1, [0, 0]),
    ("conv2d_groups", False, 1, 4, 6, [8, 7], [2, 3], [3, 1], [2, 1], [2, 1], 2, [0, 0]),
    ("conv3d", False, 1, 2, 3, [4, 5, 3], [2, 3, 2], [1, 2, 1], [1, 1, 0], [1, 1, 1], 1, [0, 0, 0]),
    ("conv_transpose1d", True, 2, 3, 2, [5], [3], [2], [1], [1], 1, [1]),
    ("conv_transpose2d", True, 1, 4, 6, [4, 3], [3, 2], [2, 3], [1, 0], [1, 2], 2, [1, 2]),
]
out = []
for name, tr, n, cin, cout, ins, k, s, p, d, g, op in cases:
    x = torch.randn([n, cin] + ins).float().double().requires_grad_()
    wshape = ([cin, cout // g] if tr else [cout, cin // g]) + k
    w = torch.randn(wshape).float().double().requires_grad_()
    b = torch.randn(cout).float().double().requires_grad_()
    r = len(ins)
    if tr:
        f = [None, torch.nn.functional.conv_transpose1d, torch.nn.functional.conv_transpose2d, torch.nn.functional.conv_transpose3d][r]
        y = f(x, w, b, stride=s, padding=p, output_padding=op, groups=g, dilation=d)
    else:
        f = [None, torch.nn.functional.conv1d, torch.nn.functional.conv2d, torch.nn.functional.conv3d][r]
        y = f(x, w, b, stride=s, padding=p, dilation=d, groups=g)
    dy = torch.randn(y.shape).float().double()
    y.backward(dy)
    out.append({
        "name": name, "transposed": tr, "batch": n, "cin": cin, "cout": cout, "input": ins, "kernel": k,
        "stride": s, "padding": p, "dilation": d, "groups": g, "output_padding": op,
        "x": x.detach().flatten().tolist(), "w": w.detach().flatten().tolist(), "b": b.detach().tolist(),
        "dy": dy.flatten().tolist(), "y_shape": list(y.shape), "y": y.detach().flatten().tolist(),
        "dx": x.grad.flatten().tolist(), "dw": w.grad.flatten().tolist(), "db": b.grad.tolist(),
    })
print(json.dumps({"torch": torch.__version__, "cases": out}))
