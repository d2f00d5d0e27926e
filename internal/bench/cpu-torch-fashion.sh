#!/bin/bash
# cpu-torch-fashion.sh: examples/fashionmnist end to end against the same training in PyTorch on
# the CPU with one thread (internal/bench/torch_fashion.py: the MLP 784-256-10, cross-entropy,
# SGD with lr 0.1 decaying linearly to 0, batch 64, 20 epochs, the test accuracy after every
# epoch, the embedded subset of 10,000 training and 2,000 test images). Target: PyTorch's time /
# ours >= 1.2. From the repository root:
#
#   bash internal/bench/cpu-torch-fashion.sh [rounds]      # default 5 rounds
#
# The example is built once; each round runs, one after the other, PyTorch on 1 thread, PyTorch
# with torch.set_num_threads(1) alone (Debian's torch then still runs its matrix products in
# OpenBLAS on every CPU: for information), ours with the default GOMAXPROCS (every CPU) and ours
# with GOMAXPROCS=1 (for information). The times compared are the ones both programs print as
# "training time": from just before the first epoch to just after the last epoch's evaluation,
# so loading the data, building the model and the loss plot (-plot "": none) are outside. The
# table gives the median and the best of the rounds (on a machine that other jobs share, the best
# is the least disturbed figure) and PyTorch's time divided by ours for each.
set -euo pipefail
py=/usr/bin/python3
rounds=${1:-5}
case $rounds in
  '' | *[!0-9]* | 0) echo "cpu-torch-fashion: rounds must be a positive number, not '$rounds'" >&2; exit 2;;
esac
if ! "$py" -c 'import torch' 2>/dev/null; then
  echo "cpu-torch-fashion: $py has no torch: apt-get install python3-torch" >&2
  exit 2
fi
here=$(dirname "$0")
work=$(mktemp -d /tmp/cpu-torch-fashion.XXXXXX)
trap 'rm -rf "$work"' EXIT
go build -o "$work/fashionmnist" ./examples/fashionmnist

# seconds FILE: the "training time" of an output as seconds (Go prints e.g. 3.9s, 950ms or 1m2.1s).
seconds() {
  awk '/^training time:/ {
    t = $3; s = 0
    if (t ~ /^[0-9]+m[0-9.]+s$/) { i = index(t, "m"); s = 60 * substr(t, 1, i - 1); t = substr(t, i + 1) }
    if (t ~ /ms$/) s += substr(t, 1, length(t) - 2) / 1000
    else if (t ~ /s$/) s += substr(t, 1, length(t) - 1)
    print s; found = 1
  } END { if (!found) exit 1 }' "$1"
}
accuracy() { awk '/^test accuracy:/ {print $3}' "$1"; }

echo "cpu-torch-fashion: $(nproc) CPUs, torch $("$py" -c 'import torch; print(torch.__version__)'), $rounds rounds"
for r in $(seq "$rounds"); do
  "$py" "$here/torch_fashion.py" --threads 1 > "$work/torch.out"
  awk '/^torch_fashion: seconds/ {print $3}' "$work/torch.out" >> "$work/torch"
  "$py" "$here/torch_fashion.py" --threads 1 --blas-threads 0 > "$work/torchb.out"
  awk '/^torch_fashion: seconds/ {print $3}' "$work/torchb.out" >> "$work/torchb"
  "$work/fashionmnist" -data embedded -plot "" > "$work/go.out"
  seconds "$work/go.out" >> "$work/go"
  GOMAXPROCS=1 "$work/fashionmnist" -data embedded -plot "" > "$work/go1.out"
  seconds "$work/go1.out" >> "$work/go1"
  printf '   round %d: torch %.2fs (%s), torch+OpenBLAS default %.2fs, ours %.2fs (%s), ours GOMAXPROCS=1 %.2fs (%s)\n' \
    "$r" "$(tail -1 "$work/torch")" "$(accuracy "$work/torch.out")" "$(tail -1 "$work/torchb")" \
    "$(tail -1 "$work/go")" "$(accuracy "$work/go.out")" "$(tail -1 "$work/go1")" "$(accuracy "$work/go1.out")"
done

median() { sort -g "$1" | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
best() { sort -g "$1" | head -1; }
ratio() { awk -v t="$1" -v g="$2" 'BEGIN {printf "%.2f", t / g}'; }
t=$(median "$work/torch") tb=$(best "$work/torch")
o=$(median "$work/torchb") ob=$(best "$work/torchb")
g=$(median "$work/go") gb=$(best "$work/go")
g1=$(median "$work/go1") g1b=$(best "$work/go1")
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg) (other jobs on the machine slow every side)"
printf '%-36s %8s %8s %7s %7s\n' "fashionmnist, 20 epochs, seconds" median best "ratio" "(best)"
printf '%-36s %8.2f %8.2f\n' "PyTorch CPU, 1 thread" "$t" "$tb"
printf '%-36s %8.2f %8.2f   (set_num_threads(1) alone: OpenBLAS on %s CPUs)\n' "PyTorch, OpenBLAS default threads" "$o" "$ob" "$(nproc)"
printf '%-36s %8.2f %8.2f %7s %7s   (target >= 1.2)\n' "ours, GOMAXPROCS=$(nproc) (default)" "$g" "$gb" "$(ratio "$t" "$g")" "$(ratio "$tb" "$gb")"
printf '%-36s %8.2f %8.2f %7s %7s\n' "ours, GOMAXPROCS=1" "$g1" "$g1b" "$(ratio "$t" "$g1")" "$(ratio "$tb" "$g1b")"
printf 'ours (default) against PyTorch with OpenBLAS default threads: %s (median), %s (best)\n' \
  "$(ratio "$o" "$g")" "$(ratio "$ob" "$gb")"
