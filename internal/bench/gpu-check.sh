#!/bin/bash
# gpu-check.sh: the one-call GPU check. Run on the GPU machine from the repo root, with .gpu/
# already packed (internal/bench/gpu-pack.sh):
#
#   bash internal/bench/gpu-check.sh
#
# Steps (all output in $OUT/gpu-check.log; stdout gets one or a few lines per step):
#   a. put PyTorch's libcufft on LD_LIBRARY_PATH (if found)
#   b. the packed tests + benchmarks: bash .gpu/run $GPU_CHECK_ARGS
#      (default "-test.bench . -test.benchtime 200ms"; the ops benchmarks on the GPU only, unless
#      TORCHLEAN_BENCH_DEVICES says otherwise; TORCHLEAN_GOLDEN_OUT=$OUT, so the mirror
#      test writes $OUT/mirror-golden.txt; full log in $OUT/gpu-tests.log)
#   c. compute-sanitizer memcheck on TestMirror (racecheck too with GPU_CHECK_RACECHECK=1)
#   d. cold start: TestFirstKernelLatency with CUDA_CACHE_DISABLE=1
#   e. launch.c: C host cost of cuLaunchKernel on ptx/elementwise.ptx (cold and warm runs), then
#      nine rounds of the C launch and Go's BenchmarkDispatch/cuda (launch queue) and
#      /cuda-sync (each op calling the driver itself) interleaved
#   f. torch_bench.py: the PyTorch baseline
#   g. compare.py: the table, written to $OUT/bench-table.txt and printed last
#
# Environment: GPU_CHECK_GOLDEN=1 (regenerate the golden file first, step a2), GPU_CHECK_ARGS (arguments for every test binary), GPU_CHECK_SKIP (comma list of
# steps to skip: tests,sanitizer,coldstart,launch,torch), GPU_CHECK_RACECHECK=1,
# GPU_CHECK_RACECHECK_SKIP (a regexp of mirror cases racecheck leaves out, e.g. the largest
# products), GPU_CHECK_SANITIZER_ONLY (a regexp: both tools run only the mirror cases it
# matches, e.g. '^(flash_attention|conv|rfft|irfft)' for new families), GPU_CHECK_SANITIZER_TIMEOUT (seconds per sanitizer run, default 240),
# TORCH_BENCH_ARGS, GPU_CHECK_MODELS=1 (step f2, the model suite; GPU_CHECK_MODELS_ARGS,
# GPU_CHECK_MODELS_BENCHTIME, GPU_CHECK_MODELS_COUNT).
# Files under $OUT: gpu-check.log, gpu-tests.log, mirror-golden.txt, model-golden.txt,
# bench-table.txt (with GPU_CHECK_MODELS=1: models-go.log, models-torch.json, models-table.txt).
# Exit status: the test runner's (step b); 2 when .gpu/run is missing.
set -u

root=$(pwd)
OUT=${OUT:-/tmp/gpu-check-out}
export OUT
mkdir -p "$OUT"
LOG=$OUT/gpu-check.log
: > "$LOG"
work=$(mktemp -d /tmp/gpu-check.XXXXXX)
bench=$root/internal/bench
skip=",${GPU_CHECK_SKIP:-},"
san_timeout=${GPU_CHECK_SANITIZER_TIMEOUT:-240}

say() { echo "$*"; echo "$*" >> "$LOG"; }
step() { say "== $*"; }
skipped() { case $skip in *",$1,"*) say "   skipped ($1 in GPU_CHECK_SKIP)"; return 0;; esac; return 1; }
elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}'; }

{
  echo "gpu-check $(date -u +%FT%TZ) in $root"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1
  git -C "$root" rev-parse --short HEAD 2>/dev/null || true
} >> "$LOG"

# ---- a. cuFFT from the PyTorch wheel ----
step "a. libcufft"
cufft_dir=$(python3 - 2>>"$LOG" <<'EOF'
import glob, os
roots = []
try:
    import nvidia
    roots += list(nvidia.__path__)
except Exception:
    pass
try:
    import torch
    roots.append(os.path.join(os.path.dirname(torch.__file__), "lib"))
except Exception:
    pass
for r in roots:
    hits = sorted(glob.glob(os.path.join(r, "**", "libcufft.so.*"), recursive=True))
    hits = [h for h in hits if "libcufftw" not in h]
    if hits:
        print(os.path.dirname(hits[0]))
        break
EOF
)
if [ -n "$cufft_dir" ]; then
  export LD_LIBRARY_PATH="$cufft_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  say "   cufft: $cufft_dir ($(cd "$cufft_dir" && ls libcufft.so.* 2>/dev/null | tr '\n' ' '))"
