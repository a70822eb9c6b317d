#!/usr/bin/env bash
# Issue 27 on the GPU: the fuzz corpus with every built kernel verified
# against the CPU reference (both backends, f32/f16/bf16), then the whole
# catalog tuned with the Halide backend alone in all three dtypes (a small
# budget at one odd and one large size), so every Halide kernel there is
# verified too. Writes under $OUT/halide/; fails when Halide verifies fewer
# than 99 % of the corpus in a dtype or NVRTC fewer than all of it.
# Expects the build in build/ (tests/fuzz_corpus, cli/fusekit). Takes about
# 3-5 minutes on an H200 host (FUZZ_COUNT and BUDGET shorten it).
set -uo pipefail
out="${OUT:?}/halide"
mkdir -p "$out"
count=${FUZZ_COUNT:-150}

echo "fuzz corpus: $count expressions x 3 dtypes, verified" | tee "$out/log.txt"
timeout ${FUZZ_TIMEOUT:-300} build/tests/fuzz_corpus --count "$count" --seed 27 --gpu \
  --failures "$out/fuzz_failures.tsv" >"$out/fuzz_rates.json" 2>"$out/fuzz_stderr.txt"
fuzz_rc=$?
echo "fuzz rc=$fuzz_rc" | tee -a "$out/log.txt"
cat "$out/fuzz_rates.json" | tee -a "$out/log.txt"

echo "catalog, Halide backend only" | tee -a "$out/log.txt"
timeout ${TUNE_TIMEOUT:-200} build/cli/fusekit tune --arch sm_90 --dtype f32,f16,bf16 --backend halide \
  --budget ${BUDGET:-3} --specialize 0 --sizes ${SIZES:-1000003,16777216} --db /tmp/halide27.db \
  >"$out/catalog_tune.txt" 2>"$out/catalog_progress.txt"
echo "catalog tune rc=$?" | tee -a "$out/log.txt"
build/cli/fusekit db export --db /tmp/halide27.db "$out/catalog_records.jsonl" >>"$out/log.txt" 2>&1

# Per pattern and dtype: how many Halide records verified (status ok).
python3 - "$out/catalog_records.jsonl" <<'PY' | tee "$out/catalog_verified.txt" | tee -a "$out/log.txt"
import collections, json, sys
ok, seen = collections.Counter(), collections.Counter()
for line in open(sys.argv[1]):
    r = json.loads(line)
    key = (r.get("pattern"), r.get("dtype"))
    seen[key] += 1
    ok[key] += r.get("status") == "ok"
for key in sorted(seen):
    print(f"{key[0]:24} {key[1]:5} verified {ok[key]} of {seen[key]}")
print(f"patterns x dtypes with a verified Halide kernel: {sum(1 for k in seen if ok[k])} of {len(seen)}")
PY

python3 - "$out/fuzz_rates.json" <<'PY' | tee -a "$out/log.txt"
import json, sys
rates = json.load(open(sys.argv[1]))
bad = []
for dt, r in rates.items():
    n = r["cases"]
    h, v = r["halide_verified"] / n, r["nvrtc_verified"] / n
    print(f"{dt}: halide verified {h:.1%}, nvrtc verified {v:.1%} of {n}")
    if h < 0.99 or v < 1.0:
        bad.append(dt)
sys.exit(1 if bad else 0)
PY
verdict=$?
[ $fuzz_rc -eq 0 ] && [ $verdict -eq 0 ]
