# shellcheck shell=bash
# gemm: GEMM + epilogue (issue 26): the GEMM GPU tests (two under memcheck),
# the race of every FFN case (cuBLASLt's fused epilogue against GEMM plus
# fusekit's tail) -> race.jsonl, records.jsonl; a package of the winners
# verified through its C API -> verify_package.txt; and PyTorch eager and
# torch.compile on the same cases -> peers.json, peers.md. COMPILE_BUDGET
# caps torch.compile's max-autotune over all cases (180 s); PEERS=0 skips
# them; GEMM_TESTS=0 skips the tests, memcheck and package (a call for the
# race and its peers alone); CASES="bert_down gpt2_up" narrows the race and
# so its peers; SPACE=N times N configurations of cuBLASLt's algorithm space
# per plan beyond the heuristic's answers (48; 0: none).
need_bins gemm_gpu_test gemm_race
if [ "${GEMM_TESTS:-1}" != 0 ]; then
  step gemm gpu tests
  timeout 240 "$bin/gemm_gpu_test" --gtest_output=json:"$out/gemm_gpu_test.json" >>"$log" 2>&1
  note gemm_gpu_test $?
  step gemm gpu tests under memcheck
  timeout 240 "${memcheck[@]}" "$bin/gemm_gpu_test" \
    --gtest_filter='GemmGpu.StoredPlanDirectAndInGraph:GemmGpu.TwoProductsSiluMultiply' >"$out/memcheck.txt" 2>&1
  note memcheck $?
  tail -3 "$out/memcheck.txt" >>"$log"
fi
step race
timeout 450 "$bin/gemm_race" --out "$out/race.jsonl" --records "$out/records.jsonl" ${CASES:+--cases "${CASES// /,}"} \
  ${SPACE:+--space "$SPACE"} >"$out/race.txt" 2>&1
note race $?
tail -20 "$out/race.txt" >>"$log"
if [ "${GEMM_TESTS:-1}" != 0 ]; then
  step package of the raced GEMMs, verified through its C API
  db=/tmp/gemm-records.db gemm_pkg=/tmp/gemm-pkg
  rm -rf "$db" "$gemm_pkg"
  "$bin/fusekit" db import --db "$db" "$out/records.jsonl" >>"$log" 2>&1
  "$bin/fusekit" build --arch sm_90 --db "$db" --out "$gemm_pkg" --gemm "bert_up:out = gelu(acc + b[col])" \
    --gemm "bert_down:out = acc + b[col] + r" --gemm "gpt2_up:out = gelu_tanh(acc + b[col])" \
    --gemm "llama_gate_up:out = silu(acc) * acc2" --runtime-lib .device/lib/libfusekit_runtime.a \
    --runtime-include runtime/include --cuda-include /usr/local/cuda/include >>"$log" 2>&1
  note "build --gemm" $?
  # M*N*K up to 2^33: the CPU reference GEMM of the 8192-token buckets would take minutes.
  package_verify "$gemm_pkg" "verify --package" 240 $((1 << 33)) >"$out/verify_package.txt" 2>&1
  note "verify --package" $?
  tail -2 "$out/verify_package.txt" >>"$log"
fi
if [ "${PEERS:-1}" != 0 ]; then
  step peers
  timeout $((${COMPILE_BUDGET:-180} + 240)) python3 bench/gemm_peers.py --race "$out/race.jsonl" --out "$out/peers.json" --md "$out/peers.md" \
    --compile-budget-s "${COMPILE_BUDGET:-180}" >"$out/peers.txt" 2>&1
  note peers $?
  cat "$out/peers.md" >>"$log" 2>/dev/null
fi
finish