else
  say "   cufft: not found in the PyTorch install (cuFFT tests may skip or fail)"
fi

# ---- a2. golden first (GPU_CHECK_GOLDEN=1): after a kernel change, the mirror test writes the
# new GPU hashes into this copy's ops/testdata (and $OUT) before the whole suite runs, so that
# the CPU-side golden test of the same run checks them. ----
if [ "${GPU_CHECK_GOLDEN:-0}" = 1 ] && compgen -G '.gpu/bin/ops.test.*' >/dev/null; then
  step "a2. golden (TestMirror writes ops/testdata/mirror-golden.txt)"
  bash .gpu/unpack .gpu/bin/ops.test
  (cd ops && TORCHLEAN_REQUIRE_CUDA=1 TORCHLEAN_GOLDEN_OUT=testdata ../.gpu/bin/ops.test -test.run 'TestMirror$') > "$work/golden.out" 2>&1
  say "   exit $? ($(tail -n 1 "$work/golden.out"))"
  cp ops/testdata/mirror-golden.txt "$OUT/mirror-golden.txt" 2>/dev/null
  if compgen -G '.gpu/bin/autograd.test.*' >/dev/null; then
    bash .gpu/unpack .gpu/bin/autograd.test
    mkdir -p autograd/testdata
    (cd autograd && TORCHLEAN_REQUIRE_CUDA=1 TORCHLEAN_GOLDEN_OUT=testdata ../.gpu/bin/autograd.test -test.run 'TestModelMirror$' -test.v) > "$work/model.out" 2>&1
    say "   model mirror exit $? ($(grep -E 'final loss|FAIL' "$work/model.out" | head -n 2 | tr '\n' ' '))"
    cp autograd/testdata/model-golden.txt "$OUT/model-golden.txt" 2>/dev/null
  fi
fi

# ---- b. tests and benchmarks ----
step "b. tests + benchmarks"
test_rc=2
if [ ! -f .gpu/run ]; then
  say "   .gpu/run missing: pack with internal/bench/gpu-pack.sh first"
elif skipped tests; then
  test_rc=0
else
  read -r -a gargs <<< "${GPU_CHECK_ARGS:--test.bench . -test.benchtime 200ms}"
  export TORCHLEAN_BENCH_DEVICES=${TORCHLEAN_BENCH_DEVICES:-cuda}
  say "   args: ${gargs[*]}"
  t0=$(date +%s.%N)
  TORCHLEAN_GOLDEN_OUT=$OUT bash .gpu/run "${gargs[@]}" > "$work/run.out" 2>&1
  test_rc=$?
  { echo "--- runner output"; cat "$work/run.out"; } >> "$LOG"
  tail -n 25 "$work/run.out"
  say "   runner exit $test_rc ($(elapsed "$t0")s); mirror-golden.txt: $([ -s "$OUT/mirror-golden.txt" ] && echo written || echo absent)"
fi

# The ops test binary, unpacked anew (a warm machine keeps the last call's files).
ops_dir=$root/ops
ops_bin=$root/.gpu/bin/ops.test
bash .gpu/unpack "$ops_bin"

