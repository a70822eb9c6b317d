# shellcheck shell=bash
# ramp: whether a small kernel runs slower, and the SM clock lower, just after
# the GPU sat idle (bench/idle_ramp.py, CuPy; needs no fusekit binary) ->
# ramp.json, ramp.txt. RAMP_IDLES (0,0.2,1,3 s), RAMP_PRESPIN (0,50 ms),
# RAMP_TRIALS (5), RAMP_TIMEOUT (200 s).
step "idle gaps ${RAMP_IDLES:-0,0.2,1,3} s, pre-spin ${RAMP_PRESPIN:-0,50} ms"
timeout "${RAMP_TIMEOUT:-200}" python3 bench/idle_ramp.py --out "$out/ramp.json" --idles "${RAMP_IDLES:-0,0.2,1,3}" \
  --prespin-ms "${RAMP_PRESPIN:-0,50}" --trials "${RAMP_TRIALS:-5}" >"$out/ramp.txt" 2>>"$log"
note ramp $?
cat "$out/ramp.txt" >>"$log"
finish
