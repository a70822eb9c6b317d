# shellcheck shell=bash
# tunefuzz: issue 28's GPU fuzz (about 3 minutes, at most TUNEFUZZ_DEADLINE
# + TUNEFUZZ_TIMEOUT seconds). TUNEFUZZ_COUNT (600) random expressions of the
# fuzz corpus (seed TUNEFUZZ_SEED, 28), each tuned by `fusekit tune --expr`
# for sm_90 in f32 at one size of its parsed layout with BACKENDS
# (nvrtc,halide) and BUDGET (1: each backend's first schedule; the 172 row
# reductions take most of the time), TUNEFUZZ_JOBS (14) tunes at a time, each
# into its own database and killed after TUNEFUZZ_TIMEOUT (60) seconds
# -> results.tsv: index, layout, size, tune's exit code, whether a usable
# kernel came out (tune printed a winner), its records ok/total, whether stderr names the
# op as "without a usable kernel", the expression; without_kernel.tsv: the
# rows without one, with tune's message. Two checks: every expression without
# a kernel ended non-zero and was named ("exits name the ones without"), and
# every expression has a kernel. An expression not started by the deadline
# (TUNEFUZZ_DEADLINE, 180 s after the first) counts against both; 600
# expressions take about 340 s. TUNEFUZZ_FIRST (0) starts at that index of
# the same corpus (the rest of a run its deadline cut), its rows only.
need_bins fusekit fuzz_corpus
count=${TUNEFUZZ_COUNT:-600}
work=/tmp/fusekit-tunefuzz
rm -rf "$work"
mkdir -p "$work"
step "corpus: $count expressions, seed ${TUNEFUZZ_SEED:-28}"
"$bin/fuzz_corpus" --list --count "$count" --seed "${TUNEFUZZ_SEED:-28}" >"$out/corpus.tsv" 2>>"$log"
note corpus $?

# tune_one INDEX LAYOUT SOURCE: one tune, its result row in $work/INDEX.row.
tune_one() {
  local i=$1 layout=$2 src=$3 size rc kernel named ok total
  case $layout in
    rowcol | rows) size=1001x4097 ;;
    nchw) size=8x64x1089 ;;
    *) size=1000003 ;;
  esac
  if [ "$(date +%s)" -ge "$deadline" ]; then
    printf '%s\t%s\t%s\tnot-run\tno\t0/0\tno\t%s\n' "$i" "$layout" "$size" "$src" >"$work/$i.row"
    return 0
  fi
  timeout "$per_tune" "$bin/fusekit" tune --arch sm_90 --expr "$src" --name "fz$i" --dtype f32 --sizes "$size" \
    --backend "$backends" --budget "$budget" --hint-twins 0 --db "$work/$i.db" >"$work/$i.out" 2>"$work/$i.err"
  rc=$?
  "$bin/fusekit" db export --db "$work/$i.db" "$work/$i.jsonl" >/dev/null 2>&1
  total=$(cat "$work/$i.jsonl" 2>/dev/null | wc -l)
  ok=$(grep -c '"status": *"ok"' "$work/$i.jsonl" 2>/dev/null || true)
  kernel=no
  grep -q "^fz$i " "$work/$i.out" && kernel=yes
  named=no
  grep -q "without a usable kernel" "$work/$i.err" && grep -q "^  fz$i " "$work/$i.err" && named=yes
  printf '%s\t%s\t%s\t%s\t%s\t%s/%s\t%s\t%s\n' "$i" "$layout" "$size" "$rc" "$kernel" "${ok:-0}" "$total" "$named" \
    "$src" >"$work/$i.row"
}
export -f tune_one
export bin work
export deadline=$(($(date +%s) + ${TUNEFUZZ_DEADLINE:-180})) per_tune=${TUNEFUZZ_TIMEOUT:-60}
export backends=${BACKENDS:-nvrtc,halide} budget=${BUDGET:-1}

step "tunes: ${TUNEFUZZ_JOBS:-14} at a time, backends $backends, budget $budget"
first=${TUNEFUZZ_FIRST:-0}
tail -n +"$((first + 1))" "$out/corpus.tsv" | tr '\t' '\0' | tr '\n' '\0' |
  xargs -0 -n 3 -P "${TUNEFUZZ_JOBS:-14}" bash -c 'tune_one "$@"' tune_one
note tunes $?

printf 'index\tlayout\tsize\texit\tkernel\tok/total\tnamed\texpression\n' >"$out/results.tsv"
for ((i = first; i < count; i++)); do
  [ -f "$work/$i.row" ] && cat "$work/$i.row" ||
    printf '%s\t?\t?\tnot-run\tno\t0/0\tno\t?\n' "$i"
done >>"$out/results.tsv"
# Rows without a kernel, with the lines tune wrote about them.
awk -F'\t' 'NR > 1 && $5 != "yes"' "$out/results.tsv" >"$out/without_kernel.tsv"
while IFS=$'\t' read -r i _; do
  echo "--- $i"
  grep -v '^\[' "$work/$i.err" 2>/dev/null | tail -n 6
done <"$out/without_kernel.tsv" >"$out/without_kernel_messages.txt"

python3 - "$out/results.tsv" <<'PY' >"$out/summary.txt" 2>&1
import collections, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])][1:]
with_k = [r for r in rows if r[4] == "yes"]
without = [r for r in rows if r[4] != "yes"]
# The issue's criterion: no kernel means a non-zero exit that names the op.
silent = [r for r in without if r[3] in ("0", "not-run") or r[6] != "yes"]
# A kernel and a non-zero exit, or an exit other than 0/1: something else went wrong.
odd = [r for r in rows if r[3] != "not-run" and (r[3] not in ("0", "1") or (r[4] == "yes" and r[3] != "0"))]
by_layout = collections.Counter(r[1] for r in without)
print(f"{len(rows)} expressions: {len(with_k)} with a kernel, {len(without)} without "
      f"({dict(by_layout)}), {sum(r[3] == 'not-run' for r in rows)} not run by the deadline")
print("exit codes: " + ", ".join(f"{c}: {n}" for c, n in sorted(collections.Counter(r[3] for r in rows).items())))
print(f"without a kernel but exit 0, not run, or not named: {len(silent)}: " + " ".join(r[0] for r in silent))
print(f"a kernel with a non-zero exit, or an exit other than 0 and 1: {len(odd)}: " +
      " ".join(f"{r[0]}(exit {r[3]})" for r in odd))
print("without a kernel: " + " ".join(r[0] for r in without))
sys.exit(1 if silent or odd else 0)
PY
note "exits name the ones without" $?
cat "$out/summary.txt" >>"$log"
[ ! -s "$out/without_kernel.tsv" ]
note "every expression has a kernel" $?
finish
