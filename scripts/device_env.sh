# Sourced by the GPU session scripts: unpacks the carried Debian runtime
# packages into a scratch folder (never into /), puts them and CUDA on the
# library path, and defines $out, $bin, $log and step().
out=${OUT:?set OUT to a results folder}
deps=/tmp/fusekit-deps
mkdir -p "$deps"
for d in .device/debs/*.deb .device/debs-bench/*.deb; do [ -e "$d" ] && dpkg -x "$d" "$deps"; done
export LD_LIBRARY_PATH="$deps/usr/lib/x86_64-linux-gnu:$deps/lib/x86_64-linux-gnu:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
bin=.device/bin
log="$out/log.txt"
step() { echo "=== $* ($(date -u +%T))" | tee -a "$log"; }

# build_package DIR RECORDS...: imports the JSONL records into a fresh
# database and builds the sm_90 package from it in DIR.
build_package() {
  local pkg=$1 db=/tmp/package-records.db
  shift
  rm -rf "$pkg" "$db"
  for r in "$@"; do "$bin/fusekit" db import --db "$db" "$r" >>"$log" 2>&1 || return 1; done
  /usr/bin/time -f "build took %e s" "$bin/fusekit" build --arch sm_90 --pattern all --db "$db" --out "$pkg" \
    --runtime-lib .device/lib/libfusekit_runtime.a --runtime-include runtime/include \
    --cuda-include /usr/local/cuda/include >>"$log" 2>&1
}

# package_verify PKG LABEL SECONDS MAX_ELEMENTS [WRAPPER...]: every kernel of
# the package against the CPU reference through its C API (fusekit verify
# --package), under WRAPPER if given (e.g. "${memcheck[@]}"); then prints
# "LABEL rc=N". FUSEKIT_PTX_ONLY=1 in the environment checks the PTX instead.
memcheck=(compute-sanitizer --tool memcheck --error-exitcode 9)
package_verify() {
  local pkg=$1 label=$2 limit=$3 max=$4
  shift 4
  timeout "$limit" "$@" "$bin/fusekit" verify --package "$pkg" --max-elements "$max"
  echo "$label rc=$?"
}

# run_gpu_tests SECONDS: the GPU tests (ctest label gpu, one binary), their
# results in $out/gpu_test.json, "gpu_test rc=N" in the log.
run_gpu_tests() {
  timeout "$1" "$bin/gpu_test" --gtest_output=json:"$out/gpu_test.json" >>"$log" 2>&1
  echo "gpu_test rc=$?" | tee -a "$log"
}
