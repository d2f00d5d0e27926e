# nn_torch.py writes nn_torch.json and mlp_torch.safetensors, the PyTorch side of the nn
# package's tests (module_test.go): a small model ported as a new user would, its weights given
# to Go through safetensors, and the values and gradients PyTorch computes. Run from this folder
# with PyTorch (1.13 here):
#
#   python3 nn_torch.py
#
# When mlp_go.safetensors exists (written by `go test ./autograd/nn -run TestWeightsToTorch
# -update`), it is loaded into the same PyTorch model and the logits it gives are recorded too,
# so the Go test checks that PyTorch reads the weights Go wrote.
import json, os, struct
import torch
import torch.nn as nn

torch.manual_seed(0)
torch.backends.cudnn.deterministic = True

def save_safetensors(path, tensors):
    header, data, off = {}, b"", 0
    for k in sorted(tensors):
        t = tensors[k].detach().contiguous().float()
        raw = t.numpy().tobytes()
        header[k] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [off, off + len(raw)]}
        data += raw
        off += len(raw)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + data)

def load_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for k, v in header.items():
        if k == "__metadata__":
            continue
        a, b = v["data_offsets"]
        out[k] = torch.frombuffer(bytearray(data[a:b]), dtype=torch.float32).reshape(v["shape"])
    return out

def flat(t):
    return [float(v) for v in t.detach().reshape(-1)]

out = {}
model = nn.Sequential(nn.Linear(5, 7), nn.ReLU(), nn.Linear(7, 3))
save_safetensors("mlp_torch.safetensors", model.state_dict())
x = torch.randn(4, 5)
labels = torch.tensor([0, 2, 1, 2])
out["x"] = flat(x)
out["labels"] = labels.tolist()
logits = model(x)
loss = nn.functional.cross_entropy(logits, labels)
loss.backward()
out["logits"] = flat(logits)
out["loss"] = float(loss)
out["grads"] = {k: flat(p.grad) for k, p in model.named_parameters()}

# Five SGD steps (momentum 0.9) on the same batch: the losses.
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
losses = []
for _ in range(5):
    opt.zero_grad()
    l = nn.functional.cross_entropy(model(x), labels)
    l.backward()
    opt.step()
    losses.append(float(l))
out["sgd_losses"] = losses

def norm_case(name, layer, x, affine_params):
    for p in affine_params:
        with torch.no_grad():
            p.copy_(torch.randn_like(p))
    x = x.clone().requires_grad_(True)
    y = layer(x)
    r = torch.randn_like(y)
    (y * r).sum().backward()
    out[name] = {"x": flat(x), "shape": list(x.shape), "r": flat(r), "y": flat(y), "dx": flat(x.grad),
                 "params": [flat(p) for p in affine_params], "dparams": [flat(p.grad) for p in affine_params]}

ln = nn.LayerNorm(6)
norm_case("layer_norm", ln, torch.randn(3, 6), [ln.weight, ln.bias])
gn = nn.GroupNorm(2, 4)
norm_case("group_norm", gn, torch.randn(2, 4, 3), [gn.weight, gn.bias])

class RMSNorm(nn.Module):  # torch.nn.RMSNorm (PyTorch 2.4) with eps=None, written out for 1.13
    def __init__(self, d):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
    def forward(self, x):
        eps = torch.finfo(x.dtype).eps
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * self.weight
rms = RMSNorm(6)
norm_case("rms_norm", rms, torch.randn(3, 6), [rms.weight])

if os.path.exists("mlp_go.safetensors"):
    m2 = nn.Sequential(nn.Linear(5, 7), nn.ReLU(), nn.Linear(7, 3))
    m2.load_state_dict(load_safetensors("mlp_go.safetensors"), strict=True)
    out["go_file_logits"] = flat(m2(x))

with open("nn_torch.json", "w") as f:
    json.dump(out, f, indent=1)
