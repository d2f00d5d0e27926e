#!/usr/bin/env python3
"""The model benchmark suite's table (issue 27, item 5): the Go rows
BenchmarkModelStep/<model>/{eager,graph} from a benchmark log (examples/*/modelbench_test.go)
next to internal/bench/torch_models.py's JSON, with the ratios against the issue's targets.

  python3 internal/bench/models_table.py --go models-go.log --torch models-torch.json [--markdown]
  python3 internal/bench/models_table.py --go models-go.log --torch a.json --torch compile.json

Columns, in ms per training step (the median where the log has several runs of a row):
ours eager, ours graph (captured: "yes", or "no" when the capture refused the step or the
device cannot capture, and the row timed eager steps), PyTorch eager, PyTorch's step captured
with torch.cuda.graph, torch.compile reduce-overhead and max-autotune ("-" where skipped or
failed: the notes below the table say why). Ratios are PyTorch's ms over ours (above 1: ours
is faster), of our graph row:

  /eager    against PyTorch eager: target >= 1.2 (the MLP rows: >= 20)
  /graph    against PyTorch's torch.cuda.graph step (the MLP rows' target: >= 2)
  /best     against the fastest of PyTorch's captured and compiled steps: target >= 1.0

A target is marked "ok" when met, "MISS" when not, "?" when a side is missing.
"""
import argparse
import json
import re
import statistics
import sys

ORDER = ["mlp", "mlp512", "cnn", "gpt", "gpt_small", "fno", "ssm", "ssm_small"]
MLP_ROWS = ("mlp", "mlp512")
ROW = re.compile(r"^BenchmarkModelStep/([A-Za-z0-9_]+)/(eager|graph)(?:-\d+)?\s+\d+\s+([0-9.e+]+) ns/op(.*)$")
CAPTURED = re.compile(r"([0-9.]+) captured")
REFUSED = re.compile(r"^\s+stepbench\.go:\d+: ([A-Za-z0-9_]+): not captured: (.*)$")


def read_go(path):
    """{model: {"eager": [ms...], "graph": [ms...], "captured": [0/1...], "why": str}}"""
    rows = {}
    with open(path, errors="replace") as f:
        for line in f:
            m = ROW.match(line.rstrip("\n"))
            if m:
                model, variant, ns, rest = m.group(1), m.group(2), float(m.group(3)), m.group(4)
                r = rows.setdefault(model, {"eager": [], "graph": [], "captured": [], "why": ""})
                r[variant].append(ns / 1e6)
                c = CAPTURED.search(rest)
                if variant == "graph" and c:
                    r["captured"].append(float(c.group(1)))
                continue
            m = REFUSED.match(line.rstrip("\n"))
            if m:
                r = rows.setdefault(m.group(1), {"eager": [], "graph": [], "captured": [], "why": ""})
                r["why"] = r["why"] or m.group(2)
    return rows


def median(xs):
    return statistics.median(xs) if xs else None


def torch_ms(row):
    if isinstance(row, dict) and isinstance(row.get("ms"), (int, float)):
        return float(row["ms"])
    return None


def ratio(theirs, ours):
    if theirs is None or ours is None or ours <= 0:
        return None
    return theirs / ours


def fmt_ms(x):
    if x is None:
        return "-"
    return "%.3f" % x if x < 100 else "%.1f" % x


def fmt_ratio(r, target):
    if r is None:
        return "-" if target is None else "? (>=%g)" % target
    s = "%.2fx" % r
    if target is not None:
        s += " %s" % ("ok" if r >= target else "MISS")
    return s


def build(go, tj):
    models = (tj or {}).get("models", {})
    names = [m for m in ORDER if m in go or m in models] + sorted((set(go) | set(models)) - set(ORDER))
    table, notes = [], []
    for name in names:
        g = go.get(name, {})
        t = models.get(name, {})
        ours_e, ours_g = median(g.get("eager", [])), median(g.get("graph", []))
        caps = g.get("captured", [])
        cap = "?" if not caps else ("yes" if min(caps) >= 1 else "no")
        te, tg = torch_ms(t.get("eager")), torch_ms(t.get("graph"))
        cro, cma = torch_ms(t.get("compile_ro")), torch_ms(t.get("compile_ma"))
        best = min([x for x in (tg, cro, cma) if x is not None], default=None)
        mlp = name in MLP_ROWS
        table.append({
            "model": name, "ours_eager": ours_e, "ours_graph": ours_g, "captured": cap,
            "torch_eager": te, "torch_graph": tg, "compile_ro": cro, "compile_ma": cma,
            "eager_vs_eager": ratio(te, ours_e),
            "vs_eager": ratio(te, ours_g), "vs_eager_target": 20.0 if mlp else 1.2,
            "vs_graph": ratio(tg, ours_g), "vs_graph_target": 2.0 if mlp else None,
            "vs_best": ratio(best, ours_g), "vs_best_target": 1.0,
            "shape": t.get("shape", ""),
        })
        if cap == "no" and g.get("why"):
            notes.append((name, "ours not captured (the graph row times eager steps): " + g["why"][:300]))
        for v in ("eager", "graph", "compile_ro", "compile_ma"):
            row = t.get(v)
            if not isinstance(row, dict):
                continue
            why = row.get("skipped") or row.get("error")
            if why:
                notes.append((name, "PyTorch %s %s: %s" % (v, "skipped" if row.get("skipped") else "failed", why[:300])))
            elif row.get("note") and v == "graph":
                notes.append((name, "PyTorch graph: " + row["note"][:300]))
        if not g:
            notes.append((name, "no Go row in the log"))
        if not t:
            notes.append((name, "no PyTorch row in the JSON"))
    return table, group(notes)


