#!/usr/bin/env bash
# fusekit's GPU work in one device call, as named steps run in turn:
#
#   OUT=... scripts/gpu.sh [NAME=VALUE...] STEP [[NAME=VALUE...] STEP]...
#   OUT=$OUT scripts/gpu.sh tests copybw tune memcheck
#   OUT=$OUT scripts/gpu.sh OPS=softmax SIZES=1024x65536 rows memcheck RECORDS=r.jsonl.gz package verify
#
# Each STEP is scripts/gpu/steps/STEP.sh (the README's "On a GPU machine"
# lists them), sourced in a subshell in the repository root after
# scripts/device_env.sh was sourced once (its helpers and $bin, $pkg at hand),
# with $out and $log pointing at $OUT/STEP/ (STEP-2, STEP-3 when a step runs
# again); the step fails when it exits non-zero or note() counted a failure. NAME=VALUE sets a setting for the steps
# after it. A failed step does not stop the ones after it; gpu.sh prints one
# summary line per step (also in $OUT/summary.txt) and exits 1 if any failed.
# A call returns at most 8 files: the step folders are packed into
# $OUT/results.tar.gz after each step (what a call killed at its limit still
# returns), and when they hold more than 8 files only the archive and each
# step's log.txt (as STEP-log.txt) stay.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
steps_dir=$root/scripts/gpu/steps
usage() {
  echo "usage: OUT=DIR scripts/gpu.sh [NAME=VALUE...] STEP [[NAME=VALUE...] STEP]..." >&2
  echo "steps: $(find "$steps_dir" -name '*.sh' -printf '%f\n' | sed 's/\.sh$//' | sort | tr '\n' ' ')" >&2
  exit 2
}
[ $# -gt 0 ] || usage
: "${OUT:?set OUT to a results folder}"
# Every argument is checked before anything runs: a typo costs no device time.
for a in "$@"; do
  case $a in
    [A-Za-z_]*=*) name=${a%%=*}; case $name in *[!A-Za-z0-9_]*) echo "gpu.sh: '$a': not NAME=VALUE" >&2; usage ;; esac ;;
    *) [ -f "$steps_dir/$a.sh" ] || { echo "gpu.sh: no step '$a'" >&2; usage; } ;;
  esac
done
cd "$root" || exit 2
mkdir -p "$OUT"
source scripts/device_env.sh
summary=$OUT/summary.txt
# The machine, and whether it has the libxml2 that Debian's LLVM links (else carry .device/debs-xml).
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader; uname -r
  ls /usr/lib/x86_64-linux-gnu/libxml2.so.2 /usr/lib/x86_64-linux-gnu/libicuuc.so.* 2>&1 | tr '\n' ' '; echo; } \
  >"$summary" 2>&1
rm -f "$last_tune"
failed=0 dirs=() step_pid=
# pack: every step folder so far in $OUT/results.tar.gz, rewritten after each
# step, so that a call killed at its time limit still returns them.
pack() {
  [ "${#dirs[@]}" -gt 0 ] && tar -czf "$OUT/results.tar.gz.tmp" -C "$OUT" "${dirs[@]}" &&
    mv "$OUT/results.tar.gz.tmp" "$OUT/results.tar.gz"
}
# trim: past 8 files (what a call returns), only the archive, the summary
# and each step's log.txt (as STEP-log.txt) stay in $OUT.
trim() {
  local files d
  files=$(find "$OUT" -type f | wc -l)
  if [ "$files" -le 8 ]; then rm -f "$OUT/results.tar.gz"; return; fi
  for d in "${dirs[@]}"; do
    [ "${#dirs[@]}" -le 6 ] && [ -f "$OUT/$d/log.txt" ] && cp "$OUT/$d/log.txt" "$OUT/$d-log.txt"
    rm -rf "${OUT:?}/$d"
  done
  echo "$files files: the step folders are in results.tar.gz" | tee -a "$summary"
}
# On SIGTERM (`timeout N scripts/gpu.sh ...`), the running step's process
# group is killed and what it wrote so far is packed too.
on_term() {
  [ -n "$step_pid" ] && kill -TERM -- "-$step_pid" 2>/dev/null
  echo "${dirs[-1]:-gpu.sh}: killed by SIGTERM after $(($(date +%s) - start)) s" | tee -a "$summary"
  pack
  trim
  exit 143
}
trap on_term TERM
set -m  # each step in a process group of its own, for on_term
for a in "$@"; do
  case $a in
    [A-Za-z_]*=*) export "${a?}"; continue ;;
  esac
  dir=$a n=2
  while [ -e "$OUT/$dir" ]; do dir=$a-$n; n=$((n + 1)); done
  mkdir -p "$OUT/$dir"
  dirs+=("$dir")
  start=$(date +%s)
  (
    out=$OUT/$dir
    log=$out/log.txt
    fails=0
    # shellcheck disable=SC1090
    source "$steps_dir/$a.sh"
    rc=$?
    [ "$rc" -ne 0 ] && exit "$rc"
    exit "$fails"
  ) &
  step_pid=$!
  wait "$step_pid"
  rc=$?
  step_pid=
  verdict=ok
  if [ "$rc" -ne 0 ]; then verdict="FAILED (exit $rc)"; failed=1; fi
  notes=$(grep -h " rc=" "$OUT/$dir/log.txt" 2>/dev/null | tr '\n' ';' | sed 's/;$//; s/;/; /g')
  echo "$dir: $verdict in $(($(date +%s) - start)) s${notes:+ ($notes)}" | tee -a "$summary"
  pack
done
pack
trim
exit "$failed"
