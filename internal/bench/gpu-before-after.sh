#!/bin/bash
# gpu-before-after.sh: the same GPU benchmarks from two builds in one call, interleaved, for a
# before/after comparison on one machine (issue 22's "no regression": the before is commit
# 97e6231). Pack both here:
#
#   bash internal/bench/gpu-pack.sh                       # the after: .gpu/bin
#   git worktree add /tmp/before 97e6231 && (cd /tmp/before && for p in ops autograd; do
#     CGO_ENABLED=0 go test -c -ldflags='-s -w' -o /tmp/b/$p.test ./$p && xz -9e /tmp/b/$p.test; done)
#   mkdir -p .gpu/before && cp /tmp/b/*.test.xz .gpu/before/     (gzip works too)
#
# then on the GPU machine, from the repository root: bash internal/bench/gpu-before-after.sh
# Environment: BA_ROUNDS (default 3), BA_BENCH (the benchmarks both builds have; default the
# families of 97e6231), BA_BENCHTIME (default 100ms). Output under $OUT: before.log, after.log
# (go test -bench output of every round), table-before.txt, table-after.txt (compare.py with the
# same PyTorch and C runs), printed last.
set -u
OUT=${OUT:-/tmp/gpu-before-after}
mkdir -p "$OUT"
work=$(mktemp -d)
rounds=${BA_ROUNDS:-3}
bench=${BA_BENCH:-'^(BenchmarkDispatch|BenchmarkElementwise|BenchmarkKernels|BenchmarkLaunchVariants|BenchmarkLayout|BenchmarkMemcpy|BenchmarkReduce|BenchmarkSortedRows|BenchmarkTrainStep)$'}
for side in before bin; do
  for p in ops autograd; do
    if ! compgen -G ".gpu/$side/$p.test.*" >/dev/null; then
      echo "gpu-before-after: .gpu/$side/$p.test.xz (or .gz) missing (see the header)" >&2
      exit 2
    fi
    bash .gpu/unpack ".gpu/$side/$p.test"
  done
done
export TORCHLEAN_REQUIRE_CUDA=1 TORCHLEAN_BENCH_DEVICES=cuda
: > "$OUT/before.log"
: > "$OUT/after.log"
for r in $(seq "$rounds"); do
  for side in before after; do
    dir=.gpu/before
    [ "$side" = after ] && dir=.gpu/bin
    for p in ops autograd; do
      (cd "$p" && timeout 200 "../$dir/$p.test" -test.run XXX -test.bench "$bench" \
        -test.benchtime "${BA_BENCHTIME:-100ms}") >> "$OUT/$side.log" 2>&1
    done
  done
  echo "round $r done $(date +%T)"
done
c_json=""
if gcc -O2 -o "$work/launch" internal/bench/launch.c -ldl 2>/dev/null; then
  "$work/launch" ptx/elementwise.ptx > "$work/launch.json" && c_json="--c $work/launch.json"
fi
PYTHONUNBUFFERED=1 timeout 300 python3 internal/bench/torch_bench.py --only elementwise,kernels,dispatch,train --out "$work/torch.json" > "$work/torch.out" 2>&1
echo "torch_bench exit $?"
for side in before after; do
  # shellcheck disable=SC2086
  python3 internal/bench/compare.py --go "$OUT/$side.log" --torch "$work/torch.json" $c_json > "$OUT/table-$side.txt" 2>&1
done
nvidia-smi --query-gpu=name --format=csv,noheader
echo "--- before (97e6231 or the build in .gpu/before)"
cat "$OUT/table-before.txt"
echo "--- after (.gpu/bin)"
cat "$OUT/table-after.txt"
rm -rf "$work"
