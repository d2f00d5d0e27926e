#!/usr/bin/env python3
"""PyTorch/NCCL all-reduce baseline for BenchmarkAllReduce (ops/collective_bench_test.go).

Spawns one process per local GPU (torch.multiprocessing), joins them with
init_process_group("nccl") over a localhost TCP port, and times dist.all_reduce (SUM, in place)
of float32 buffers of each size, the sizes of the Go benchmark (1, 16 and 256 MiB per rank).
Every buffer is zeros, as in the Go benchmark (the cost does not depend on the values).

Timing: after --warmup all-reduces and a barrier, --reps back-to-back all-reduces, each between a
pair of CUDA events on the rank's current stream; a rank's figure is the median of its reps, the
group's the largest rank median (the slowest rank bounds a collective). Bandwidths follow NCCL's
convention (as nccl-tests and the Go benchmark): algbw = bytes / time (1e9 bytes per GB), busbw =
algbw * 2*(n-1)/n for n ranks.

Prints one JSON object to stdout (rank 0): {"ranks": n, "nccl": version, "device": name,
"sizes": {"1MiB": {"bytes", "ms", "algbw_GBps", "busbw_GBps"}, ...}}; --out FILE writes it to
FILE too. With fewer than 2 GPUs it says so on stderr, prints {"skipped": reason} and exits 0.

  python3 internal/bench/torch_allreduce.py [--sizes 1,16,256] [--reps 20] [--warmup 5]
                                            [--port 0] [--out FILE]

Compare with `go test ./ops -run XXX -bench 'AllReduce/fast' ...`: ours busGB/s / busbw_GBps
(same size) >= 0.9 at 256 MiB is issue 28's target.
"""

import argparse
import json
import os
import socket
import statistics
import sys


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="1,16,256",
                   help="comma list of buffer sizes per rank in MiB (default 1,16,256)")
    p.add_argument("--reps", type=int, default=20, help="timed all-reduces per size (default 20)")
    p.add_argument("--warmup", type=int, default=5, help="untimed all-reduces per size (default 5)")
    p.add_argument("--port", type=int, default=0,
                   help="localhost TCP port of the rendezvous (default 0: a free one)")
    p.add_argument("--out", help="also write the JSON object to this file")
    a = p.parse_args(argv)
    try:
        a.sizes = [int(s) for s in a.sizes.split(",") if s.strip()]
    except ValueError:
        p.error("--sizes: want a comma list of whole MiB, got %r" % a.sizes)
    if not a.sizes or any(s <= 0 for s in a.sizes):
        p.error("--sizes: want positive sizes, got %r" % a.sizes)
    if a.reps < 1 or a.warmup < 0:
        p.error("--reps must be >= 1 and --warmup >= 0")
    if not 0 <= a.port < 65536:
        p.error("--port: %d is not a TCP port" % a.port)
    return a


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def emit(obj, out):
    text = json.dumps(obj, indent=1, sort_keys=True)
    print(text)
    if out:
        with open(out, "w") as f:
            f.write(text + "\n")


def worker(rank, world, port, args):
    import torch
    import torch.distributed as dist

    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", init_method="tcp://127.0.0.1:%d" % port,
                            rank=rank, world_size=world)
    dev = torch.device("cuda", rank)
    rows = {}
    for mib in args.sizes:
        nbytes = mib << 20
        x = torch.zeros(nbytes // 4, dtype=torch.float32, device=dev)
        for _ in range(args.warmup):
            dist.all_reduce(x)
        torch.cuda.synchronize(dev)
        dist.barrier()
        events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                  for _ in range(args.reps)]
        for start, end in events:
            start.record()
            dist.all_reduce(x)
            end.record()
        torch.cuda.synchronize(dev)
        med = statistics.median(s.elapsed_time(e) for s, e in events)  # ms
        slowest = torch.tensor([med], dtype=torch.float64, device=dev)
        dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
        ms = slowest.item()
        algbw = nbytes / (ms / 1e3) / 1e9
        rows["%dMiB" % mib] = {"bytes": nbytes, "ms": ms, "algbw_GBps": algbw,
                               "busbw_GBps": algbw * 2 * (world - 1) / world}
        del x
    if rank == 0:
        v = torch.cuda.nccl.version()
        emit({"ranks": world, "nccl": ".".join(map(str, v)) if isinstance(v, tuple) else str(v),
              "device": torch.cuda.get_device_name(dev), "torch": torch.__version__,
              "sizes": rows}, args.out)
    dist.barrier()
    dist.destroy_process_group()


def main(argv=None):
    args = parse_args(argv)
    import torch

    n = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if n < 2:
        reason = "fewer than 2 GPUs (found %d): the all-reduce baseline needs at least 2" % n
        print("torch_allreduce: " + reason, file=sys.stderr)
        emit({"skipped": reason}, args.out)
        return 0
    if not torch.distributed.is_available() or not torch.distributed.is_nccl_available():
        print("torch_allreduce: this PyTorch has no NCCL backend", file=sys.stderr)
        return 1
    port = args.port or free_port()
    print("torch_allreduce: %d ranks, rendezvous on 127.0.0.1:%d, sizes %s MiB"
          % (n, port, args.sizes), file=sys.stderr)
    os.environ.setdefault("NCCL_DEBUG", "WARN")
    torch.multiprocessing.spawn(worker, args=(n, port, args), nprocs=n, join=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
