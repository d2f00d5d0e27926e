#!/usr/bin/env python3
"""Compare the Go benchmarks with the PyTorch and C baselines of the same run; print a table.

  python3 internal/bench/compare.py --go $OUT/gpu-tests.log --torch torch.json \
      --c launch.json [--c launch_cold.json] [--coldstart coldstart.out]

--go      go test -bench output (a .gpu/<pkg>.out or the runner's whole gpu-tests.log)
--torch   JSON from torch_bench.py: {op: {"ms", "gbps"}, "dispatch": {"ns"}, "_meta": {...}}
--c       JSON from launch.c (may repeat; a run with jit_cache "disabled" is the cold start)
--coldstart  output of the TestFirstKernelLatency run (lines mentioning first/ms are echoed)

Ratios are ours/theirs (> 1 = we are faster). Missing rows print n/a. Always exits 0.

Besides the elementwise, reduction, kernel, dispatch and training-step rows, one section per
family of issues 24-26, each Go row paired with torch_bench.py's row of the same key (the Go
name without "Benchmark<Family>/" and the path tag) and the target of
shared/reference/performance-targets.md (PASS/MISS; "-"/info where the issue sets none):
  conv       BenchmarkConvTiles/<layer>/<op>/tile (direct shown beside), BenchmarkConvShapes/...;
             geometric means over ResNet-18's 11 layers per op (verdict only when all 11 paired)
  pooling    BenchmarkPoolCUDA/...                 attention  BenchmarkFlashAttention/...
  scan       BenchmarkSelectiveScan/...: GB/s against the HBM copy bandwidth (the roofline)
  fft        BenchmarkFFTTier/<op>/<shape>/<exact|cufft> and BenchmarkRfft/... vs torch.fft
  spectral   BenchmarkSpectralConvCUDA/...         steps      BenchmarkFNOStep, BenchmarkCNNStepCUDA
"""
import argparse
import json
import math
import re
import statistics
import sys

ELEMENTWISE = ["add", "mul", "axpy", "scale", "relu", "relu_bwd", "exp", "tanh", "sigmoid",
               "gelu", "gelu_bwd", "sqrt"]
REDUCE = ["sum", "mean"]
EW_TARGET = 0.95       # elementwise >= 0.95x PyTorch
EW_COPY_TARGET = 0.85  # elementwise >= 85% of the copy bandwidth (PyTorch clone, same run)
RED_TARGET = 1.0       # sum/mean >= 1.0x PyTorch
DISPATCH_TARGET = 1.25  # Go <= 1.25x C
CPU_MEMCPY_TARGET = 0.8  # CPU elementwise >= 0.8x memcpy bandwidth
TRAIN_TARGETS = {"mlp_784_512_512_10_b128_adamw": 3.0}  # training step >= 3x PyTorch eager

# BenchmarkName[-P]  iterations  value ns/op  [value unit]...
RESULT = re.compile(r"^\s*(\d+)\s+([0-9.eE+-]+) ns/op(.*)$")
NAME_RESULT = re.compile(r"^(Benchmark\S+)\s+(\d+)\s+([0-9.eE+-]+) ns/op(.*)$")
BARE_NAME = re.compile(r"^(Benchmark\S+)\s*$")
PROCS = re.compile(r"-\d+$")


def strip_procs(name):
    # the -P suffix go test appends (absent when GOMAXPROCS=1); n=123 has no dash, so it stays
    return PROCS.sub("", name)


def parse_metrics(rest):
    out = {}
    toks = rest.split()
    for i in range(0, len(toks) - 1, 2):
        try:
            out[toks[i + 1]] = float(toks[i])
        except ValueError:
            pass
    return out


