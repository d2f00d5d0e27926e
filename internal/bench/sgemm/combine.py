#!/usr/bin/env python3
"""Merges sgemm bench output and torch_sgemm.py output into one table (ratios vs PyTorch)."""
import re
import sys

line = re.compile(r"^(BENCH|TORCH) shape=(\S+)(?: kernel=(\S+))? ms=(\S+) tflops=(\S+)")
ours, torch_ = {}, {}
for path in sys.argv[1:]:
    for l in open(path):
        mt = line.match(l.strip())
        if not mt:
            continue
        kind, shape, kernel, ms, tf = mt.groups()
        if kind == "TORCH":
            torch_[shape] = (float(ms), float(tf))
        else:
            ours.setdefault(shape, []).append((kernel, float(ms), float(tf)))
print(f"{'shape':<18} {'torch ms':>9} {'TFLOP/s':>8} | {'ours ms':>9} {'TFLOP/s':>8} {'ratio':>6} | best tile (nn)")
for shape, rows in ours.items():
    t = torch_.get(shape, (float("nan"), float("nan")))
    auto = next(r for r in rows if "(auto" in r[0])
    best = max(rows, key=lambda r: r[2])
    print(f"{shape:<18} {t[0]:>9.4f} {t[1]:>8.2f} | {auto[1]:>9.4f} {auto[2]:>8.2f} {auto[2] / t[1]:>6.2f} |"
          f" {best[0]} {best[2]:.2f} ({best[2] / t[1]:.2f}x)")
