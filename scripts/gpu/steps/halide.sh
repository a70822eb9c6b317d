# shellcheck shell=bash
# halide: issue 27 on the GPU. The fuzz corpus (FUZZ_COUNT expressions, 150,
# seed 27) built by both backends in f32/f16/bf16 with every kernel verified
# against the CPU reference -> fuzz_rates.json, fuzz_failures.tsv; then the
# catalog tuned with the Halide backend alone in all three dtypes (BUDGET 3,
# SIZES 1000003,16777216) -> catalog_records.jsonl, catalog_verified.txt;
# CATALOG_BACKENDS=nvrtc,halide tunes both in the same run and writes where
# Halide wins, ties or loses (bench/backend_table.py) -> backend_table.md.
# FUZZ_COUNT=0 skips the corpus; CATALOG_PATTERNS narrows the catalog (a
# --pattern list, e.g. the row ops at SIZES=4096x4096).
# Fails when Halide verifies fewer than 99 % of the corpus in a dtype or
# NVRTC fewer than all of it.
need_bins fusekit fuzz_corpus
if [ "${FUZZ_COUNT:-150}" != 0 ]; then
step "fuzz corpus: ${FUZZ_COUNT:-150} expressions x 3 dtypes, verified"
timeout "${FUZZ_TIMEOUT:-300}" "$bin/fuzz_corpus" --count "${FUZZ_COUNT:-150}" --seed 27 --gpu \
  --failures "$out/fuzz_failures.tsv" >"$out/fuzz_rates.json" 2>"$out/fuzz_stderr.txt"
note fuzz $?
cat "$out/fuzz_rates.json" >>"$log"
python3 - "$out/fuzz_rates.json" <<'PY' >>"$log" 2>&1
import json, sys
bad = []
for dt, r in json.load(open(sys.argv[1])).items():
    n = r["cases"]
    h, v = r["halide_verified"] / n, r["nvrtc_verified"] / n
    print(f"{dt}: halide verified {h:.1%}, nvrtc verified {v:.1%} of {n}")
    bad += [dt] if h < 0.99 or v < 1.0 else []
sys.exit(1 if bad else 0)
PY
note "fuzz rates at the bar" $?
fi

backends=${CATALOG_BACKENDS:-halide}
step "catalog, backends $backends"
db=/tmp/halide27.db
rm -f "$db"
timeout "${TUNE_TIMEOUT:-200}" "$bin/fusekit" tune --arch sm_90 --dtype f32,f16,bf16 --backend "$backends" \
  ${CATALOG_PATTERNS:+--pattern "$CATALOG_PATTERNS"} \
  --budget "${BUDGET:-3}" --specialize 0 --sizes "${SIZES:-1000003,16777216}" --db "$db" \
  >"$out/catalog_tune.txt" 2>"$out/catalog_progress.txt"
note "catalog tune" $?
"$bin/fusekit" db export --db "$db" "$out/catalog_records.jsonl" >>"$log" 2>&1
# Per pattern and dtype: how many Halide records verified (status ok).
python3 - "$out/catalog_records.jsonl" <<'PY' >"$out/catalog_verified.txt" 2>&1
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
tail -1 "$out/catalog_verified.txt" >>"$log"
if [ "$backends" != halide ]; then
  python3 bench/backend_table.py "$out/catalog_records.jsonl" --md "$out/backend_table.md" | tail -1 >>"$log"
  note "backend table" $?
fi
finish