def parse_go(path):
    """name (without -P) -> {"ns": median ns/op, metric: median value, "count": runs}."""
    runs = {}
    try:
        lines = open(path, errors="replace").read().splitlines()
    except OSError as ex:
        print("compare: cannot read Go output %s: %s" % (path, ex.strerror), file=sys.stderr)
        return {}
    pending = None  # a bare name line whose results follow on a later line (-test.v + logging)
    for line in lines:
        m = NAME_RESULT.match(line)
        if m:
            name, rest = m.group(1), m.group(4)
            ns = float(m.group(3))
        else:
            b = BARE_NAME.match(line)
            if b:
                pending = b.group(1)
                continue
            r = RESULT.match(line)
            if not (r and pending):
                continue
            name, ns, rest = pending, float(r.group(2)), r.group(3)
        pending = None
        rec = {"ns": ns}
        rec.update(parse_metrics(rest))
        runs.setdefault(strip_procs(name), []).append(rec)
    res = {}
    for name, recs in runs.items():
        keys = set().union(*recs)
        res[name] = {k: statistics.median(r[k] for r in recs if k in r) for k in keys}
        res[name]["count"] = len(recs)
    return res


def load_json(path):
    if not path:
        return {}
    try:
        with open(path) as f:
            text = f.read().strip()
        # tolerate extra lines: take the last line that parses as a JSON object
        for line in [text] + text.splitlines()[::-1]:
            try:
                v = json.loads(line)
                if isinstance(v, dict):
                    return v
            except ValueError:
                continue
    except OSError as ex:
        print("compare: cannot read %s: %s" % (path, ex.strerror), file=sys.stderr)
    return {}


def load_json_lines(path):
    """Every line of path that parses as a JSON object (none when path is empty or missing)."""
    out = []
    try:
        with open(path) as f:
            for line in f:
                try:
                    v = json.loads(line)
                except ValueError:
                    continue
                if isinstance(v, dict):
                    out.append(v)
    except OSError:
        pass
    return out


def fmt(v, spec="%.1f"):
    return "n/a" if v is None else spec % v


def ratio(a, b):
    if a is None or b is None or b == 0:
        return None
    return a / b


def verdict(r, target, higher_better=True):
    if target is None:
        return "info"
    if r is None:
        return "n/a"
    ok = r >= target if higher_better else r <= target
    return "PASS" if ok else "MISS"


def gbps_of(rec, bytes_per_op=None):
    """GB/s from the custom metric, or from ns/op when bytes_per_op is known."""
    if not rec:
        return None
    if "GB/s" in rec:
        return rec["GB/s"]
    if bytes_per_op and rec.get("ns"):
        return bytes_per_op / rec["ns"]
    return None


def rows_for(go, family, op, dev):
    """{n: record} for Benchmark<family>/<op>/<dev>/n=<n>."""
    pre = "Benchmark%s/%s/%s/n=" % (family, op, dev)
    out = {}
    for name, rec in go.items():
        if name.startswith(pre):
            try:
                out[int(name[len(pre):])] = rec
            except ValueError:
                pass
    return out


