#!/usr/bin/env bash
# The Halide row schedule end to end in one device call: the GPU tests
# (SKIP_TESTS=1 leaves them out), a tune of the row ops with the Halide
# backend alone (f32: Halide 14 cannot build bf16), a package built from
# its records, so that every row op's tuned variants are Halide kernels
# (vector schedules taken for rows of a multiple of their vector only), and
# fusekit verify --package of it, plain and under memcheck. Expects .device/
# from scripts/prepare_device.sh. Writes at most 8 files under $OUT.
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
ops=${OPS:-softmax,log_softmax,layernorm,rmsnorm,add_layernorm,add_rmsnorm,bias_add_softmax}

step environment
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv; } >>"$log" 2>&1

if [ -z "${SKIP_TESTS:-}" ]; then
  step gpu tests
  run_gpu_tests "${TEST_TIMEOUT:-240}"
fi

step tune the row ops, Halide only
timeout ${TUNE_TIMEOUT:-200} "$bin/fusekit" tune --arch sm_90 --pattern $ops --dtype f32 --backend halide \
  --budget ${BUDGET:-12} --sizes ${SIZES:-32768x1024,8192x4096,4096x16384,1024x65536,3000x3001} --db /tmp/halide.db \
  >"$out/tune.txt" 2>"$out/tune_progress.txt"
echo "tune rc=$?" | tee -a "$log"
"$bin/fusekit" db export --db /tmp/halide.db "$out/records.jsonl" >>"$log" 2>&1

step package of the Halide winners
build_package /tmp/halide-pkg "$out/records.jsonl" && echo "build ok" | tee -a "$log"
{ package_verify /tmp/halide-pkg verify ${VERIFY_TIMEOUT:-90} ${VERIFY_MAX:-17000000}
  package_verify /tmp/halide-pkg memcheck ${MEMCHECK_TIMEOUT:-150} ${MEMCHECK_MAX:-17000000} "${memcheck[@]}"; } >"$out/verify_package.txt" 2>&1
grep "rc=\|checks\|ERROR SUMMARY" "$out/verify_package.txt" | tee -a "$log"
step done
