# shellcheck shell=bash
# rows: the row ops tuned next to copies of the byte counts they move (64-1024
# MiB before, 128-1024 after) -> copy.jsonl, tune.txt, tune_progress.txt,
# records.jsonl. OPS (every row op), DTYPES (f32,bf16), BACKENDS
# (nvrtc,halide), BUDGET (16), SIZES (the tuner's row shapes), SPECIALIZE,
# TUNE_TIMEOUT (300 s). The memcheck step after it checks the winners at
# 256x1024,3000x3001,9x65537 (MEMCHECK_SIZES).
need_bins fusekit copy_bandwidth
ops=${OPS:-softmax,log_softmax,layernorm,rmsnorm,add_layernorm,add_rmsnorm,bias_add_softmax}
dtypes=${DTYPES:-f32,bf16}
db=/tmp/fusekit-$(basename "$out").db
rm -f "$db"
step copy bandwidth at the row ops byte counts
copies 64 96 128 192 256 384 512 1024
step tune the row ops
# shellcheck disable=SC2086
timeout "${TUNE_TIMEOUT:-300}" "$bin/fusekit" tune --arch sm_90 --pattern "$ops" --dtype "$dtypes" \
  --backend "${BACKENDS:-nvrtc,halide}" --budget "${BUDGET:-16}" ${SPECIALIZE:+--specialize $SPECIALIZE} \
  ${SIZES:+--sizes $SIZES} --db "$db" >"$out/tune.txt" 2>"$out/tune_progress.txt"
note tune $?
"$bin/fusekit" db export --db "$db" "$out/records.jsonl" >>"$log" 2>&1
note export $?
step copy bandwidth again
copies 128 256 512 1024
remember_tune "$db" "$ops" "$dtypes" 256x1024,3000x3001,9x65537 "$out/records.jsonl"
finish
