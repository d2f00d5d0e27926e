#!/bin/bash
# gpu-pack.sh: packs the test binary of every package that has tests into .gpu/ (CGO_ENABLED=0,
# linux/amd64, stripped, xz-compressed or else gzipped) with a runner, for a GPU machine that has no Go:
#
#   bash internal/bench/gpu-pack.sh          # here, from anywhere in the repository
#   bash .gpu/run [-test.run X] [-test.bench Y]   # there, from a copy of the repository with .gpu/
#   bash internal/bench/gpu-check.sh         # there: the whole check (it calls .gpu/run)
#
# The runner runs each binary from its package directory (the tests read testdata/ there) with
# TORCHLEAN_REQUIRE_CUDA=1, so a test that finds no GPU fails instead of skipping; it appends
# every output to ${OUT:-/tmp}/gpu-tests.log and prints the failures and one line per package.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
module=$(go list -m)
rm -rf .gpu
mkdir -p .gpu/bin
: > .gpu/packages
for pkg in $(go list ./...); do
  dir=${pkg#"$module"}
  dir=${dir#/}
  dir=${dir:-.}
  compgen -G "$dir/*_test.go" >/dev/null || continue
  name=$(tr '/.' '__' <<< "$dir")
  CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go test -c -ldflags='-s -w' -o ".gpu/bin/$name.test" "./$dir"
  echo "$dir $name" >> .gpu/packages
done
# xz packs a third smaller than gzip (the device call's carry is 64 MiB with the checkout); one
# xz per core, as each binary is smaller than one xz block.
if command -v xz >/dev/null; then
  printf '%s\0' .gpu/bin/*.test | xargs -0 -n 1 -P "$(nproc)" xz -9e
else
  gzip -9 .gpu/bin/*.test
fi
cat > .gpu/unpack <<'UNPACK'
#!/bin/bash
# unpack BIN...: writes each BIN anew from BIN.xz or BIN.gz (a warm machine keeps the last
# call's files), executable, through a temporary file moved into place; python3's lzma stands in
# for a missing xz. A BIN with neither is removed, so that nothing stale runs. Exit status 1 when
# any BIN could not be written.
status=0
for b in "$@"; do
  tmp="$b.tmp.$$"
  if [ -f "$b.xz" ]; then
    xz -dc "$b.xz" > "$tmp" 2>/dev/null ||
      python3 -c 'import lzma, sys; sys.stdout.buffer.write(lzma.open(sys.argv[1]).read())' "$b.xz" > "$tmp"
  elif [ -f "$b.gz" ]; then
    gunzip -c "$b.gz" > "$tmp"
  else
    rm -f "$b"
    echo "unpack: neither $b.xz nor $b.gz" >&2
    status=1
    continue
  fi
  if [ $? = 0 ] && [ -s "$tmp" ]; then
    chmod +x "$tmp" && mv -f "$tmp" "$b"
  else
    rm -f "$tmp" "$b"
    echo "unpack: could not unpack $b" >&2
    status=1
  fi
done
exit $status
UNPACK
chmod +x .gpu/unpack
cat > .gpu/run <<'RUN'
#!/bin/bash
# Runs the packed test binaries with CUDA required; extra arguments go to every binary.
export TORCHLEAN_REQUIRE_CUDA=1
gpu=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$gpu")
log=${OUT:-/tmp}/gpu-tests.log
: > "$log"
status=0
table=""
while read -r dir name; do
  bash "$gpu/unpack" "$gpu/bin/$name.test"
  t0=$(date +%s)
  (cd "$root/$dir" && "$gpu/bin/$name.test" -test.v "$@") > "$gpu/$name.out" 2>&1
  rc=$?
  [ "$rc" = 0 ] || status=1
  { echo "=== package $dir (exit $rc)"; cat "$gpu/$name.out"; } >> "$log"
  table+=$(printf '%-24s exit=%-3s pass=%-4s fail=%-3s skip=%-3s %ss' "$dir" "$rc" \
    "$(grep -c -- '^--- PASS' "$gpu/$name.out")" "$(grep -c -- '^--- FAIL' "$gpu/$name.out")" \
    "$(grep -c -- '^--- SKIP' "$gpu/$name.out")" "$(( $(date +%s) - t0 ))")$'\n'
done < "$gpu/packages"
grep -h -E -- '^--- FAIL|^--- SKIP|panic:' "$log" | head -40
printf '%s' "$table"
exit $status
RUN
chmod +x .gpu/run
du -sh .gpu | awk '{print "packed " $1 " into .gpu/"}'
