#!/usr/bin/env bash
# Everything fusekit does on a GPU machine in one call: check the carried
# binaries link, run the GPU tests, measure copy bandwidth, tune the whole
# catalog, export the database, and verify the winners under memcheck.
# PATTERNS (comma-separated), DTYPES, SIZES, BACKENDS and BUDGET narrow the tune.
#
# Expects .device/bin (stripped fusekit, gpu_test, copy_bandwidth) and
# .device/debs (Debian runtime packages the GPU machine lacks; see
# scripts/prepare_device.sh). Writes at most 8 files under $OUT.
set -uo pipefail
source "$(dirname "$0")/device_env.sh"

step environment
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv; uname -r; } >>"$log" 2>&1
missing=$(ldd "$bin/fusekit" "$bin/gpu_test" | grep "not found" || true)
if [ -n "$missing" ]; then echo "missing libraries: $missing" | tee -a "$log"; exit 1; fi

step gpu tests
run_gpu_tests 300

step copy bandwidth before tuning
timeout 60 "$bin/copy_bandwidth" | tee -a "$log" "$out/copy.jsonl"

step tune
# shellcheck disable=SC2086
timeout ${TUNE_TIMEOUT:-360} "$bin/fusekit" tune --arch sm_90 --dtype ${DTYPES:-f32,bf16} ${PATTERNS:+--pattern $PATTERNS} \
  ${BACKENDS:+--backend $BACKENDS} \
  --sizes ${SIZES:-4096,65536,1048576,67108864} --budget ${BUDGET:-24} --db /tmp/h200.db \
  >"$out/tune.txt" 2>"$out/tune_progress.txt"
echo "tune rc=$?" | tee -a "$log"

step copy bandwidth after tuning
timeout 60 "$bin/copy_bandwidth" | tee -a "$log" "$out/copy.jsonl"

step export
"$bin/fusekit" db export --db /tmp/h200.db "$out/h200.jsonl" >>"$log" 2>&1

step memcheck of every winner
timeout ${MEMCHECK_TIMEOUT:-150} compute-sanitizer --tool memcheck --error-exitcode 9 \
  "$bin/fusekit" verify --arch sm_90 --dtype ${DTYPES:-f32,bf16} ${PATTERNS:+--pattern $PATTERNS} \
  --sizes ${MEMCHECK_SIZES:-4096,65536} --db /tmp/h200.db \
  >"$out/memcheck.txt" 2>&1
echo "memcheck rc=$?" | tee -a "$log"
tail -3 "$out/memcheck.txt" | tee -a "$log"
step done
