# shellcheck shell=bash
# gemm: GEMM + epilogue (issue 26): the GEMM GPU tests (two under memcheck),
# the race of every FFN case (cuBLASLt's fused epilogue against GEMM plus
# fusekit's tail) -> race.jsonl, records.jsonl, and PyTorch eager and
# torch.compile on the same cases -> peers.json, peers.md. COMPILE_BUDGET
# caps torch.compile's max-autotune per case (180 s); PEERS=0 skips them.
need_bins gemm_gpu_test gemm_race
step gemm gpu tests
timeout 240 "$bin/gemm_gpu_test" --gtest_output=json:"$out/gemm_gpu_test.json" >>"$log" 2>&1
note gemm_gpu_test $?
step gemm gpu tests under memcheck
timeout 240 "${memcheck[@]}" "$bin/gemm_gpu_test" \
  --gtest_filter='GemmGpu.StoredPlanDirectAndInGraph:GemmGpu.TwoProductsSiluMultiply' >"$out/memcheck.txt" 2>&1
note memcheck $?
tail -3 "$out/memcheck.txt" >>"$log"
step race
timeout 300 "$bin/gemm_race" --out "$out/race.jsonl" --records "$out/records.jsonl" >"$out/race.txt" 2>&1
note race $?
tail -20 "$out/race.txt" >>"$log"
if [ "${PEERS:-1}" != 0 ]; then
  step peers
  timeout 420 python3 bench/gemm_peers.py --race "$out/race.jsonl" --out "$out/peers.json" --md "$out/peers.md" \
    --compile-budget-s "${COMPILE_BUDGET:-180}" >"$out/peers.txt" 2>&1
  note peers $?
  cat "$out/peers.md" >>"$log" 2>/dev/null
fi
finish
