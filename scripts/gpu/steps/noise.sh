# shellcheck shell=bash
# noise: how far two tunes of the same ops agree with each other, timed as the
# host issues the launches and queued behind a gate (`fusekit tune --timing`):
# each timing's tune runs twice, the four runs interleaved (issued, queued,
# issued, queued), then bench/timing_noise.py compares the same schedule's
# times run to run, the records' spreads, whether one run's winner is within
# 3 % of the other's best there, and queued over issued -> noise.json,
# noise.txt, TIMING-REP.jsonl. NOISE_OPS (relu_add,bias_gelu) at
# NOISE_SIZES (4096,65536,1048576), NOISE_ROW_OPS (softmax) at
# NOISE_ROW_SIZES (256x1024,32768x1024), DTYPES (f32,bf16), BUDGET (24),
# TUNE_TIMEOUT (120 s a tune).
need_bins fusekit
for rep in 1 2; do
  for timing in issued queued; do
    step "tune, timing $timing, run $rep"
    db=/tmp/fusekit-noise-$timing-$rep.db
    rm -f "$db"
    common=(--arch sm_90 --dtype "${DTYPES:-f32,bf16}" --backend nvrtc --budget "${BUDGET:-24}" --timing "$timing"
      --db "$db")
    timeout "${TUNE_TIMEOUT:-120}" "$bin/fusekit" tune "${common[@]}" --pattern "${NOISE_OPS:-relu_add,bias_gelu}" \
      --sizes "${NOISE_SIZES:-4096,65536,1048576}" >>"$log" 2>"$out/$timing-$rep-progress.txt"
    note "tune_pointwise_${timing}_$rep" $?
    timeout "${TUNE_TIMEOUT:-120}" "$bin/fusekit" tune "${common[@]}" --pattern "${NOISE_ROW_OPS:-softmax}" \
      --sizes "${NOISE_ROW_SIZES:-256x1024,32768x1024}" >>"$log" 2>>"$out/$timing-$rep-progress.txt"
    note "tune_rows_${timing}_$rep" $?
    "$bin/fusekit" db export --db "$db" "$out/$timing-$rep.jsonl" >>"$log" 2>&1
    note "export_${timing}_$rep" $?
  done
done
step compare
python3 bench/timing_noise.py "$out" >"$out/noise.txt" 2>>"$log"
note compare $?
cat "$out/noise.txt" >>"$log"
finish
