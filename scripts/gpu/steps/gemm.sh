#!/usr/bin/env bash
# GEMM + epilogue (issue 26) on the GPU machine, from the repo root with the
# build carried in build/: the GPU tests of GEMM entries (and under memcheck),
# the race of every FFN case (cuBLASLt's first answer against fusekit's
# winner, records as JSON lines) and PyTorch eager / torch.compile on the
# same cases. Results under $OUT/gemm/. About 5-7 minutes on an H200 (torch.compile's
# max-autotune compiles take up to 180 s of it; cases past that budget say so).
set -uo pipefail
out="${OUT:?set OUT to a results folder}/gemm"
mkdir -p "$out"
if [ -f scripts/device_env.sh ] && ls .device/debs/*.deb >/dev/null 2>&1; then
  (OUT="$out"; source scripts/device_env.sh)
  export LD_LIBRARY_PATH="/tmp/fusekit-deps/usr/lib/x86_64-linux-gnu:/tmp/fusekit-deps/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
fi
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
rc=0
log="$out/log.txt"
step() { echo "=== $* ($(date -u +%T))" | tee -a "$log"; }

step gemm gpu tests
timeout 240 build/tests/gemm_gpu_test --gtest_output=json:"$out/gemm_gpu_test.json" >>"$log" 2>&1
t=$?; [ $t -eq 0 ] || rc=1
echo "gemm_gpu_test rc=$t" | tee -a "$log"

step gemm gpu tests under memcheck
timeout 240 compute-sanitizer --tool memcheck --error-exitcode 9 \
  build/tests/gemm_gpu_test --gtest_filter='GemmGpu.StoredPlanDirectAndInGraph:GemmGpu.TwoProductsSiluMultiply' \
  >"$out/memcheck.txt" 2>&1
t=$?; [ $t -eq 0 ] || rc=1
echo "memcheck rc=$t" | tee -a "$log"
tail -3 "$out/memcheck.txt" | tee -a "$log"

step race
timeout 300 build/bench/gemm_race --out "$out/race.jsonl" --records "$out/records.jsonl" \
  >"$out/race.txt" 2>&1 || rc=1
tail -20 "$out/race.txt" | tee -a "$log"

step peers
timeout 420 python3 bench/gemm_peers.py --race "$out/race.jsonl" --out "$out/peers.json" --md "$out/peers.md" \
  --compile-budget-s 180 >"$out/peers.txt" 2>&1 || rc=1
cat "$out/peers.md" 2>/dev/null | tee -a "$log"
step done rc=$rc
exit $rc