def pick(rows, n):
    """The row at size n if present, else the largest size; returns (n, record)."""
    if not rows:
        return None, None
    if n in rows:
        return n, rows[n]
    m = max(rows)
    return m, rows[m]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--go", required=True)
    ap.add_argument("--torch", default="")
    ap.add_argument("--c", action="append", default=[])
    ap.add_argument("--coldstart", default="")
    ap.add_argument("--dispatch-c", default="", help="JSON lines of launch.c, interleaved with --dispatch-go")
    ap.add_argument("--dispatch-go", default="", help="BenchmarkDispatch/cuda runs interleaved with --dispatch-c")
    args = ap.parse_args()

    go = parse_go(args.go)
    torch = load_json(args.torch)
    meta = torch.get("_meta", {})
    cs = [load_json(p) for p in args.c]
    c_warm = next((c for c in cs if "c_launch_ns" in c), {})
    c_cold = next((c for c in cs if c.get("jit_cache") == "disabled"), {})
    n = meta.get("n", 1 << 26)

    out = []
    p = out.append
    dev_name = meta.get("device") or c_warm.get("device") or "?"
    p("== bench table: %s, torch %s, n=%d; ratio = ours/torch (>1 = we are faster)"
      % (dev_name, meta.get("torch", "n/a"), n))
    if meta.get("error"):
        p("   torch_bench: %s" % meta["error"])
    copy_gbps = (torch.get("copy") or {}).get("gbps")
    p("%-9s %9s %9s %7s %7s %5s  %6s %5s" % ("op", "ours GB/s", "torch", "ratio", "target", "",
                                            "%copy", ""))
    n_pass = n_miss = 0
    mismatch = set()
    for fam, ops, target in (("Elementwise", ELEMENTWISE, EW_TARGET), ("Reduce", REDUCE, RED_TARGET)):
        for op in ops:
            gn, rec = pick(rows_for(go, fam, op, "cuda"), n)
            if gn is not None and gn != n:
                mismatch.add(gn)
            ours = gbps_of(rec)
            theirs = (torch.get(op) or {}).get("gbps")
            r = ratio(ours, theirs)
            v = verdict(r, target)
            n_pass += v == "PASS"
            n_miss += v == "MISS"
            line = "%-9s %9s %9s %7s %7s %5s" % (op, fmt(ours), fmt(theirs), fmt(r, "%.3f"),
                                                ">=%.2f" % target, v)
            if fam == "Elementwise":
                rc = ratio(ours, copy_gbps)
                line += "  %6s %5s" % (fmt(rc * 100 if rc is not None else None, "%.0f%%"),
                                       verdict(rc, EW_COPY_TARGET))
            p(line)
    if copy_gbps is not None:
        p("(torch copy %.1f GB/s; %%copy target >= %.0f%%)" % (copy_gbps, EW_COPY_TARGET * 100))
    if mismatch:
        p("note: Go GPU rows at n=%s, torch at n=%d" % (",".join(map(str, sorted(mismatch))), n))

    # dispatch: the interleaved rounds when there are some (medians of each side), else the
    # single passes of the test run and of launch.c
    go_ns = (go.get("BenchmarkDispatch/cuda") or {}).get("ns")
    c_ns = c_warm.get("c_launch_ns")
    rounds = ""
    il = parse_go(args.dispatch_go) if args.dispatch_go else {}
    il_go = il.get("BenchmarkDispatch/cuda")
    il_sync = il.get("BenchmarkDispatch/cuda-sync")
    il_c = [c["c_launch_ns"] for c in load_json_lines(args.dispatch_c) if "c_launch_ns" in c]
    if il_go and il_c:
        go_ns, c_ns = il_go["ns"], statistics.median(il_c)
        rounds = " (median of %d interleaved rounds each)" % min(il_go["count"], len(il_c))
    t_ns = (torch.get("dispatch") or {}).get("ns")
    go_c = ratio(go_ns, c_ns)
    p("dispatch: Go %s ns/op, C %s ns/launch, C/Go %s, Go/C %s (target <= %.2f) %s%s"
      % (fmt(go_ns), fmt(c_ns), fmt(ratio(c_ns, go_ns), "%.3f"), fmt(go_c, "%.3f"),
         DISPATCH_TARGET, verdict(go_c, DISPATCH_TARGET, higher_better=False), rounds))
    if il_sync and il_c:
        p("dispatch without the launch queue (cuda-sync): Go %s ns/op, Go/C %s"
          % (fmt(il_sync["ns"]), fmt(ratio(il_sync["ns"], c_ns), "%.3f")))
    extra = []
    if c_warm.get("c_launch_stream_ns") is not None:
        extra.append("C on own stream %.1f ns" % c_warm["c_launch_stream_ns"])
    cpu_disp = (go.get("BenchmarkDispatch/cpu") or {}).get("ns")
    if cpu_disp is not None:
        extra.append("Go cpu %.1f ns/op" % cpu_disp)
    p("          torch eager %s ns/op, Go speed-up vs torch %s%s"
      % (fmt(t_ns), fmt(ratio(t_ns, go_ns), "%.2fx"), ("; " + ", ".join(extra)) if extra else ""))

    # CPU rows
    mem_n, mem = pick(_memcpy_rows(go), None)
    mem_gbps = gbps_of(mem, 8.0 * mem_n if mem_n else None)
    cpu_lines = []
    for fam, ops in (("Elementwise", ELEMENTWISE), ("Reduce", REDUCE)):
        for op in ops:
            rows = rows_for(go, fam, op, "cpu")
            if not rows:
                continue
            cn, rec = pick(rows, mem_n)
            g = gbps_of(rec)
            r = ratio(g, mem_gbps)
            cpu_lines.append("%-9s n=%-9d %8s %7s %5s" % (op, cn, fmt(g), fmt(r, "%.3f"),
                                                         verdict(r, CPU_MEMCPY_TARGET)
                                                         if fam == "Elementwise" else ""))
    if cpu_lines or mem is not None:
        p("cpu: memcpy %s GB/s%s; ratio = cpu/memcpy, target >= %.2f (elementwise)"
          % (fmt(mem_gbps), " (n=%d)" % mem_n if mem_n else "", CPU_MEMCPY_TARGET))
        out.extend(cpu_lines or ["cpu: no BenchmarkElementwise/*/cpu rows"])

    # start-up
    cold = []
    if c_cold:
        cold.append("C cold %s ms" % fmt(c_cold.get("c_first_kernel_ms"), "%.0f"))
    if c_warm:
        cold.append("C %s %s ms" % ("cold" if c_warm.get("jit_cache") == "disabled" else "warm-cache",
                                    fmt(c_warm.get("c_first_kernel_ms"), "%.0f")))
    for c in cs:
        if c.get("error"):
            p("C launch: error: %s" % str(c["error"])[:150])
    if cold:
        p("first kernel (from main, incl. JIT): " + ", ".join(cold))
    if args.coldstart:
        try:
            lines = open(args.coldstart, errors="replace").read().splitlines()
        except OSError:
            lines = []
        keep = [l.strip() for l in lines
                if re.search(r"first|latency|wall|\bms\b|--- (PASS|FAIL|SKIP)", l, re.I)
                and not l.startswith("=== RUN")]
        for l in keep[:6]:
            p("go cold start: " + l[:150])

    # kernel families: time ratios against the PyTorch rows of the same name
    kt = torch.get("kernels") or {}
    if kt:
        p("%-48s %10s %10s %7s %7s %5s" % ("kernel (cuda)", "ours ms", "torch ms", "ratio", "target", ""))
        for name, t in kt.items():
            rec = go.get("BenchmarkKernels/%s/cuda" % name)
            ours = rec["ns"] / 1e6 if rec and rec.get("ns") else None
            r = ratio(t.get("ms"), ours)
            target = t.get("target", 1.0)
            v = verdict(r, target)
            n_pass += v == "PASS"
            n_miss += v == "MISS"
            p("%-48s %10s %10s %7s %7s %5s" % (name, fmt(ours, "%.4f"), fmt(t.get("ms"), "%.4f"),
                                               fmt(r, "%.3f"), "-" if target is None else ">=%.2f" % target, v))

    # end-to-end training steps: wall ms per step, ratios against PyTorch eager
    st = torch.get("train_steps") or {}
    if isinstance(st, dict) and "error" not in st:
        p("%-48s %10s %10s %7s %7s %5s" % ("train step (cuda)", "ours ms", "torch ms", "ratio", "target", ""))
        for name, t in st.items():
            rec = go.get("BenchmarkTrainStep/%s/cuda" % name)
            ours = rec["ns"] / 1e6 if rec and rec.get("ns") else None
            r = ratio(t.get("ms"), ours)
            target = TRAIN_TARGETS.get(name, 1.0)
            v = verdict(r, target)
            n_pass += v == "PASS"
            n_miss += v == "MISS"
            p("%-48s %10s %10s %7s %7s %5s" % (name, fmt(ours, "%.4f"), fmt(t.get("ms"), "%.4f"),
                                               fmt(r, "%.3f"), ">=%.2f" % target, v))

    # the families of issues 24-26, each against its PyTorch rows (new_sections)
    tally = Tally()
    new_sections(go, torch, p, tally)

    # the FFT's two tiers on the GPU (ops BenchmarkFFTTier/<op>/<shape>/<cufft|exact>): the ratio
    # exact/cufft > 1 means cuFFT is faster; a row where it is < 1 belongs in ops.cufftSlower.
    # cu/ex is the target's ratio: our exact rfft >= 0.9x cuFFT's R2C for n <= 8192.
    tiers = sorted({k.rsplit("/", 1)[0] for k in go if k.startswith("BenchmarkFFTTier/")})
    if tiers:
        p("%-48s %10s %10s %7s %7s %7s %5s" % ("fft tier (cuda)", "cufft ms", "exact ms", "ex/cu", "cu/ex", "target", ""))
        for row in tiers:
            cu, ex = (go.get(row + "/cufft") or {}).get("ns"), (go.get(row + "/exact") or {}).get("ns")
            name = row[len("BenchmarkFFTTier/"):]
            m = re.match(r"^rfft/\d+x(\d+)$", name)
            target = CUFFT_EXACT_TARGET if m and int(m.group(1)) <= 8192 else None
            v = tally.add("fft tier", verdict(ratio(cu, ex), target)) if target else ""
            p("%-48s %10s %10s %7s %7s %7s %5s" % (name, fmt(cu and cu / 1e6, "%.4f"), fmt(ex and ex / 1e6, "%.4f"),
                                                  fmt(ratio(ex, cu), "%.3f"), fmt(ratio(cu, ex), "%.3f"),
                                                  ">=%.2f" % target if target else "-", v))
    fam_pass, fam_miss = tally.total()
    n_pass += fam_pass
    n_miss += fam_miss

    # anything else the Go run benchmarked on the GPU, briefly
    known = re.compile(r"^Benchmark(Elementwise|Reduce|Dispatch|Memcpy|Kernels|TrainStep|FFTTier|"
                       + NEW_FAMILIES + r")(/|$)")
    others = sorted(k for k in go if not known.match(k))
    for k in others[:15]:
        rec = go[k]
        ms = ", ".join("%g %s" % (v, u) for u, v in sorted(rec.items()) if u not in ("ns", "count"))
        p("other: %s %s ns/op%s" % (k, fmt(rec.get("ns"), "%.0f"), (" " + ms) if ms else ""))
    if len(others) > 15:
        p("other: ... %d more" % (len(others) - 15))

    p("summary: GPU throughput %d PASS, %d MISS; dispatch %s; %d Go benchmark rows parsed"
      % (n_pass, n_miss, verdict(go_c, DISPATCH_TARGET, higher_better=False), len(go)))
    if tally.fams:
        p("summary by family (PASS/MISS): " + ", ".join("%s %d/%d" % (f, c[0], c[1]) for f, c in tally.fams.items()))
    print("\n".join(out))
    return 0


