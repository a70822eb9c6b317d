# shellcheck shell=bash
# bcast: general numpy broadcasting (the nd and ndrows layouts) on the GPU.
# Tunes three broadcast expressions at model shapes with both backends (the
# tuner verifies every candidate against the CPU reference on an odd shape),
# packages each one's winners and verifies the package through its C API
# (cubins), then under memcheck -> tune_<name>.txt, verify_<name>.txt,
# memcheck_<name>.txt, records.jsonl. BUDGET (4), TUNE_TIMEOUT (60 s per
# expression). About 2-3 minutes.
need_bins fusekit
db=/tmp/fusekit-bcast.db
rm -f "$db"
# name|expression|sizes (outermost first)
exprs=(
  "bert_mask_softmax|s = x * 0.125 + m[d0,d3]; out = exp(s - max(s, col)) / sum(exp(s - max(s, col)), col)|8x12x128x128,2x12x512x512"
  "pos_table_add|out = x + pos[d0,d1] + b[d0]|8x128x768,4x512x768"
  "head_scale_rmsnorm|y = x * h[d2]; out = y * rsqrt(mean(y * y, col) + 1e-6) * w[d0]|8x32x128x64"
)
for spec in "${exprs[@]}"; do
  IFS='|' read -r name expr sizes <<<"$spec"
  step "tune $name ($expr) at $sizes"
  timeout "${TUNE_TIMEOUT:-60}" "$bin/fusekit" tune --arch sm_90 --expr "$expr" --name "$name" --sizes "$sizes" \
    --dtype f32,bf16 --backend nvrtc,halide --budget "${BUDGET:-4}" --specialize 0 --db "$db" \
    >"$out/tune_$name.txt" 2>&1
  note "tune $name" $?
  tail -n 1 "$out/tune_$name.txt" | tee -a "$log"
  step "package $name and verify it, then under memcheck"
  dir=/tmp/fusekit-bcast-$name
  rm -rf "$dir"
  "$bin/fusekit" build --arch sm_90 --expr "$expr" --name "$name" --db "$db" --out "$dir" \
    --runtime-lib .device/lib/libfusekit_runtime.a --runtime-include runtime/include \
    --cuda-include /usr/local/cuda/include >>"$log" 2>&1
  note "build $name" $?
  package_verify "$dir" "verify $name" 60 17000000 >"$out/verify_$name.txt" 2>&1
  note "verify $name" $?
  package_verify "$dir" "memcheck $name" 90 1100000 "${memcheck[@]}" >"$out/memcheck_$name.txt" 2>&1
  note "memcheck $name" $?
  grep "ERROR SUMMARY\|checks" "$out/verify_$name.txt" "$out/memcheck_$name.txt" | tee -a "$log"
done
"$bin/fusekit" db export --db "$db" "$out/records.jsonl" >>"$log" 2>&1
note export $?
finish
