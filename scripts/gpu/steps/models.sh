#!/usr/bin/env bash
# GPU step "models": for each committed test model, plan it at two sizes,
# `fusekit tune --plan` on this GPU, `fusekit build --plan` a package, verify
# every kernel of it through its C API and run one verification under
# compute-sanitizer memcheck. Runs in the repo root with the build in build/;
# writes $OUT/models/<model>.json (plan, coverage, tune/build/verify/memcheck
# exit codes and wall times) and the logs. About 3-5 minutes on an H200
# (small budgets: nvrtc only, 8 schedules per entry and size).
set -uo pipefail
out="${OUT:?}/models"
mkdir -p "$out"
bin=build/cli/fusekit
arch=${ARCH:-sm_90}
budget=${BUDGET:-8}
build_flags=(--runtime-lib build/runtime/libfusekit_runtime.a --runtime-include runtime/include
             --cuda-include "${CUDA_HOME:-/usr/local/cuda}/include")
failed=0

# Two sizes per model: the symbolic dims each model has.
dims_for() {
  case "$1" in
    resnet50*) echo "--dim batch=1,32" ;;
    *) echo "--dim batch=8 --dim seq=128,512" ;;
  esac
}

timed() {  # timed NAME CMD...: runs CMD, records rc and seconds in $rc_NAME/$s_NAME
  local name=$1; shift
  local t0; t0=$(date +%s.%N)
  "$@"
  local rc=$?
  printf -v "rc_$name" '%s' "$rc"
  printf -v "s_$name" '%s' "$(awk "BEGIN{print $(date +%s.%N) - $t0}")"
  return $rc
}

for model in tests/data/models/*.onnx; do
  m=$(basename "$model" .onnx)
  log="$out/$m.log"
  db="/tmp/models_$m.db"
  pkg="/tmp/models_pkg_$m"
  rm -rf "$db" "$pkg"
  # shellcheck disable=SC2046
  timed plan "$bin" plan "$model" $(dims_for "$m") --out "$out/$m.plan.json" >"$log" 2>&1
  timed tune timeout 240 "$bin" tune --plan "$out/$m.plan.json" --arch "$arch" --db "$db" --backend nvrtc \
    --budget "$budget" --specialize 0 --hint-twins 0 >>"$log" 2>"$out/$m.tune_progress.txt"
  # Resumable: a second run measures nothing.
  timed retune timeout 60 "$bin" tune --plan "$out/$m.plan.json" --arch "$arch" --db "$db" --backend nvrtc \
    --budget "$budget" >>"$log" 2>&1
  timed build timeout 240 "$bin" build --plan "$out/$m.plan.json" --arch "$arch" --db "$db" --out "$pkg" \
    "${build_flags[@]}" >>"$log" 2>&1
  timed verify timeout 180 "$bin" verify --package "$pkg" >"$out/$m.verify.txt" 2>&1
  timed memcheck timeout 240 compute-sanitizer --tool memcheck --error-exitcode 9 "$bin" verify --package "$pkg" \
    --max-elements 1048576 >"$out/$m.memcheck.txt" 2>&1
  "$bin" db export --db "$db" "$out/$m.records.jsonl" >>"$log" 2>&1
  python3 - "$m" "$out" "$rc_plan" "$rc_tune" "$rc_retune" "$rc_build" "$rc_verify" "$rc_memcheck" \
    "$s_tune" "$s_retune" "$s_build" <<'PY'
import json, sys
m, out, *rest = sys.argv[1:]
rcs = dict(zip(["plan", "tune", "retune", "build", "verify", "memcheck"], map(int, rest[:6])))
secs = dict(zip(["tune", "retune", "build"], map(float, rest[6:])))
plan = json.load(open(f"{out}/{m}.plan.json")) if rcs["plan"] == 0 else {}
verify = open(f"{out}/{m}.verify.txt").read().strip().splitlines()
json.dump({"model": m, "rc": rcs, "seconds": secs, "coverage": plan.get("coverage"),
           "entries": [{"name": e["name"], "sizes": e["sizes"], "occurrences": len(e["occurrences"])}
                       for e in plan.get("entries", [])],
           "verify_last_line": verify[-1] if verify else ""}, open(f"{out}/{m}.json", "w"), indent=1)
PY
  python3 -c "import json,sys; m=json.load(open('/tmp/models_pkg_$m/share/fusekit_kernels/manifest.json')); sys.exit(0 if 'plan' in m else 1)" \
    2>/dev/null || { echo "$m: manifest lacks the plan" >>"$log"; failed=1; }
  for r in "$rc_plan" "$rc_tune" "$rc_retune" "$rc_build" "$rc_verify" "$rc_memcheck"; do
    [ "$r" -eq 0 ] || failed=1
  done
  echo "$m: plan=$rc_plan tune=$rc_tune retune=$rc_retune build=$rc_build verify=$rc_verify memcheck=$rc_memcheck"
done
exit $failed
