# shellcheck shell=bash
# guided: the model-guided search against today's full-budget search on ops
# the model never saw -> model.json (trained on the committed records, every GPU,
# without OPS), full.txt, guided.txt (tune's stdout: winners), *_progress.txt,
# full.jsonl, guided.jsonl and compare.json / compare.txt (per op, dtype and
# shape: timed candidates and winner time of each, and each run's wall time).
# OPS (silu_mul,layernorm), DTYPES (f32,bf16), BACKENDS (nvrtc), BUDGET (24),
# TUNE_TIMEOUT (100 s per run), MODES ("full guided"; "guided" alone when the
# full run's export is at hand from an earlier call), GUIDED_ARGS (more
# `fusekit tune` arguments for the guided run), TUNE_ARGS (for every run, e.g.
# `--timing queued`); GUIDED_B_ARGS set: a second
# guided run with those arguments instead (mode guided_b, after the others),
# compared with the full run in compare_b.json / compare_b.txt, so that two
# guided variants meet one full run in one call. About 5 minutes a run pair.
# Where .device/bin/guided_rematch was carried (REMATCH=0: skip), each guided
# run's pick after at most 8 timed and the full run's winner are timed again
# side by side -> rematch.json / rematch.txt (rematch_b.*), and so are the two
# runs' final winners -> rematch_final.* (rematch_b_final.*); REMATCH_PICKS=8
# times only the former. MODEL: a cost model carried with the tree (trained
# elsewhere, e.g. without one GPU's records; .json or .json.gz), used instead
# of training one here.
need_bins fusekit
ops=${OPS:-silu_mul,layernorm}
dtypes=${DTYPES:-f32,bf16}
train_db=/tmp/fusekit-guided-train.db
rm -f "$train_db"
if [ -n "${MODEL:-}" ]; then
  step "the carried cost model $MODEL"
  case $MODEL in
    *.gz) gunzip -c "$MODEL" >"$out/model.json" ;;  # gzipped to fit a call's carry
    *) cp "$MODEL" "$out/model.json" ;;
  esac
  note model $?
else
  step train a cost model without "$ops"
  "$bin/fusekit" db import --db "$train_db" bench/results/*records.jsonl.gz >>"$log" 2>&1
  note import $?
  "$bin/fusekit" model train --db "$train_db" --hold-out "$ops" --out "$out/model.json" >>"$log" 2>&1
  note train $?
fi
for mode in ${MODES:-full guided} ${GUIDED_B_ARGS:+guided_b}; do
  step "tune $ops ($mode)"
  db=/tmp/fusekit-guided-$mode.db
  rm -f "$db"
  # shellcheck disable=SC2206
  extra=(${TUNE_ARGS:-})
  # shellcheck disable=SC2206
  [ "$mode" = guided ] && extra+=(--search guided --cost-model "$out/model.json" ${GUIDED_ARGS:-})
  # shellcheck disable=SC2206
  [ "$mode" = guided_b ] && extra+=(--search guided --cost-model "$out/model.json" ${GUIDED_B_ARGS})
  start=$(date +%s)
  timeout "${TUNE_TIMEOUT:-100}" "$bin/fusekit" tune --arch sm_90 --pattern "$ops" --dtype "$dtypes" \
    --backend "${BACKENDS:-nvrtc}" --budget "${BUDGET:-24}" "${extra[@]}" --db "$db" \
    >"$out/$mode.txt" 2>"$out/${mode}_progress.txt"
  note "tune_$mode" $?
  echo "$mode wall_s $(($(date +%s) - start))" | tee -a "$log" >>"$out/walls.txt"
  "$bin/fusekit" db export --db "$db" "$out/$mode.jsonl" >>"$log" 2>&1
  note "export_$mode" $?
done
step compare
[ -f "$out/full.jsonl" ] || { note "compare (no full run)" 0; finish; }
python3 bench/guided_compare.py "$out/full.jsonl" "$out/guided.jsonl" "$out/walls.txt" "$out/compare.json" \
  >"$out/compare.txt" 2>>"$log"
note compare $?
cat "$out/compare.txt" >>"$log"
if [ -f "$out/guided_b.jsonl" ]; then
  python3 bench/guided_compare.py "$out/full.jsonl" "$out/guided_b.jsonl" "$out/walls.txt" "$out/compare_b.json" \
    >"$out/compare_b.txt" 2>>"$log"
  note compare_b $?
  cat "$out/compare_b.txt" >>"$log"
fi
[ -x "$bin/guided_rematch" ] && [ "${REMATCH:-1}" = 1 ] || finish
for mode in guided guided_b; do
  [ -f "$out/$mode.jsonl" ] || continue
  for picks in ${REMATCH_PICKS:-8 100000}; do  # the fastest of the first 8 timed; the final winner
    name=rematch${mode#guided}
    [ "$picks" = 8 ] || name+=_final
    step "time the full winner and the $mode pick ($name) again side by side"
    "$bin/guided_rematch" "$out/full.jsonl" "$out/$mode.jsonl" "$out/$name.json" "$picks" \
      >"$out/$name.txt" 2>>"$log"
    note "$name" $?
    cat "$out/$name.txt" >>"$log"
  done
done
finish