def group(notes):
    """The notes as lines, the models sharing a note named together, in first-seen order."""
    by = {}
    for name, text in notes:
        by.setdefault(text, []).append(name)
    return ["%s: %s" % (", ".join(names), text) for text, names in by.items()]


HEAD = ["model", "ours eager", "ours graph", "cap", "torch eager", "torch graph", "compile-ro", "compile-ma",
        "eager/eager", "/eager", "/graph", "/best"]


def cells(r):
    return [r["model"], fmt_ms(r["ours_eager"]), fmt_ms(r["ours_graph"]), r["captured"],
            fmt_ms(r["torch_eager"]), fmt_ms(r["torch_graph"]), fmt_ms(r["compile_ro"]), fmt_ms(r["compile_ma"]),
            fmt_ratio(r["eager_vs_eager"], None), fmt_ratio(r["vs_eager"], r["vs_eager_target"]),
            fmt_ratio(r["vs_graph"], r["vs_graph_target"]), fmt_ratio(r["vs_best"], r["vs_best_target"])]


def render(table, notes, meta, markdown):
    out = []
    dev = meta.get("device", "?")
    out.append("Model training steps on %s (PyTorch %s, CUDA %s, TF32 off): ms per step; ratios are PyTorch's "
               "ms over ours, of our graph row (eager/eager: our eager row)" % (dev, meta.get("torch", "?"), meta.get("cuda") or "-"))
    if meta.get("quick"):
        out.append("(PyTorch ran with --quick: shrunk models and few steps, a test of the scripts, not a baseline)")
    rows = [cells(r) for r in table]
    if markdown:
        out.append("")
        out.append("| " + " | ".join(HEAD) + " |")
        out.append("|" + "|".join("---" if i == 0 else "---:" for i in range(len(HEAD))) + "|")
        for c in rows:
            out.append("| " + " | ".join(c) + " |")
    else:
        widths = [max(len(h), *(len(c[i]) for c in rows)) if rows else len(h) for i, h in enumerate(HEAD)]
        line = lambda c: "  ".join(x.ljust(widths[i]) if i == 0 else x.rjust(widths[i]) for i, x in enumerate(c))
        out.append(line(HEAD))
        for c in rows:
            out.append(line(c))
    out.append("")
    out.append("targets: /eager >= 1.2 (MLP rows >= 20), /graph >= 2 (MLP rows), /best >= 1.0")
    for r in table:
        if r["shape"]:
            out.append("  %-10s %s" % (r["model"], r["shape"]))
    if notes:
        out.append("notes:")
        out.extend("  " + n for n in notes)
    return "\n".join(out)


def merge(a, b):
    """torch_models.py's JSON b merged into a: b's rows replace a's, except that a row without a
    time does not replace one with a time; the first file's _meta is kept."""
    if not a:
        return b
    models = a.setdefault("models", {})
    for name, rows in b.get("models", {}).items():
        dst = models.setdefault(name, {})
        for key, row in rows.items():
            if key in dst and torch_ms(dst[key]) is not None and torch_ms(row) is None:
                continue
            dst[key] = row
    return a


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--go", required=True, help="a Go benchmark log with BenchmarkModelStep rows")
    ap.add_argument("--torch", action="append", default=[],
                    help="torch_models.py's JSON (absent: the Go columns only); repeated: merged, a row "
                         "with a time replacing one without (runs split by --only or --variants)")
    ap.add_argument("--markdown", action="store_true", help="a Markdown table (BENCHMARKS.md)")
    ap.add_argument("--json", default="", help="also write the table's rows as JSON to this file")
    args = ap.parse_args()
    try:
        go = read_go(args.go)
    except OSError as ex:
        print("models_table: %s" % ex, file=sys.stderr)
        return 1
    tj = {}
    for path in args.torch:
        try:
            with open(path) as f:
                tj = merge(tj, json.load(f))
        except (OSError, ValueError) as ex:
            print("models_table: %s: %s (its PyTorch rows are missing)" % (path, ex), file=sys.stderr)
    table, notes = build(go, tj)
    if not table:
        print("models_table: no BenchmarkModelStep rows in %s and no models in the JSON" % args.go, file=sys.stderr)
        return 1
    print(render(table, notes, tj.get("_meta", {}), args.markdown))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"meta": tj.get("_meta", {}), "rows": table, "notes": notes}, f)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
