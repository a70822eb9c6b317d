# shellcheck shell=bash
# rows-halide: the Halide row schedule end to end: a tune of the row ops with
# the Halide backend alone (f32: Halide 14 cannot build bf16), a package of its
# records in /tmp/pkg, so that every row op's tuned variants are Halide kernels
# (vector schedules taken for rows of a multiple of their vector only), and
# fusekit verify --package of it, plain and under memcheck -> tune.txt,
# tune_progress.txt, records.jsonl, verify_package.txt. OPS (every row op),
# BUDGET (12), SIZES (32768x1024,8192x4096,4096x16384,1024x65536,3000x3001),
# TUNE_TIMEOUT (200 s), VERIFY_TIMEOUT (90 s), VERIFY_MAX (17000000),
# MEMCHECK_TIMEOUT (150 s), MEMCHECK_MAX (17000000).
need_bins fusekit
ops=${OPS:-softmax,log_softmax,layernorm,rmsnorm,add_layernorm,add_rmsnorm,bias_add_softmax}
db=/tmp/fusekit-$(basename "$out").db
rm -f "$db"
step tune the row ops, Halide only
timeout "${TUNE_TIMEOUT:-200}" "$bin/fusekit" tune --arch sm_90 --pattern "$ops" --dtype f32 --backend halide \
  --budget "${BUDGET:-12}" --sizes "${SIZES:-32768x1024,8192x4096,4096x16384,1024x65536,3000x3001}" --db "$db" \
  >"$out/tune.txt" 2>"$out/tune_progress.txt"
note tune $?
"$bin/fusekit" db export --db "$db" "$out/records.jsonl" >>"$log" 2>&1
note export $?
remember_tune "$db" "$ops" f32 256x1024,3000x3001,9x65537 "$out/records.jsonl"
step package of the Halide winners
build_package "$pkg" "$out/records.jsonl"
note build $?
{ package_verify "$pkg" verify "${VERIFY_TIMEOUT:-90}" "${VERIFY_MAX:-17000000}"
  package_verify "$pkg" memcheck "${MEMCHECK_TIMEOUT:-150}" "${MEMCHECK_MAX:-17000000}" "${memcheck[@]}"; } \
  >"$out/verify_package.txt" 2>&1
grep "checks\|ERROR SUMMARY" "$out/verify_package.txt" | tee -a "$log"
while read -r line; do note "${line% rc=*}" "${line##* rc=}"; done < <(grep -o "^\(verify\|memcheck\) rc=[0-9]*" "$out/verify_package.txt")
finish
