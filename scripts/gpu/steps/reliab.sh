# shellcheck shell=bash
# reliab: the measuring worker and --devices on the GPU (about 2 minutes).
# 1. gpu_test's WorkerGpu tests: a tune of relu_add with a spinning and a
#    wild-writing kernel injected -> worker_gpu_test.json (both recorded as
#    timeout and fault, every other candidate ok).
# 2. The same small tune plain and with --devices all (one part per GPU when
#    there is one) -> plain.jsonl, devices.jsonl, compare.txt: the measured
#    (key, schedule, status) rows must be the same set; winners are listed
#    side by side (times differ by noise). RELIAB_TIMEOUT (120 s) per tune.
need_bins fusekit gpu_test
step worker tests
timeout 150 "$bin/gpu_test" --gtest_filter='WorkerGpu*' --gtest_output=json:"$out/worker_gpu_test.json" >>"$log" 2>&1
note worker_gpu_test $?
tune_args=(tune --arch sm_90 --pattern relu_add,silu_mul --dtype f32 --sizes 65536,16777216 --budget 8
  --hint-twins 0 --backend nvrtc)
for kind in plain devices; do
  db=/tmp/fusekit-reliab-$kind.db
  rm -f "$db"
  extra=()
  [ "$kind" = devices ] && extra=(--devices all)
  step "tune $kind"
  timeout "${RELIAB_TIMEOUT:-120}" "$bin/fusekit" "${tune_args[@]}" "${extra[@]}" --db "$db" \
    >"$out/tune_$kind.txt" 2>"$out/tune_${kind}_progress.txt"
  note "tune $kind" $?
  "$bin/fusekit" db export --db "$db" "$out/$kind.jsonl" >>"$log" 2>&1
  note "export $kind" $?
done
step compare
python3 - "$out/plain.jsonl" "$out/devices.jsonl" >"$out/compare.txt" 2>&1 <<'PY'
import json, sys
def load(p):
    rows, best = {}, {}
    for line in open(p):
        r = json.loads(line)
        k = (r["pipeline_hash"], r["dtype"], r["shape"], r["backend"], r["params"])
        rows[k] = rows.get(k, 0) + 1
        if r["status"] == "ok":
            s = (r["pattern"], r["shape"])
            if s not in best or r["median_us"] < best[s][0]:
                best[s] = (r["median_us"], r["params"])
    return rows, best
(a, ba), (b, bb) = load(sys.argv[1]), load(sys.argv[2])
twice = [k for k, n in b.items() if n > 1]
print(f"plain: {len(a)} rows, devices: {len(b)} rows, common {len(set(a) & set(b))}, "
      f"only plain {len(set(a) - set(b))}, only devices {len(set(b) - set(a))}, recorded twice {len(twice)}")
for s in sorted(set(ba) | set(bb)):
    pa, pb = ba.get(s, (0, "-")), bb.get(s, (0, "-"))
    print(f"{s[0]:12} {s[1]:>9}  plain {pa[0]:8.2f} us {pa[1]:45}  devices {pb[0]:8.2f} us {pb[1]}")
sys.exit(0 if set(a) == set(b) and not twice else 1)
PY
note "same rows" $?
cat "$out/compare.txt" >>"$log"
finish
