# shellcheck shell=bash
# layouts: the general-layout ops of examples/general_layouts (global average
# pooling, BatchNorm statistics, softmax over dim 1, transpose + bias + GELU)
# tuned on the GPU at ResNet/BERT-like shapes through the Halide backend (the
# NVRTC templates cannot take them), their winners verified, each packaged
# and its package verified through the C API, then timed against eager and
# torch.compile (bench/layouts_bench.py) -> tune_<op>.txt, verify_<op>.txt,
# verify_package_<op>.txt, records.jsonl, layouts_bench.json. DTYPES
# (f32,f16,bf16), BUDGET (6), BENCH_DTYPES (bf16,f32), LAYOUT_OPS (the four,
# space-separated). About 4 minutes (BUDGET=3 DTYPES=bf16 for a quick look).
need_bins fusekit
dtypes=${DTYPES:-f32,f16,bf16}
db=/tmp/fusekit-layouts.db
pkgs=/tmp/pkg-layouts
rm -rf "$db" "$pkgs"
declare -A sizes=([global_avg_pool]=32x2048x49 [batchnorm_stats]=32x256x3136 [softmax_dim1]=32x128x784
  [transpose_bias_gelu]=4096x1024)
layout_ops=${LAYOUT_OPS:-global_avg_pool batchnorm_stats softmax_dim1 transpose_bias_gelu}
for op in $layout_ops; do
  expr=$(cat "examples/general_layouts/$op.fk")
  step "tune $op at ${sizes[$op]}"
  timeout 120 "$bin/fusekit" tune --arch sm_90 --name "$op" --expr "$expr" --dtype "$dtypes" --budget "${BUDGET:-6}" \
    --sizes "${sizes[$op]}" --db "$db" >"$out/tune_$op.txt" 2>"$out/tune_progress_$op.txt"
  note "tune $op" $?
  timeout 60 "$bin/fusekit" verify --arch sm_90 --name "$op" --expr "$expr" --dtype "$dtypes" --sizes "${sizes[$op]}" \
    --db "$db" >"$out/verify_$op.txt" 2>>"$log"
  note "verify $op" $?
  step "package $op"
  timeout 90 "$bin/fusekit" build --arch sm_90 --name "$op" --expr "$expr" --db "$db" --out "$pkgs/$op" \
    --runtime-lib .device/lib/libfusekit_runtime.a --runtime-include runtime/include \
    --cuda-include /usr/local/cuda/include >>"$log" 2>&1
  note "build $op" $?
  package_verify "$pkgs/$op" "verify --package $op" 60 $((1 << 26)) >"$out/verify_package_$op.txt" 2>&1
  note "verify --package $op" $?
done
"$bin/fusekit" db export --db "$db" "$out/records.jsonl" >>"$log" 2>&1
note export $?
step "time against torch.compile"
timeout 150 python3 bench/layouts_bench.py --packages "$pkgs" --out "$out/layouts_bench.json" \
  --dtypes "${BENCH_DTYPES:-bf16,f32}" --ops "$(echo $layout_ops | tr ' ' ',')" >>"$log" 2>&1
note layouts_bench $?
finish
