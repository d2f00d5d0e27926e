#!/bin/bash
# cpu-torch-sum.sh: ops.Sum of 2^24 float32 on the CPU device against PyTorch's torch.sum on the
# same machine, interleaved in one run (target: >= 1.0x PyTorch at its best thread count), with a
# parallel memcpy as the memory-bandwidth reference. PyTorch is Debian's python3-torch
# (/usr/bin/python3), timed with torch.set_num_threads(t) for each t from 1 to the thread count
# Go uses (GOMAXPROCS, or the number of CPUs). From the repository root:
#
#   bash internal/bench/cpu-torch-sum.sh [rounds]      # default 5 rounds, each every side
#
# Each round runs, one after the other: torch.sum at each thread count and torch's copy_ at the
# most threads, ops' BenchmarkReduce/sum/cpu (ops.Sum) and cpu's BenchmarkSumBandwidth/copy (a
# Parallel copy between buffers allocated once), each as SAMPLES (default 10) samples of the mean
# time of 20 calls (after a warm-up). The table gives, over all samples of all rounds, the median
# and the best sample (the one least disturbed by other work on the machine), per call; ratio is
# PyTorch's time over ours (>= 1: ours is as fast or faster); GB/s counts the bytes read (4n for a
# sum) and read plus written (8n for a copy). On a machine that other work shares, both sides can
# be given the same larger share of the CPUs with `nice -n -20 bash internal/bench/cpu-torch-sum.sh`.
set -euo pipefail
py=/usr/bin/python3
rounds=${1:-5}
samples=${SAMPLES:-10}
for v in "$rounds" "$samples"; do
  case $v in
    '' | *[!0-9]* | 0) echo "cpu-torch-sum: rounds and SAMPLES must be positive numbers, not '$v'" >&2; exit 2;;
  esac
done
threads=${GOMAXPROCS:-$(nproc)}
n=$((1 << 24))

if ! "$py" -c 'import torch' 2>/dev/null; then
  echo "cpu-torch-sum: $py has no torch: apt-get install python3-torch" >&2
  exit 2
fi

work=$(mktemp -d /tmp/cpu-torch-sum.XXXXXX)
trap 'rm -rf "$work"' EXIT
go test -c -o "$work/ops.test" ./ops
go test -c -o "$work/cpu.test" ./cpu
cat > "$work/torch_sum.py" <<'EOF'
import sys, time
import torch
n, threads, samples, calls = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), 20
x = torch.rand(n)
y = torch.empty(n)
def sample(name, f):
    for _ in range(5):
        f()
    for _ in range(samples):
        t = time.perf_counter()
        for _ in range(calls):
            f()
        print(f"{name} {(time.perf_counter() - t) / calls * 1e3:.4f}")
for t in range(1, threads + 1):
    torch.set_num_threads(t)
    sample(f"sum-{t}", lambda: x.sum())
sample("copy", lambda: y.copy_(x))
EOF

# gobench BINARY PATTERN: ms per call, one line per sample, of the one benchmark PATTERN selects.
gobench() {
  GOMAXPROCS=$threads TORCHLEAN_BENCH_DEVICES=cpu "$1" -test.run XXX -test.bench "$2" -test.benchtime 20x \
    -test.count "$samples" | awk '/ns\/op/ {for (i = 1; i < NF; i++) if ($(i+1) == "ns/op") printf "%.4f\n", $i / 1e6}'
}
median() { sort -g "$1" | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
best() { sort -g "$1" | head -1; }

names="ours memcpy torch-copy"
for t in $(seq "$threads"); do names="$names torch-sum-$t"; done
echo "cpu-torch-sum: $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), Go threads $threads," \
  "torch $("$py" -c 'import torch; print(torch.__version__)'), n = 2^24, $rounds rounds of $samples samples"
for r in $(seq "$rounds"); do
  "$py" "$work/torch_sum.py" "$n" "$threads" "$samples" > "$work/torch"
  for t in $(seq "$threads"); do
    awk -v k="sum-$t" '$1 == k {print $2}' "$work/torch" > "$work/round-torch-sum-$t"
  done
  awk '$1 == "copy" {print $2}' "$work/torch" > "$work/round-torch-copy"
  gobench "$work/ops.test" 'Reduce$/^sum$/^cpu$' > "$work/round-ours"
  gobench "$work/cpu.test" 'SumBandwidth$/^copy/' > "$work/round-memcpy"
  line="   round $r (load average $(cut -d' ' -f1-3 /proc/loadavg)), medians in ms:"
  for f in $names; do
    if [ "$(grep -c . "$work/round-$f")" != "$samples" ]; then
      echo "cpu-torch-sum: $f: $(grep -c . "$work/round-$f") samples, not $samples" >&2
      exit 1
    fi
    cat "$work/round-$f" >> "$work/$f"
    line="$line $f $(median "$work/round-$f")"
  done
  echo "$line"
done

# row NAME FILE BYTES: median and best ms per call, GB/s at each, and the ratios to ours.
row() {
  awk -v name="$1" -v med="$(median "$2")" -v bst="$(best "$2")" -v bytes="$3" \
    -v omed="$(median "$work/ours")" -v obst="$(best "$work/ours")" -v ratio="${4:-}" 'BEGIN {
    r1 = ratio ? sprintf("%.2f", med / omed) : ""
    r2 = ratio ? sprintf("%.2f", bst / obst) : ""
    printf "%-30s %8.3f %6.1f %7s   %8.3f %6.1f %7s\n", name, med, bytes / med / 1e6, r1, bst, bytes / bst / 1e6, r2
  }'
}
printf '%-30s %8s %6s %7s   %8s %6s %7s\n' "" "median" "GB/s" "ratio" "best" "GB/s" "ratio"
row "ours: ops.Sum" "$work/ours" $((4 * n))
for t in $(seq "$threads"); do
  row "torch.sum, $t threads" "$work/torch-sum-$t" $((4 * n)) 1
done
row "memcpy: Go Parallel copy" "$work/memcpy" $((8 * n))
row "memcpy: torch copy_, $threads threads" "$work/torch-copy" $((8 * n))
tmed=$(for t in $(seq "$threads"); do median "$work/torch-sum-$t"; done | sort -g | head -1)
tbst=$(for t in $(seq "$threads"); do best "$work/torch-sum-$t"; done | sort -g | head -1)
awk -v omed="$(median "$work/ours")" -v obst="$(best "$work/ours")" -v tmed="$tmed" -v tbst="$tbst" \
  -v mmed="$(median "$work/memcpy")" -v mbst="$(best "$work/memcpy")" 'BEGIN {
  r = tmed / omed
  printf "ours vs torch.sum at its best thread count: %.2fx by medians, %.2fx by best samples (target >= 1.00) %s\n",
    r, tbst / obst, (r >= 1 ? "PASS" : "MISS")
  printf "ours / Go memcpy time: %.2f by medians, %.2f by best samples (the copy moves twice the bytes the sum reads)\n",
    omed / mmed, obst / mbst
}'
