# shellcheck shell=bash
# tune: fusekit tune of the catalog for sm_90 -> tune.txt, tune_progress.txt,
# records.jsonl (the exported database). PATTERNS (comma-separated; default
# every op), DTYPES (f32,bf16), SIZES (4096,65536,1048576,67108864), BACKENDS
# (both), BUDGET (24), SPECIALIZE, TUNE_TIMEOUT (360 s). The memcheck and
# package steps after it take its database and records.
need_bins fusekit
db=/tmp/fusekit-$(basename "$out").db
dtypes=${DTYPES:-f32,bf16}
rm -f "$db"
step tune
# shellcheck disable=SC2086
timeout "${TUNE_TIMEOUT:-360}" "$bin/fusekit" tune --arch sm_90 --dtype "$dtypes" ${PATTERNS:+--pattern $PATTERNS} \
  ${BACKENDS:+--backend $BACKENDS} ${SPECIALIZE:+--specialize $SPECIALIZE} \
  --sizes "${SIZES:-4096,65536,1048576,67108864}" --budget "${BUDGET:-24}" --db "$db" \
  >"$out/tune.txt" 2>"$out/tune_progress.txt"
note tune $?
step export
"$bin/fusekit" db export --db "$db" "$out/records.jsonl" >>"$log" 2>&1
note export $?
remember_tune "$db" "${PATTERNS:-}" "$dtypes" 4096,65536 "$out/records.jsonl"
finish
