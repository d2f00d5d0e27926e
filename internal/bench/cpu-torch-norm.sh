#!/bin/bash
# cpu-torch-norm.sh: ops.LayerNormFwd on the CPU device against PyTorch's
# torch.nn.functional.layer_norm on this machine's CPU, interleaved in one run (target: >= 1.0x
# PyTorch at its better thread count). PyTorch is Debian's python3-torch (/usr/bin/python3), run
# with 1 and with 2 threads (torch.set_num_threads; the better of the two is the baseline); Go runs
# with GOMAXPROCS as set (default: every CPU). From the repository root:
#
#   bash internal/bench/cpu-torch-norm.sh [rounds] [rows] [cols]   # default 5 rounds, 4096 x 1024
#
# Each round times, in alternating order, the Go side and PyTorch at 1 and 2 threads: each the
# median of 60 calls after 10 warm-up calls, on the same uniform random input kind, gamma and
# beta, eps 1e-6, outputs allocated by each call (PyTorch's caching allocator and the CPU
# backend's cache reuse them). The table gives each round's figures and ratio, then the median and
# the best (least) over the rounds of each side's figures with their ratios, PyTorch (better of 1
# and 2 threads) / ours, > 1 meaning we are faster; the target applies to the ratio of the medians.
set -euo pipefail
py=/usr/bin/python3
rounds=${1:-5}
rows=${2:-4096}
cols=${3:-1024}
for v in "$rounds" "$rows" "$cols"; do
  case $v in
    '' | *[!0-9]* | 0) echo "cpu-torch-norm: rounds, rows and cols must be positive numbers, not '$v'" >&2; exit 2;;
  esac
done
if ! "$py" -c 'import torch' 2>/dev/null; then
  echo "cpu-torch-norm: $py has no torch: apt-get install python3-torch" >&2
  exit 2
fi

# The Go program lives in a temporary directory inside the module (so that it imports ops); the
# leading underscore keeps it out of ./... patterns while it exists.
work=$(mktemp -d /tmp/cpu-torch-norm.XXXXXX)
gosrc=$(mktemp -d "$PWD/internal/bench/_cpu-torch-norm.XXXXXX")
trap 'rm -rf "$work" "$gosrc"' EXIT
cat > "$gosrc/main.go" <<'EOF'
package main

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/torchlean-go/torchlean/ops"
)

func main() {
	rows, _ := strconv.Atoi(os.Args[1])
	cols, _ := strconv.Atoi(os.Args[2])
	d := ops.CPU()
	must := func(b *ops.Buffer, err error) *ops.Buffer {
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return b
	}
	x := must(ops.RandUniform(d, rows*cols, 1))
	gamma := must(ops.RandUniform(d, cols, 2))
	beta := must(ops.RandUniform(d, cols, 3))
	run := func() {
		o, m, s, err := ops.LayerNormFwd(x, gamma, beta, rows, cols, 1e-6)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		ops.ReleaseThen(nil, o, m, s)
	}
	for range 10 {
		run()
	}
	var ts []float64
	for range 60 {
		t := time.Now()
		run()
		ts = append(ts, time.Since(t).Seconds()*1e3)
	}
	slices.Sort(ts)
	fmt.Printf("%.4f\n", (ts[29]+ts[30])/2)
}
EOF
go build -o "$work/norm" "$gosrc/main.go"
cat > "$work/torch_norm.py" <<'EOF'
import statistics, sys, time
import torch
rows, cols, threads = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
torch.set_num_threads(threads)
torch.manual_seed(1)
x, gamma, beta = torch.rand(rows, cols), torch.rand(cols), torch.rand(cols)
f = torch.nn.functional.layer_norm
with torch.no_grad():
    for _ in range(10):
        f(x, (cols,), gamma, beta, 1e-6)
    ts = []
    for _ in range(60):
        t = time.perf_counter()
        f(x, (cols,), gamma, beta, 1e-6)
        ts.append((time.perf_counter() - t) * 1e3)
print(f"{statistics.median(ts):.4f}")
EOF

echo "cpu-torch-norm: layer norm forward ${rows}x${cols}, $(nproc) CPUs, Go GOMAXPROCS=${GOMAXPROCS:-$(nproc)}," \
  "torch $("$py" -c 'import torch; print(torch.__version__)'), $rounds rounds (ms per call, median of 60)"
printf '%-6s %10s %10s %10s %7s\n' round ours torch-1t torch-2t ratio
for r in $(seq "$rounds"); do
  if [ $((r % 2)) = 1 ]; then
    g=$("$work/norm" "$rows" "$cols"); t1=$("$py" "$work/torch_norm.py" "$rows" "$cols" 1); t2=$("$py" "$work/torch_norm.py" "$rows" "$cols" 2)
  else
    t2=$("$py" "$work/torch_norm.py" "$rows" "$cols" 2); t1=$("$py" "$work/torch_norm.py" "$rows" "$cols" 1); g=$("$work/norm" "$rows" "$cols")
  fi
  awk -v r="$r" -v g="$g" -v t1="$t1" -v t2="$t2" 'BEGIN {
    printf "%-6s %10s %10s %10s %6.2fx\n", r, g, t1, t2, ((t1 < t2) ? t1 : t2) / g }'
  echo "$g" >> "$work/go"; echo "$t1" >> "$work/t1"; echo "$t2" >> "$work/t2"
done

# The summary: the median round of each side, and the best round of each side (the least
# disturbed by other load on the machine); the ratio takes PyTorch's better thread count.
median() { sort -g "$1" | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
best() { sort -g "$1" | head -1; }
summary() {
  awk -v what="$1" -v g="$2" -v t1="$3" -v t2="$4" 'BEGIN {
    b = (t1 < t2) ? t1 : t2
    printf "%-6s %10.4f %10.4f %10.4f %6.2fx  (PyTorch at %d threads / ours)\n", what, g, t1, t2, b / g, (t1 < t2) ? 1 : 2
  }'
}
summary median "$(median "$work/go")" "$(median "$work/t1")" "$(median "$work/t2")"
summary best "$(best "$work/go")" "$(best "$work/t1")" "$(best "$work/t2")"
awk -v g="$(median "$work/go")" -v t1="$(median "$work/t1")" -v t2="$(median "$work/t2")" 'BEGIN {
  r = ((t1 < t2) ? t1 : t2) / g
  printf "ratio of the medians %.2fx, target >= 1.00x: %s\n", r, (r >= 1) ? "PASS" : "MISS"
}'