# ---- the families of issues 24-26: conv, pool, attention, scan, fft, spectral, steps ----

ROW = "%-48s %10s %10s %7s %7s %5s"
CONV_FWD_TARGET, CONV_BWD_TARGET = 0.8, 0.7  # ResNet-18 layers (geometric mean) and N64 C64 56x56 K64
DEPTHWISE_TARGET = 1.5
POOL_TARGET = 1.5
ATTN_TARGET = 1.0  # forward and forward+backward, the three shapes
ATTN_SHAPES = ("8x16x1024x64/", "4x16x4096x64/", "8x8x1024x128/")
SCAN_TARGETS = {"fwd": 0.5, "bwd": 0.3}  # fractions of the HBM roofline
RFFT_TARGETS = {"rfft": 1.0, "irfft": 1.5}  # ours vs torch.fft
CUFFT_EXACT_TARGET = 0.9  # exact rfft >= 0.9x cuFFT's R2C, n <= 8192
SPECTRAL_TARGETS = {"forward": 2.0, "forward+backward": 1.5}
STEP_ROWS = [  # torch key, Go row, target
    ("fno1d/eager", "BenchmarkFNOStep", 2.0),
    ("fno1d/compile", "BenchmarkFNOStep", 1.0),
    ("cnn/eager", "BenchmarkCNNStepCUDA", 2.0),
]
RESNET18_LAYERS = 11
NEW_FAMILIES = r"ConvTiles|ConvShapes|PoolCUDA|FlashAttention|SelectiveScan|Rfft|SpectralConvCUDA|FNOStep|CNNStepCUDA"


