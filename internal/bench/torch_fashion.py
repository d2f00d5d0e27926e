#!/usr/bin/env python3
"""PyTorch CPU baseline of examples/fashionmnist (one thread by default).

The example's training in PyTorch: the MLP 784-256-10 (nn.Linear, ReLU, nn.Linear; PyTorch's
default initialization), cross-entropy, plain SGD whose learning rate decays linearly to 0 over
the training (step t of T runs at lr * (1 - t/T), set before the step), minibatches of a fresh
random permutation each epoch (the last one short), the loss of every step read back to the host
(loss.item(), as the example records it for its plot), and the test accuracy after every epoch
(argmax of the logits, in chunks of 1,000 images, without gradients). Data: the IDX files of
examples/fashionmnist/subset (the embedded subset: 10,000 training and 2,000 test images) or
--data DIR, pixels scaled to [0, 1].

It prints the lines the Go example prints for the same run, in particular

  test accuracy: NN.N%
  training time: 3.9s (20 epochs of 157 steps)

where the training time, as in the example, runs from just before the first epoch to just after
the last epoch's evaluation (loading the data, building the model and plotting are outside), and
a last line "torch_fashion: seconds S cpu C" with the time in full precision and the CPU time of
the same interval (C near S: one thread busy; near 2S: two), for scripts.

  /usr/bin/python3 internal/bench/torch_fashion.py [--threads 1] [--blas-threads N] [--epochs 20]
  /usr/bin/python3 internal/bench/torch_fashion.py --model cnn    # the example's -model cnn

--model cnn is the example's CNN (cnn.go's newCNN: two 3x3 convolutions of 16 and 32 channels
with ReLU and 2x2 max pooling, Linear 1568-128, ReLU, Dropout 0.25, Linear 128-10) with its
defaults for the flags not given: 10 epochs, lr 0.05, SGD momentum 0.9; evaluation in eval mode.

One thread means one thread: --threads sets torch.set_num_threads and, before torch loads, the
OpenBLAS (and OpenMP, MKL) thread count, which torch.set_num_threads alone leaves at every CPU
(Debian's torch does its matrix products in OpenBLAS). --blas-threads 0 leaves OpenBLAS its
default, for comparison.
"""
import argparse
import gzip
import os
import struct
import sys
import time

torch = None  # imported in main, once the BLAS thread count is in the environment

HERE = os.path.dirname(os.path.abspath(__file__))
SUBSET = os.path.join(HERE, "..", "..", "examples", "fashionmnist", "subset")