# ---- c. compute-sanitizer ----
step "c. compute-sanitizer (TestMirror)"
if ! skipped sanitizer; then
  if ! command -v compute-sanitizer >/dev/null 2>&1; then
    say "   compute-sanitizer not found: skipped"
  elif [ ! -x "$ops_bin" ]; then
    say "   $ops_bin missing: skipped"
  else
    tools=memcheck
    [ "${GPU_CHECK_RACECHECK:-0}" = 1 ] && tools="memcheck racecheck"
    for tool in $tools; do
      t0=$(date +%s.%N)
      skip_cases=""
      [ "$tool" = racecheck ] && skip_cases=${GPU_CHECK_RACECHECK_SKIP:-}
      (cd "$ops_dir" && env -u TORCHLEAN_GOLDEN_OUT TORCHLEAN_REQUIRE_CUDA=1 TORCHLEAN_MIRROR_SKIP="$skip_cases" \
        TORCHLEAN_MIRROR_ONLY="${GPU_CHECK_SANITIZER_ONLY:-}" \
        timeout "$san_timeout" compute-sanitizer --tool "$tool" --error-exitcode 1 \
        "$ops_bin" -test.run 'TestMirror$' -test.v) > "$work/san.out" 2>&1
      rc=$?
      { echo "--- compute-sanitizer --tool $tool (exit $rc)"; cat "$work/san.out"; } >> "$LOG"
      summary=$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$work/san.out" | tail -n 1)
      fails=$(grep -cE '^--- FAIL' "$work/san.out")
      if [ $rc = 0 ]; then verdict=clean
      elif [ $rc = 124 ]; then verdict="TIMED OUT after ${san_timeout}s"
      else verdict="UNCLEAN (exit $rc, test failures $fails)"
      fi
      say "   $tool: $verdict; ${summary:-no summary line} ($(elapsed "$t0")s)"
      [ $rc = 0 ] || grep -E '^=+ (Invalid|Program hit|Error|Race|.*hazard)' "$work/san.out" | head -n 3
    done
  fi
fi

# ---- d. cold start ----
step "d. cold start (CUDA_CACHE_DISABLE=1 TestFirstKernelLatency)"
: > "$work/coldstart.out"
if ! skipped coldstart; then
  if [ -x "$ops_bin" ]; then
    t0=$(date +%s.%N)
    (cd "$ops_dir" && env -u TORCHLEAN_GOLDEN_OUT CUDA_CACHE_DISABLE=1 TORCHLEAN_REQUIRE_CUDA=1 \
      "$ops_bin" -test.run TestFirstKernelLatency -test.v) > "$work/coldstart.out" 2>&1
    rc=$?
    wall=$(elapsed "$t0")
    echo "process wall time ${wall}s (exit $rc)" >> "$work/coldstart.out"
    { echo "--- cold start (exit $rc)"; cat "$work/coldstart.out"; } >> "$LOG"
    grep -E -- '--- (PASS|FAIL|SKIP)|no tests to run' "$work/coldstart.out" | head -n 2
    say "   exit $rc, process wall ${wall}s"
  else
    say "   $ops_bin missing: skipped"
  fi
fi

# ---- e. C launch baseline ----
step "e. launch.c"
: > "$work/launch_cold.json"; : > "$work/launch.json"
if ! skipped launch; then
  if ! command -v gcc >/dev/null 2>&1; then
    say "   gcc not found: skipped"
  elif ! gcc -O2 -o "$work/launch" "$bench/launch.c" -ldl >> "$LOG" 2>&1; then
    say "   gcc failed (see log)"
  elif [ ! -f "$root/ptx/elementwise.ptx" ]; then
    say "   ptx/elementwise.ptx missing: skipped"
  else
    CUDA_CACHE_DISABLE=1 "$work/launch" "$root/ptx/elementwise.ptx" --first-only \
      > "$work/launch_cold.json" 2>> "$LOG"
    rc1=$?
    "$work/launch" "$root/ptx/elementwise.ptx" > "$work/launch.json" 2>> "$LOG"
    rc2=$?
    { echo "--- launch cold (exit $rc1)"; cat "$work/launch_cold.json";
      echo "--- launch warm (exit $rc2)"; cat "$work/launch.json"; } >> "$LOG"
    say "   cold exit $rc1, warm exit $rc2: $(cut -c1-200 "$work/launch.json")"
    # Dispatch interleaved: nine rounds of the C launch and Go's BenchmarkDispatch/cuda, one
    # after the other, so that both sides see the same state of the machine (single passes of
    # either vary by 10-50%); compare.py takes the median of each side.
    bash .gpu/unpack .gpu/bin/ops.test
    if [ -x .gpu/bin/ops.test ]; then
      for round in 1 2 3 4 5 6 7 8 9; do
        "$work/launch" "$root/ptx/elementwise.ptx" --launches 100000 >> "$work/dispatch_c.jsonl" 2>> "$LOG"
        (cd ops && TORCHLEAN_REQUIRE_CUDA=1 ../.gpu/bin/ops.test -test.run XXX -test.bench 'Dispatch/cuda' \
          -test.benchtime 100000x) >> "$work/dispatch_go.log" 2>&1
      done
      { echo "--- dispatch interleaved"; cat "$work/dispatch_c.jsonl" "$work/dispatch_go.log"; } >> "$LOG"
      say "   dispatch interleaved: $(grep -c c_launch_ns "$work/dispatch_c.jsonl") C, $(grep -c 'BenchmarkDispatch/cuda' "$work/dispatch_go.log") Go rounds"
    fi
  fi