def go_ms(go, name):
    rec = go.get(name)
    return rec["ns"] / 1e6 if rec and rec.get("ns") else None


def torch_family(torch, key):
    """(rows, error): the family's rows {key: row} (keys starting with "_" left out), or {} and
    the family's error when it failed or is absent."""
    fam = torch.get(key)
    if not isinstance(fam, dict):
        return {}, "absent"
    if "error" in fam and not isinstance(fam["error"], dict):
        return {}, str(fam["error"])[:120]
    return {k: v for k, v in fam.items() if not k.startswith("_") and isinstance(v, dict)}, None


def keys_of(trows, go, patterns):
    """The torch keys in their order, then the keys of Go rows matching patterns (regexps whose
    group 1 is the key) that torch lacks, sorted."""
    keys = list(trows)
    extra = set()
    for pat in patterns:
        rx = re.compile(pat)
        for name in go:
            m = rx.match(name)
            if m and m.group(1) not in trows:
                extra.add(m.group(1))
    return keys + sorted(extra)


class Tally:
    """PASS/MISS counts per family, in the order first seen."""

    def __init__(self):
        self.fams = {}

    def add(self, fam, v):
        c = self.fams.setdefault(fam, [0, 0])
        c[0] += v == "PASS"
        c[1] += v == "MISS"
        return v

    def total(self):
        return sum(c[0] for c in self.fams.values()), sum(c[1] for c in self.fams.values())