def read_idx(path):
    """Reads an IDX file of unsigned bytes (gzip-compressed when it ends in .gz)."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    zero, kind, ndim = struct.unpack(">HBB", data[:4])
    if zero != 0 or kind != 0x08:
        raise ValueError("%s: not an IDX file of unsigned bytes" % path)
    dims = struct.unpack(">%dI" % ndim, data[4:4 + 4 * ndim])
    body = bytearray(data[4 + 4 * ndim:])
    return torch.frombuffer(body, dtype=torch.uint8).reshape(dims)


def load_split(directory, prefix):
    def path(name):
        p = os.path.join(directory, name)
        return p + ".gz" if os.path.exists(p + ".gz") else p
    images = read_idx(path(prefix + "-images-idx3-ubyte"))
    labels = read_idx(path(prefix + "-labels-idx1-ubyte"))
    x = images.reshape(images.shape[0], -1).to(torch.float32) / 255
    return x, labels.to(torch.int64)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=SUBSET, help="directory of the IDX files (default: the embedded subset)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--blas-threads", type=int, default=-1,
                    help="OpenBLAS threads (default: --threads; 0: OpenBLAS's own default, every CPU)")
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--model", choices=("mlp", "cnn"), default="mlp",
                    help="cnn: the example's -model cnn (its defaults for the flags not given)")
    ap.add_argument("--channels", default="16,32", help="cnn: the convolutions' widths")
    ap.add_argument("--dropout", type=float, default=0.25, help="cnn: dropout after the hidden layer")
    ap.add_argument("--momentum", type=float, default=None, help="SGD momentum (mlp 0, cnn 0.9)")
    given = {a.split("=")[0].lstrip("-").replace("-", "_") for a in sys.argv[1:] if a.startswith("--")}
    args = ap.parse_args()
    if args.model == "cnn":  # the example's -model cnn defaults, as there, for the flags not given
        for name, value in (("epochs", 10), ("hidden", 128), ("lr", 0.05), ("momentum", 0.9)):
            if name not in given:
                setattr(args, name, value)
    if args.momentum is None:
        args.momentum = 0.0
    # torch.set_num_threads does not reach the OpenBLAS that Debian's torch calls for its matrix
    # products: that one reads its thread count from the environment when it loads, and left
    # alone it runs on every CPU (2 here, at about twice the CPU time of 1 thread).
    blas = args.threads if args.blas_threads < 0 else args.blas_threads
    if blas > 0:
        for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[var] = str(blas)
    global torch
    import torch as torch_module
    torch = torch_module
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)

    xtrain, ytrain = load_split(args.data, "train")
    xtest, ytest = load_split(args.data, "t10k")
    print("device: cpu (torch %s, %d threads, OpenBLAS threads: %s)" % (
        torch.__version__, torch.get_num_threads(), os.environ.get("OPENBLAS_NUM_THREADS", "default")))
    print("data: %s: %d training and %d test images of %d pixels" % (
        args.data, len(ytrain), len(ytest), xtrain.shape[1]))
    if args.model == "cnn":  # examples/fashionmnist/cnn.go's newCNN
        side = int(round(xtrain.shape[1] ** 0.5))
        layers, c, h = [torch.nn.Unflatten(1, (1, side, side))], 1, side
        for w in (int(v) for v in args.channels.split(",")):
            layers += [torch.nn.Conv2d(c, w, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2)]
            c, h = w, h // 2
        layers += [torch.nn.Flatten(), torch.nn.Linear(c * h * h, args.hidden), torch.nn.ReLU()]
        if args.dropout > 0:
            layers.append(torch.nn.Dropout(args.dropout))
        model = torch.nn.Sequential(*layers, torch.nn.Linear(args.hidden, 10))
    else:
        model = torch.nn.Sequential(torch.nn.Linear(xtrain.shape[1], args.hidden), torch.nn.ReLU(),
                                    torch.nn.Linear(args.hidden, 10))
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    n = len(ytrain)
    steps = (n + args.batch - 1) // args.batch
    total = args.epochs * steps
    gen = torch.Generator().manual_seed(args.seed)
    losses = []

    def accuracy():
        correct = 0
        model.eval()
        with torch.no_grad():
            for lo in range(0, len(ytest), 1000):
                pred = model(xtest[lo:lo + 1000]).argmax(dim=1)
                correct += int((pred == ytest[lo:lo + 1000]).sum())
        model.train()
        return correct / len(ytest)

    start, cpu_start = time.perf_counter(), time.process_time()
    acc = 0.0
    for epoch in range(1, args.epochs + 1):
        perm = torch.randperm(n, generator=gen)
        total_loss = 0.0
        for s in range(steps):
            idx = perm[s * args.batch:(s + 1) * args.batch]
            frac = ((epoch - 1) * steps + s) / total
            for g in opt.param_groups:
                g["lr"] = args.lr * (1 - frac)
            x, y = xtrain[idx], ytrain[idx]
            loss = torch.nn.functional.cross_entropy(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            l = loss.item()
            losses.append(l)
            total_loss += l
        acc = accuracy()
        print("epoch %d/%d  loss %.4f  test accuracy %.1f%%  (%.1fs)" % (
            epoch, args.epochs, total_loss / steps, 100 * acc, time.perf_counter() - start))
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
    print("test accuracy: %.1f%%" % (100 * acc))
    print("training time: %.1fs (%d epochs of %d steps)" % (seconds, args.epochs, steps))
    print("torch_fashion: seconds %.4f cpu %.4f" % (seconds, cpu_seconds))


if __name__ == "__main__":
    main()
