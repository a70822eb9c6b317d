# shellcheck shell=bash
# memcheck: every winner of the last tune or rows step of this call rebuilt
# and checked by fusekit verify under compute-sanitizer's memcheck ->
# memcheck.txt. MEMCHECK_SIZES (that step's: 4096,65536 or
# 256x1024,3000x3001,9x65537), MEMCHECK_TIMEOUT (150 s).
need_bins fusekit
if [ ! -f "$last_tune" ]; then echo "memcheck: no tune or rows step ran before it in this call" | tee -a "$log"; exit 1; fi
# shellcheck disable=SC1090
source "$last_tune"
step memcheck of every winner
# shellcheck disable=SC2154
timeout "${MEMCHECK_TIMEOUT:-150}" "${memcheck[@]}" "$bin/fusekit" verify --arch sm_90 --dtype "$tune_dtypes" \
  ${tune_patterns:+--pattern "$tune_patterns"} --sizes "${MEMCHECK_SIZES:-$tune_memcheck_sizes}" --db "$tune_db" \
  >"$out/memcheck.txt" 2>&1
note memcheck $?
tail -3 "$out/memcheck.txt" | tee -a "$log"
finish
