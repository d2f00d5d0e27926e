#!/bin/bash
# cpu-torch-conv.sh: ops.ConvND and its input and weight gradients on the CPU device against
# PyTorch's CPU conv2d (oneDNN) and its gradients (torch.nn.grad.conv2d_input/_weight) on this
# machine, in one sitting (target: >= 0.7x PyTorch at its better thread count). The problem is
# issue 26's N64 C64 56x56 K64 3x3 (padding 1), with the batch an argument (on a small shared
# machine use a smaller one). PyTorch is Debian's python3-torch (/usr/bin/python3) at 1 and 2
# threads; Go runs with GOMAXPROCS as set. From the repository root:
#
#   bash internal/bench/cpu-torch-conv.sh [rounds] [batch] [calls]   # default 3 rounds, batch 64, 5 calls
#
# Each round times the Go side and PyTorch at 1 and 2 threads (alternating order), each op the
# median of `calls` calls after 2 warm-ups; the summary gives the median over the rounds and the
# ratio PyTorch (better thread count) / ours per op, > 1 meaning we are faster.
set -euo pipefail
py=/usr/bin/python3
rounds=${1:-3}
batch=${2:-64}
calls=${3:-5}
for v in "$rounds" "$batch" "$calls"; do
  case $v in
    '' | *[!0-9]* | 0) echo "cpu-torch-conv: rounds, batch and calls must be positive numbers, not '$v'" >&2; exit 2;;
  esac
done
if ! "$py" -c 'import torch' 2>/dev/null; then
  echo "cpu-torch-conv: $py has no torch: apt-get install python3-torch" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /tmp/cpu-torch-conv.XXXXXX)
gosrc=$(mktemp -d "$PWD/internal/bench/_cpu-torch-conv.XXXXXX")
trap 'rm -rf "$work" "$gosrc"' EXIT
cat > "$gosrc/main.go" <<'GO'
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
	batch, _ := strconv.Atoi(os.Args[1])
	calls, _ := strconv.Atoi(os.Args[2])
	const c, hw, k = 64, 56, 64
	d := ops.CPU()
	must := func(b *ops.Buffer, err error) *ops.Buffer {
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return b
	}
	x := must(ops.RandNormal(d, batch*c*hw*hw, 0, 1, 1))
	w := must(ops.RandNormal(d, k*c*9, 0, 1, 2))
	dy := must(ops.RandNormal(d, batch*k*hw*hw, 0, 1, 3))
	dims := ops.ConvDims{Batch: batch, InChannels: c, OutChannels: k, Input: []int{hw, hw}, Kernel: []int{3, 3}}
	p := ops.ConvParams{Padding: []int{1}}
	for _, op := range []struct {
		name string
		f    func() (*ops.Buffer, error)
	}{
		{"fwd", func() (*ops.Buffer, error) { return ops.ConvND(x, w, nil, dims, p) }},
		{"bwd_input", func() (*ops.Buffer, error) { return ops.ConvNDBackwardInput(dy, w, dims, p) }},
		{"bwd_weight", func() (*ops.Buffer, error) { return ops.ConvNDBackwardWeight(x, dy, dims, p) }},
	} {
		var ts []float64
		for i := range calls + 2 {
			t := time.Now()
			must(op.f()).Release()
			if i >= 2 {
				ts = append(ts, time.Since(t).Seconds()*1e3)
			}
		}
		slices.Sort(ts)
		fmt.Printf("%s %.3f\n", op.name, ts[len(ts)/2])
	}
}
GO
go build -o "$work/conv" "$gosrc/main.go"
echo "cpu-torch-conv: conv2d N$batch C64 56x56 K64 3x3 pad 1, $(nproc) CPUs, Go GOMAXPROCS=${GOMAXPROCS:-$(nproc)}," \
  "torch $("$py" -c 'import torch; print(torch.__version__)'), $rounds rounds (ms per call, median of $calls)"
printf '%-6s %-11s %10s %10s %10s %7s\n' round op ours torch-1t torch-2t ratio
for r in $(seq "$rounds"); do
  if [ $((r % 2)) = 1 ]; then
    "$work/conv" "$batch" "$calls" > "$work/g"; "$py" "$here/cpu-torch-conv.py" "$batch" 64 56 64 1 "$calls" > "$work/t1"
    "$py" "$here/cpu-torch-conv.py" "$batch" 64 56 64 2 "$calls" > "$work/t2"
  else
    "$py" "$here/cpu-torch-conv.py" "$batch" 64 56 64 2 "$calls" > "$work/t2"
    "$py" "$here/cpu-torch-conv.py" "$batch" 64 56 64 1 "$calls" > "$work/t1"; "$work/conv" "$batch" "$calls" > "$work/g"
  fi
  paste "$work/g" "$work/t1" "$work/t2" | while read -r op g _ t1 _ t2; do
    awk -v r="$r" -v op="$op" -v g="$g" -v t1="$t1" -v t2="$t2" 'BEGIN {
      printf "%-6s %-11s %10s %10s %10s %6.2fx\n", r, op, g, t1, t2, ((t1 < t2) ? t1 : t2) / g }'
    echo "$g" >> "$work/go.$op"; echo "$t1" >> "$work/t1.$op"; echo "$t2" >> "$work/t2.$op"
  done
done
median() { sort -g "$1" | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
for op in fwd bwd_input bwd_weight; do
  awk -v op="$op" -v g="$(median "$work/go.$op")" -v t1="$(median "$work/t1.$op")" -v t2="$(median "$work/t2.$op")" 'BEGIN {
    b = (t1 < t2) ? t1 : t2; r = b / g
    printf "median %-11s %10.3f %10.3f %10.3f %6.2fx  target >= 0.70x: %s\n", op, g, t1, t2, r, (r >= 0.7) ? "PASS" : "MISS"
  }'
done
