#!/usr/bin/env bash
# The runtime issue's GPU steps in one call (NOT RUN YET: written in the
# session of 2026-11-30 after its device time was spent). Expects .device/ from
# scripts/prepare_device.sh (with dispatch_bench and lib/libfusekit_runtime.a)
# and a tuning database exported as JSON lines in $RECORDS.
set -uo pipefail
source "$(dirname "$0")/device_env.sh"

step package
"$bin/fusekit" db import --db /tmp/p.db "${RECORDS:?}" >>"$log" 2>&1
"$bin/fusekit" build --arch sm_90 --db /tmp/p.db --out /tmp/pkg --runtime-lib .device/lib/libfusekit_runtime.a \
  --runtime-include runtime/include --cuda-include /usr/local/cuda/include >>"$log" 2>&1
echo "build rc=$?" | tee -a "$log"

step example against the package
cmake -S examples/fused_relu_add -B /tmp/ex -DCMAKE_PREFIX_PATH=/tmp/pkg >>"$log" 2>&1 && cmake --build /tmp/ex >>"$log" 2>&1
/tmp/ex/fused_relu_add 2>&1 | tee -a "$log"
compute-sanitizer --tool memcheck /tmp/ex/fused_relu_add >"$out/memcheck_example.txt" 2>&1
echo "memcheck rc=$?" | tee -a "$log"

step dispatch benchmarks
"$bin/dispatch_bench" --benchmark_out="$out/dispatch_bench.json" --benchmark_out_format=json 2>&1 | tee -a "$log"