fi

# ---- f. PyTorch baseline ----
step "f. torch_bench.py"
: > "$work/torch.json"
if ! skipped torch; then
  t0=$(date +%s.%N)
  # shellcheck disable=SC2086
  PYTHONUNBUFFERED=1 python3 "$bench/torch_bench.py" --out "$work/torch.json" ${TORCH_BENCH_ARGS:-} \
    > "$work/torch.stdout" 2> "$work/torch.stderr"
  rc=$?
  { echo "--- torch_bench (exit $rc)"; cat "$work/torch.stderr" "$work/torch.stdout"; } >> "$LOG"
  say "   exit $rc ($(elapsed "$t0")s)"
  [ $rc = 0 ] || tail -n 3 "$work/torch.stderr"
fi

# ---- f2. the model benchmark suite (GPU_CHECK_MODELS=1; issue 27, item 5): the examples'
# BenchmarkModelStep rows (GPU_CHECK_MODELS_BENCHTIME, default 20x, GPU_CHECK_MODELS_COUNT runs,
# default 3), torch_models.py (GPU_CHECK_MODELS_ARGS), models_table.py -> $OUT/models-table.txt ----
if [ "${GPU_CHECK_MODELS:-0}" = 1 ]; then
  step "f2. models (BenchmarkModelStep, torch_models.py, models_table.py)"
  : > "$OUT/models-go.log"
  for pkg in examples/fashionmnist examples/fno examples/gpt examples/ssm; do
    bin=$root/.gpu/bin/$(tr '/.' '__' <<< "$pkg").test
    bash .gpu/unpack "$bin"
    if [ -x "$bin" ]; then
      t0=$(date +%s.%N)
      (cd "$root/$pkg" && env -u TORCHLEAN_GOLDEN_OUT TORCHLEAN_REQUIRE_CUDA=1 "$bin" -test.run XXX -test.bench ModelStep \
        -test.benchtime "${GPU_CHECK_MODELS_BENCHTIME:-20x}" -test.count "${GPU_CHECK_MODELS_COUNT:-3}") >> "$OUT/models-go.log" 2>&1
      say "   $pkg exit $? ($(elapsed "$t0")s)"
    else
      say "   $bin missing: pack with internal/bench/gpu-pack.sh"
    fi
  done
  t0=$(date +%s.%N)
  # shellcheck disable=SC2086
  PYTHONUNBUFFERED=1 python3 "$bench/torch_models.py" --out "$OUT/models-torch.json" ${GPU_CHECK_MODELS_ARGS:-} \
    > /dev/null 2> "$work/models-torch.stderr"
  say "   torch_models exit $? ($(elapsed "$t0")s)"
  python3 "$bench/models_table.py" --go "$OUT/models-go.log" --torch "$OUT/models-torch.json" > "$OUT/models-table.txt" 2>> "$LOG"
  { echo "--- torch_models"; cat "$work/models-torch.stderr"; echo "--- models table"; cat "$OUT/models-table.txt"; } >> "$LOG"
  cat "$OUT/models-table.txt"
fi

# ---- g. the table, printed last ----
step "g. compare"
golog=$OUT/gpu-tests.log
[ -f "$golog" ] || golog=$root/.gpu/ops.out
python3 "$bench/compare.py" --go "$golog" --torch "$work/torch.json" \
  --c "$work/launch_cold.json" --c "$work/launch.json" --coldstart "$work/coldstart.out" \
  --dispatch-c "$work/dispatch_c.jsonl" --dispatch-go "$work/dispatch_go.log" \
  > "$OUT/bench-table.txt" 2>> "$LOG"
{ echo "--- bench table"; cat "$OUT/bench-table.txt"; } >> "$LOG"
rm -rf "$work"
echo "(tests exit $test_rc; full log: \$OUT/gpu-check.log)"
cat "$OUT/bench-table.txt"
exit "$test_rc"