def row_line(label, ours, theirs, target, v, extra=""):
    line = ROW % (label[:48], fmt(ours, "%.4f"), fmt(theirs, "%.4f"), fmt(ratio(theirs, ours), "%.3f"),
                  "-" if target is None else ">=%.2f" % target, v)
    return line + ("  " + extra if extra else "")


def geomean(rs):
    rs = [r for r in rs if r]
    return math.exp(sum(math.log(r) for r in rs) / len(rs)) if rs else None


def family_header(p, title, trows, err):
    p(ROW % (title, "ours ms", "torch ms", "ratio", "target", ""))
    if err:
        p("   torch rows: %s" % err)
    shapes = sorted({t["shape"] for t in trows.values() if t.get("shape")})
    notes = sorted({t["note"] for t in trows.values() if t.get("note")})
    for s in (shapes if len(shapes) <= 2 else []) + notes:
        p("   torch: %s" % s)


def section_conv(go, torch, p, tally):
    trows, err = torch_family(torch, "conv")
    keys = keys_of(trows, go, [r"^BenchmarkConvTiles/(.+)/tile$", r"^BenchmarkConvShapes/(.+)$"])
    if not keys:
        return
    family_header(p, "conv (cuda; torch cuDNN fp32, TF32 off)", trows, err)
    ratios = {"fwd": [], "bwd_input": [], "bwd_weight": []}
    for key in keys:
        op = key.rsplit("/", 1)[-1]
        theirs = (trows.get(key) or {}).get("ms")
        shapes = key.startswith(("depthwise1d/", "conv3d/"))
        if shapes:
            ours, extra = go_ms(go, "BenchmarkConvShapes/" + key), ""
            target = DEPTHWISE_TARGET if key.startswith("depthwise1d/") else None
        else:
            ours = go_ms(go, "BenchmarkConvTiles/%s/tile" % key)
            direct = go_ms(go, "BenchmarkConvTiles/%s/direct" % key)
            extra = "direct %s ms" % fmt(direct, "%.4f") if direct is not None else ""
            target = None
            if key.startswith("c64x64/56x56/k3/s1/"):
                target = CONV_FWD_TARGET if op == "fwd" else CONV_BWD_TARGET
            if op in ratios:
                ratios[op].append(ratio(theirs, ours))
        p(row_line(key, ours, theirs, target, tally.add("conv", verdict(ratio(theirs, ours), target)), extra))
    for op, rs in ratios.items():
        if not rs:
            continue
        have = [r for r in rs if r is not None]
        g = geomean(have)
        target = CONV_FWD_TARGET if op == "fwd" else CONV_BWD_TARGET
        v = verdict(g, target) if len(have) == RESNET18_LAYERS else "n/a"
        label = "geomean ResNet-18 %s (%d of %d layers)" % (op, len(have), RESNET18_LAYERS)
        p(ROW % (label, "", "", fmt(g, "%.3f"), ">=%.2f" % target, tally.add("conv", v)))


