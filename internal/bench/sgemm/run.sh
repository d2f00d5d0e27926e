#!/bin/bash
# run.sh: the matmul kernels on the GPU machine, from the repo root, in one call:
#
#   bash internal/bench/sgemm/run.sh [steps]     # steps: comma list of ptxas,check,sanitize,bench,
#                                                # sweep (default: all but sweep)
#
#   ptxas     registers / spills of ptx/matmul.ptx under the device's ptxas for sm_90
#   check     bit-exactness of every entry against a host fmaf chain (sgemm check)
#   sanitize  compute-sanitizer memcheck and racecheck on small shapes (sgemm sanitize)
#   bench     our kernels and PyTorch (cuBLAS, TF32 off) on the timing shapes; the merged table
#             is printed last
#   sweep     with bench: also the tile configurations of variants.cu (compiled here to PTX)
#
# Logs under $OUT (when set) or /tmp/sgemm-out: sgemm-*.log, torch.log, table.txt.
set -u
here=internal/bench/sgemm
ptx=ptx/matmul.ptx
OUT=${OUT:-/tmp/sgemm-out}
mkdir -p "$OUT"
steps=",${1:-ptxas,check,sanitize,bench},"
want() { case $steps in *",$1,"*) return 0;; esac; return 1; }
work=$(mktemp -d /tmp/sgemm.XXXXXX)
rc=0

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
nvcc --version | tail -n 1
if ! nvcc -O2 -std=c++17 -Xcompiler -fopenmp -o "$work/sgemm" "$here/sgemm.cu" -lcuda 2> "$work/build.err"; then
  cat "$work/build.err"; exit 1
fi

if want ptxas; then
  echo "== ptxas -arch=sm_90 (device toolkit) on $ptx"
  ptxas -arch=sm_90 -v "$ptx" -o "$work/m.cubin" 2>&1 | grep -E "Compiling|registers|spill" | paste - - - |
    sed -E 's/ptxas info *: //g; s/Compiling entry function//; s/for .sm_90.//' | awk '{$1=$1; print}' |
    tee "$OUT/ptxas.log"
fi

if want check; then
  echo "== check"
  t0=$(date +%s)
  "$work/sgemm" check "$ptx" > "$OUT/sgemm-check.log" 2>&1 || rc=1
  grep -E "FAIL|mismatch|check" "$OUT/sgemm-check.log" | head -n 20
  echo "   ($(( $(date +%s) - t0 ))s)"
fi

if want sanitize; then
  for tool in memcheck racecheck; do
    echo "== compute-sanitizer --tool $tool"
    t0=$(date +%s)
    compute-sanitizer --tool $tool --error-exitcode 3 "$work/sgemm" sanitize "$ptx" \
      > "$OUT/sgemm-$tool.log" 2>&1
    r=$?
    [ $r = 0 ] || rc=1
    grep -E "ERROR SUMMARY|RACECHECK SUMMARY|check" "$OUT/sgemm-$tool.log" | tail -n 2
    echo "   exit $r ($(( $(date +%s) - t0 ))s)"
  done
fi

if want bench; then
  echo "== bench"
  v=""
  if want sweep; then
    nvcc -ptx -arch=compute_70 --fmad=false -O3 -std=c++14 -o "$work/variants.ptx" "$here/variants.cu" &&
      v="$work/variants.ptx"
  fi
  "$work/sgemm" bench "$ptx" $v > "$OUT/sgemm-bench.log" 2>&1 || rc=1
  grep -E "FAIL|variants" "$OUT/sgemm-bench.log"
  PYTHONUNBUFFERED=1 python3 "$here/torch_sgemm.py" > "$OUT/torch.log" 2>&1 || rc=1
  grep TORCH_INFO "$OUT/torch.log"
  grep BENCH "$OUT/sgemm-bench.log" | awk "{print \$2, \$3, \$5}"
  python3 "$here/combine.py" "$OUT/sgemm-bench.log" "$OUT/torch.log" | tee "$OUT/table.txt"
fi
rm -rf "$work"
exit $rc
