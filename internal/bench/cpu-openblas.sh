#!/bin/bash
# cpu-openblas.sh: the CPU SGEMM of package cpu (its default kernel) against OpenBLAS on this
# machine, interleaved in one run, at 1024^3 and 2048^3 (target: >= 0.7x OpenBLAS). OpenBLAS runs
# through Debian's python3-numpy with libopenblas0-pthread and as many threads as Go uses
# (GOMAXPROCS, or the number of CPUs); CPU_BLAS_INSTALL=1 lets the script apt-get install them
# (as root) when they are missing. From the repository root:
#
#   bash internal/bench/cpu-openblas.sh [rounds]      # default 3 rounds, each both sides
#
# Each round times numpy's float32 matmul (median of 5 calls after a warm-up) and the Go
# benchmark BenchmarkBmm (1 s) for each size; the table gives the median GFLOP/s over the rounds.
set -euo pipefail
py=/usr/bin/python3
rounds=${1:-3}
case $rounds in
  '' | *[!0-9]* | 0) echo "cpu-openblas: rounds must be a positive number, not '$rounds'" >&2; exit 2;;
esac
threads=${GOMAXPROCS:-$(nproc)}

if ! "$py" -c 'import numpy' 2>/dev/null; then
  if [ "${CPU_BLAS_INSTALL:-0}" = 1 ]; then
    apt-get install -y -q python3-numpy libopenblas0-pthread > /dev/null
  else
    echo "cpu-openblas: $py has no numpy: apt-get install python3-numpy libopenblas0-pthread" \
      "(or run with CPU_BLAS_INSTALL=1 as root)" >&2
    exit 2
  fi
fi
blas=$(readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3 2>/dev/null || true)
case $blas in
  *openblas*) ;;
  *) echo "cpu-openblas: libblas.so.3 is '$blas', not OpenBLAS (install libopenblas0-pthread)" >&2; exit 2;;
esac

work=$(mktemp -d /tmp/cpu-openblas.XXXXXX)
trap 'rm -rf "$work"' EXIT
go test -c -o "$work/cpu.test" ./cpu
cat > "$work/np.py" <<'EOF'
import statistics, sys, time
import numpy as np
n = int(sys.argv[1])
rng = np.random.default_rng(1)
a = rng.random((n, n), dtype=np.float32)
b = rng.random((n, n), dtype=np.float32)
c = np.empty((n, n), dtype=np.float32)
np.matmul(a, b, out=c)
times = []
for _ in range(5):
    t = time.perf_counter()
    np.matmul(a, b, out=c)
    times.append(time.perf_counter() - t)
print(f"{2 * n**3 / statistics.median(times) / 1e9:.1f}")
EOF

echo "cpu-openblas: $(nproc) CPUs, $threads threads, OpenBLAS $blas, $rounds rounds"
sizes="1024 2048"
for r in $(seq "$rounds"); do
  for n in $sizes; do
    OPENBLAS_NUM_THREADS=$threads "$py" "$work/np.py" "$n" >> "$work/blas-$n"
    # The first kernel BenchmarkBmm lists is the default one.
    GOMAXPROCS=$threads "$work/cpu.test" -test.run XXX -test.bench "Bmm/[^/]+/1x${n}x${n}x${n}\$" \
      -test.benchtime 1s | awk '/GFLOP\/s/ && !done {for (i = 1; i < NF; i++) if ($(i+1) == "GFLOP/s") {print $i; done = 1}}' \
      >> "$work/go-$n"
  done
  echo "   round $r done"
done

median() { sort -g "$1" | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
for n in $sizes; do
  for f in "$work/blas-$n" "$work/go-$n"; do
    if [ "$(grep -c . "$f")" != "$rounds" ]; then
      echo "cpu-openblas: $(basename "$f"): $(grep -c . "$f") figures for $rounds rounds" >&2
      exit 1
    fi
  done
done
printf '%-10s %12s %12s %7s %7s\n' shape "OpenBLAS" "ours" ratio target
for n in $sizes; do
  o=$(median "$work/blas-$n")
  g=$(median "$work/go-$n")
  awk -v n="$n" -v o="$o" -v g="$g" 'BEGIN {
    r = g / o
    printf "%-10s %12.1f %12.1f %7.2f %7s %s\n", n "^3", o, g, r, ">=0.70", (r >= 0.7 ? "PASS" : "MISS")
  }'
done