def simple_section(go, torch, p, tally, fam, title, go_prefix, target_of):
    """A family whose Go rows are go_prefix + key, one to one."""
    trows, err = torch_family(torch, fam)
    keys = keys_of(trows, go, ["^" + re.escape(go_prefix) + "(.+)$"])
    if not keys:
        return
    family_header(p, title, trows, err)
    for key in keys:
        ours = go_ms(go, go_prefix + key)
        theirs = (trows.get(key) or {}).get("ms")
        target = target_of(key)
        p(row_line(key, ours, theirs, target, tally.add(fam, verdict(ratio(theirs, ours), target))))


def section_scan(go, torch, p, tally):
    trows, err = torch_family(torch, "scan")
    keys = keys_of(trows, go, [r"^BenchmarkSelectiveScan/(.+)$"])
    if not keys:
        return
    copy = ((torch.get("scan") or {}).get("_hbm_copy") or {}).get("gbps") if isinstance(torch.get("scan"), dict) else None
    src = "torch clone in the scan family"
    if copy is None:
        copy, src = (torch.get("copy") or {}).get("gbps"), "torch elementwise copy"
    hdr = "%-48s %10s %10s %7s %8s %6s %7s %5s"
    p(hdr % ("selective scan (cuda)", "ours ms", "loop ms", "ratio", "GB/s", "%hbm", "target", ""))
    if err:
        p("   torch rows: %s" % err)
    p("   roofline: HBM copy %s GB/s (%s); ratio vs the PyTorch loop is informational"
      % (fmt(copy), src if copy is not None else "not measured"))
    for key in keys:
        rec = go.get("BenchmarkSelectiveScan/" + key)
        ours = rec["ns"] / 1e6 if rec and rec.get("ns") else None
        gbps = rec["MB/s"] / 1e3 if rec and "MB/s" in rec else None
        theirs = (trows.get(key) or {}).get("ms")
        frac = ratio(gbps, copy)
        target = SCAN_TARGETS.get(key.split("/", 1)[0])
        v = tally.add("scan", verdict(frac, target))
        p(hdr % (key[:48], fmt(ours, "%.4f"), fmt(theirs, "%.4f"), fmt(ratio(theirs, ours), "%.3f"), fmt(gbps),
                 fmt(frac * 100 if frac is not None else None, "%.0f%%"),
                 "-" if target is None else ">=%.0f%%" % (target * 100), v))


