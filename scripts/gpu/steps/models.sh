# shellcheck shell=bash
# models: each committed ONNX model (tests/data/models) planned at two sizes
# of its symbolic dims, `fusekit tune --plan` on this GPU (nvrtc, BUDGET
# schedules per entry and size, 8; the general-layout entries, ResNet's
# global pool, with halide), tuned again to show the resume measures
# nothing, `fusekit build --plan`, every kernel verified through the
# package's C API and once under memcheck -> <model>.json (coverage, entries,
# exit codes, seconds), plan, records and logs. MODELS narrows the models
# ("bert resnet50"), MODEL_TIMEOUT caps each tune (240 s).
need_bins fusekit
arch=${ARCH:-sm_90}
budget=${BUDGET:-8}

# Two sizes per model: the symbolic dims each model has.
dims_for() {
  case "$1" in
    resnet50*) echo "--dim batch=1,32" ;;
    *) echo "--dim batch=8 --dim seq=128,512" ;;
  esac
}

# timed NAME CMD...: runs CMD, noting NAME's exit code and seconds.
timed() {
  local name=$1 t0 rc
  shift
  t0=$(date +%s.%N)
  "$@"
  rc=$?
  echo "$m $name seconds=$(awk "BEGIN{print $(date +%s.%N) - $t0}")" >>"$out/$m.times"
  note "$m $name" "$rc"
  return "$rc"
}

# model_step MODEL: plan, tune, retune, build, verify and memcheck one model.
model_step() {
  local model=$1 db=/tmp/models_$m.db dir=/tmp/models_pkg_$m mlog=$out/$m.log
  rm -rf "$db" "$dir"
  # shellcheck disable=SC2046
  timed plan "$bin/fusekit" plan "$model" $(dims_for "$m") --out "$out/$m.plan.json" >"$mlog" 2>&1 || return
  timed tune timeout "${MODEL_TIMEOUT:-240}" "$bin/fusekit" tune --plan "$out/$m.plan.json" --arch "$arch" \
    --db "$db" --backend nvrtc --budget "$budget" --specialize 0 --hint-twins 0 >>"$mlog" 2>"$out/$m.tune_progress.txt"
  # Entries on a general layout (a global pool, `mean(..., hw)`) only Halide
  # builds: a plan of just those, tuned with it, so build finds every entry.
  python3 -c "import json,sys; p=json.load(open(sys.argv[1])); p['entries']=[e for e in p['entries'] if ', hw)' in e['expr']]
json.dump(p, open(sys.argv[2], 'w')); sys.exit(0 if p['entries'] else 3)" "$out/$m.plan.json" "$out/$m.halide_plan.json"
  [ $? -eq 0 ] && timed tune_halide timeout "${MODEL_TIMEOUT:-240}" "$bin/fusekit" tune --plan "$out/$m.halide_plan.json" \
    --arch "$arch" --db "$db" --backend halide --budget "$budget" >>"$mlog" 2>>"$out/$m.tune_progress.txt"
  timed retune timeout 60 "$bin/fusekit" tune --plan "$out/$m.plan.json" --arch "$arch" --db "$db" \
    --backend nvrtc --budget "$budget" --specialize 0 --hint-twins 0 >>"$mlog" 2>&1
  timed build timeout 240 "$bin/fusekit" build --plan "$out/$m.plan.json" --arch "$arch" --db "$db" --out "$dir" \
    --runtime-lib .device/lib/libfusekit_runtime.a --runtime-include runtime/include \
    --cuda-include /usr/local/cuda/include >>"$mlog" 2>&1 || return
  timed verify timeout 180 "$bin/fusekit" verify --package "$dir" >"$out/$m.verify.txt" 2>&1
  timed memcheck timeout 240 "${memcheck[@]}" "$bin/fusekit" verify --package "$dir" --max-elements 1048576 \
    >"$out/$m.memcheck.txt" 2>&1
  "$bin/fusekit" db export --db "$db" "$out/$m.records.jsonl" >>"$mlog" 2>&1
  python3 -c "import json,sys; sys.exit(0 if 'plan' in json.load(open(sys.argv[1])) else 1)" \
    "$dir/share/fusekit_kernels/manifest.json" 2>>"$mlog"
  note "$m manifest names its plan" $?
}

for model in tests/data/models/*.onnx; do
  m=$(basename "$model" .onnx)
  [ -n "${MODELS:-}" ] && [[ " $MODELS " != *" $m "* ]] && continue
  step "model $m"
  model_step "$model"
done
finish
