#!/usr/bin/env bash
# The reduction issue's GPU steps in one call: the GPU tests (row reductions
# included), copies of the byte counts the row ops move, a tune of every row
# op at the issue's shapes, and memcheck of the winners (SKIP_TESTS=1 leaves
# the GPU tests out; DTYPES, BUDGET, BACKENDS, SIZES narrow the tune,
# SPECIALIZE sets --specialize). Expects .device/ from scripts/prepare_device.sh.
# Writes at most 8 files under $OUT.
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
ops=${OPS:-softmax,log_softmax,layernorm,rmsnorm,add_layernorm,add_rmsnorm,bias_add_softmax}

step environment
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv; } >>"$log" 2>&1
missing=$(ldd "$bin/fusekit" "$bin/gpu_test" | grep "not found" || true)
if [ -n "$missing" ]; then echo "missing libraries: $missing" | tee -a "$log"; exit 1; fi

if [ -z "${SKIP_TESTS:-}" ]; then
  step gpu tests
  run_gpu_tests "${TEST_TIMEOUT:-240}"
fi

step copy bandwidth at the row ops byte counts, MiB copied: 64 96 128 192 256 384 512 1024
for mb in 64 96 128 192 256 384 512 1024; do
  timeout 30 "$bin/copy_bandwidth" $((mb * 1048576)) 50 >>"$out/copy.jsonl" 2>>"$log"
done
tail -8 "$out/copy.jsonl" >>"$log"

step tune the row ops
timeout ${TUNE_TIMEOUT:-300} "$bin/fusekit" tune --arch sm_90 --pattern $ops --dtype ${DTYPES:-f32,bf16} \
  --backend ${BACKENDS:-nvrtc,halide} --budget ${BUDGET:-16} ${SPECIALIZE:+--specialize $SPECIALIZE} ${SIZES:+--sizes $SIZES} --db /tmp/rows.db >"$out/tune.txt" 2>"$out/tune_progress.txt"
echo "tune rc=$?" | tee -a "$log"
"$bin/fusekit" db export --db /tmp/rows.db "$out/records.jsonl" >>"$log" 2>&1

step copy bandwidth again
for mb in 128 256 512 1024; do
  timeout 30 "$bin/copy_bandwidth" $((mb * 1048576)) 50 >>"$out/copy.jsonl" 2>>"$log"
done

step memcheck of every winner
timeout ${MEMCHECK_TIMEOUT:-90} compute-sanitizer --tool memcheck --error-exitcode 9 "$bin/fusekit" verify \
  --arch sm_90 --pattern $ops --dtype ${DTYPES:-f32,bf16} --sizes ${MEMCHECK_SIZES:-256x1024,3000x3001,9x65537} --db /tmp/rows.db >"$out/memcheck.txt" 2>&1
echo "memcheck rc=$?" | tee -a "$log"
tail -3 "$out/memcheck.txt" | tee -a "$log"
step done
