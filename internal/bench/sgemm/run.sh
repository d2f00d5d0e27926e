#!/bin/bash
# run.sh: the matmul kernels on the GPU machine, from the repo root, in one call:
#
#   bash internal/bench/sgemm/run.sh [steps]     # steps: comma list of ptxas,check,sanitize,bench,
#                                                # sweep,tiny,prof (default: the first four)
#
#   ptxas     registers / spills of ptx/matmul.ptx and matmul_narrow.ptx under the device's ptxas
#             for sm_90
#   check     bit-exactness of every entry against a host fmaf chain (sgemm check)
#   sanitize  compute-sanitizer memcheck and racecheck on small shapes (sgemm sanitize)
#   bench     our kernels and PyTorch (cuBLAS, TF32 off) on the timing shapes; the merged table
#             is printed last
#   sweep     with bench: also the tile configurations of variants.cu (compiled here to PTX)
#   prof      ncu stall reasons on the bmm (64 x 512x64 @ 64x512), matmul_s and matmul_p
#   tiny      the family crossovers: matmul_s against matmul_t on small products, and matmul_s,
#             matmul_t and matmul_n on 64-column ones (sgemm tiny)
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

v=""
if want sweep || want prof; then
  # nvcc 13 no longer targets compute_70: compute_75 then (the same arithmetic, explicit fmas).
  for arch in 70 75; do
    if nvcc -ptx -arch=compute_$arch --fmad=false -O3 -std=c++14 -o "$work/variants.ptx" \
      "$here/variants.cu" 2> "$work/variants.err"; then
      v="$work/variants.ptx"
      echo "== variants.cu: compute_$arch"
      break
    fi
  done
  [ -n "$v" ] || cat "$work/variants.err"
fi

if want ptxas; then
  echo "== ptxas -arch=sm_90 (device toolkit) on $ptx and ptx/matmul_narrow.ptx"
  for f in "$ptx" ptx/matmul_narrow.ptx; do
    ptxas -arch=sm_90 -v "$f" -o "$work/m.cubin" 2>&1 | grep -E "Compiling|registers|spill" | paste - - - |
      sed -E 's/ptxas info *: //g; s/Compiling entry function//; s/for .sm_90.//' | awk '{$1=$1; print}'
  done | tee "$OUT/ptxas.log"
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
  vb=""
  want sweep && vb=$v
  "$work/sgemm" bench "$ptx" $vb > "$OUT/sgemm-bench.log" 2>&1 || rc=1
  grep -E "FAIL|variants" "$OUT/sgemm-bench.log"
  PYTHONUNBUFFERED=1 python3 "$here/torch_sgemm.py" > "$OUT/torch.log" 2>&1 || rc=1
  grep TORCH_INFO "$OUT/torch.log"
  grep BENCH "$OUT/sgemm-bench.log" | awk "{print \$2, \$3, \$5}"
  python3 "$here/combine.py" "$OUT/sgemm-bench.log" "$OUT/torch.log" | tee "$OUT/table.txt"
fi
if want tiny; then
  echo "== tiny (family crossovers)"
  "$work/sgemm" tiny "$ptx" > "$OUT/sgemm-tiny.log" 2>&1 || rc=1
  grep -E "TINY|NARROW" "$OUT/sgemm-tiny.log"
fi
if want prof; then
  echo "== ncu (bmm nn: matmul_s with 8 tiles per block, variant v0 with 6)"
  ncu --metrics "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,gpu__time_duration.sum,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,l1tex__throughput.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum" \
    "$work/sgemm" prof "$ptx" $v > "$OUT/ncu.log" 2>&1 || rc=1
  grep -E "matmul_|^ *v0|duration|pct|wavefronts|conflicts|inst_executed" "$OUT/ncu.log" | awk '{$1=$1; print}'
  grep -E "stalled" "$OUT/ncu.log" | awk '{v=$NF; gsub(",","",v); if (v+0 >= 0.05) {sub("smsp__average_warps_issue_stalled_",""); sub("_per_issue_active.ratio",""); print $1, v}}'
fi
rm -rf "$work"
exit $rc
