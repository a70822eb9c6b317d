#!/usr/bin/env bash
# The runtime issue's GPU steps in one call, plus the 64 M rows re-timed next
# to copies of the same byte counts. Expects .device/ from
# scripts/prepare_device.sh (its debs-bench/ too, for dispatch_bench) and the tuning records of a whole-catalog run
# (gpu_session.sh's export) in $RECORDS (JSONL files, space-separated). Writes at most 8 files under $OUT.
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
pkg=/tmp/pkg

step environment
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv; } >>"$log" 2>&1

if [ -z "${SKIP_TUNE:-}" ]; then
step copy bandwidth at the byte counts of the 64 M-element kernels, and 1 GiB
# Bytes copied = half the traffic: f32/bf16 with 2, 3 and 4 tensors.
for b in 134217728 201326592 268435456 402653184 536870912 1073741824; do
  timeout 30 "$bin/copy_bandwidth" $b 50 | tee -a "$log" "$out/copy.jsonl"
done

step tune 64 M elements again, next to those copies
timeout ${TUNE_TIMEOUT:-200} "$bin/fusekit" tune --arch sm_90 --dtype f32,bf16 --sizes 67108864 \
  --budget ${BUDGET:-24} --db /tmp/b.db >>"$log" 2>"$out/tune_progress.txt"
echo "tune rc=$?" | tee -a "$log"
"$bin/fusekit" db export --db /tmp/b.db "$out/records64.jsonl" >>"$log" 2>&1
for b in 268435456 536870912 1073741824; do
  timeout 30 "$bin/copy_bandwidth" $b 50 | tee -a "$log" "$out/copy.jsonl"
done
fi

step package
# shellcheck disable=SC2086
build_package "$pkg" ${RECORDS:?}
echo "build rc=$?" | tee -a "$log"
du -sh "$pkg/lib"/* >>"$log" 2>&1

step every kernel of the package against the CPU reference, cubins then PTX
{ timeout 150 "$bin/fusekit" verify --package "$pkg"; echo "verify rc=$?";
  FUSEKIT_PTX_ONLY=1 timeout 120 "$bin/fusekit" verify --package "$pkg"; echo "verify ptx rc=$?"; } \
  >"$out/verify_package.txt" 2>&1
grep "rc=\|checks" "$out/verify_package.txt" | tee -a "$log"

step example against the package
cmake -S examples/fused_relu_add -B /tmp/ex -DCMAKE_PREFIX_PATH="$pkg" -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc >>"$log" 2>&1 && cmake --build /tmp/ex >>"$log" 2>&1
/tmp/ex/fused_relu_add 2>&1 | tee -a "$log"
echo "example rc=${PIPESTATUS[0]}" | tee -a "$log"

step memcheck: the example, and the package up to 1 M elements, cubins and PTX
{ compute-sanitizer --tool memcheck --error-exitcode 9 /tmp/ex/fused_relu_add; echo "memcheck example rc=$?";
  timeout 200 compute-sanitizer --tool memcheck --error-exitcode 9 "$bin/fusekit" verify --package "$pkg" \
    --max-elements 1100000; echo "memcheck package rc=$?";
  FUSEKIT_PTX_ONLY=1 timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 "$bin/fusekit" verify \
    --package "$pkg" --max-elements 1100000; echo "memcheck package ptx rc=$?"; } >"$out/memcheck.txt" 2>&1
grep "rc=\|ERROR SUMMARY\|checks" "$out/memcheck.txt" | tee -a "$log"

step dispatch benchmarks
timeout 120 "$bin/dispatch_bench" --benchmark_repetitions=5 --benchmark_out="$out/dispatch_bench.json" \
  --benchmark_out_format=json >>"$log" 2>&1
echo "dispatch_bench rc=$?" | tee -a "$log"
step done