def section_fft(go, torch, p, tally):
    trows, err = torch_family(torch, "fft")
    keys = keys_of(trows, go, [r"^BenchmarkFFTTier/(.+)/(?:exact|cufft)$", r"^BenchmarkRfft/(.+)$"])
    if not keys:
        return
    family_header(p, "fft vs torch.fft (cuda)", trows, err)
    for key in keys:
        theirs = (trows.get(key) or {}).get("ms")
        target = RFFT_TARGETS.get(key.split("/", 1)[0])
        sources = [("BenchmarkFFTTier/%s/exact" % key, " exact", target),
                   ("BenchmarkFFTTier/%s/cufft" % key, " cufft", None),
                   ("BenchmarkRfft/%s" % key, "", target)]
        present = [s for s in sources if s[0] in go] or [(None, "", target)]
        for name, tag, tgt in present:
            ours = go_ms(go, name) if name else None
            p(row_line(key + tag, ours, theirs, tgt, tally.add("fft", verdict(ratio(theirs, ours), tgt))))


def section_steps(go, torch, p, tally):
    trows, err = torch_family(torch, "steps")
    fixed = [k for k, _, _ in STEP_ROWS]
    keys = fixed + [k for k in trows if k not in fixed]
    if not trows and not any(g in go for _, g, _ in STEP_ROWS):
        return
    family_header(p, "training step (cuda, wall ms per step)", {}, err)
    for key in keys:
        gname, target = next(((g, t) for k, g, t in STEP_ROWS if k == key), (None, None))
        t = trows.get(key) or {}
        ours = go_ms(go, gname) if gname else None
        extra = "(%s)" % t["shape"] if t.get("shape") else ""
        if t.get("error"):
            extra = "torch: %s" % str(t["error"])[:60]
        p(row_line(key, ours, t.get("ms"), target, tally.add("steps", verdict(ratio(t.get("ms"), ours), target)), extra))


def new_sections(go, torch, p, tally):
    meta = torch.get("_meta", {})
    if meta.get("quick") or meta.get("device_type") == "cpu":
        p("note: torch_bench ran with --quick/--device %s: test shapes, not a baseline" % meta.get("device_type", "?"))
    sections = [
        ("conv", lambda: section_conv(go, torch, p, tally)),
        ("pool", lambda: simple_section(go, torch, p, tally, "pool", "pooling (cuda)", "BenchmarkPoolCUDA/",
                                        lambda k: POOL_TARGET)),
        ("attention", lambda: simple_section(go, torch, p, tally, "attention", "attention fp32 (cuda)",
                                             "BenchmarkFlashAttention/",
                                             lambda k: ATTN_TARGET if k.startswith(ATTN_SHAPES) else None)),
        ("scan", lambda: section_scan(go, torch, p, tally)),
        ("fft", lambda: section_fft(go, torch, p, tally)),
        ("spectral", lambda: simple_section(go, torch, p, tally, "spectral", "spectral conv vs rfft-einsum-irfft",
                                            "BenchmarkSpectralConvCUDA/", lambda k: SPECTRAL_TARGETS.get(k))),
        ("steps", lambda: section_steps(go, torch, p, tally)),
    ]
    for name, run in sections:
        try:
            run()
        except Exception as ex:  # one section failing must not lose the table
            p("compare: %s section failed: %r" % (name, ex))


def _memcpy_rows(go):
    """{n: record} for BenchmarkMemcpy/cpu/n=<n> (also accepts BenchmarkMemcpy/n=<n>)."""
    rows = {}
    for pre in ("BenchmarkMemcpy/cpu/n=", "BenchmarkMemcpy/n="):
        for name, rec in go.items():
            if name.startswith(pre):
                try:
                    rows[int(name[len(pre):])] = rec
                except ValueError:
                    pass
    return rows


if __name__ == "__main__":
    try:
        main()
    except Exception as ex:  # never fail the GPU check because of the table
        print("compare: internal error: %r" % (ex,))
    sys.exit(0)
