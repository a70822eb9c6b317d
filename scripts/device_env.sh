# shellcheck shell=bash disable=SC2034
# The GPU machine's environment, sourced once by scripts/gpu.sh (or by hand:
# `OUT=... source scripts/device_env.sh`): unpacks the carried Debian runtime
# packages into a scratch folder (never into /), puts them and CUDA on the
# library path, and defines $out, $log, $bin, $pkg and the helpers below.
# gpu.sh points $out and $log at each step's folder before running it.
out=${OUT:?set OUT to a results folder}
mkdir -p "$out"
deps=/tmp/fusekit-deps
mkdir -p "$deps"
for d in .device/debs/*.deb .device/debs-xml/*.deb .device/debs-bench/*.deb; do [ -e "$d" ] && dpkg -x "$d" "$deps"; done
export LD_LIBRARY_PATH="$deps/usr/lib/x86_64-linux-gnu:$deps/lib/x86_64-linux-gnu:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
bin=.device/bin
# Binaries carried gzipped (.device/gz, from scripts/prepare_device.sh) are
# unpacked beside any carried plain, a third of the carry's room for them.
for f in .device/gz/*.gz; do
  [ -e "$f" ] || continue
  mkdir -p "$bin"
  gunzip -c "$f" >"$bin/$(basename "$f" .gz)" && chmod +x "$bin/$(basename "$f" .gz)"
done
log="$out/log.txt"
# The package that the package, verify, example, dispatch, profile and peers
# steps share within one call (PACKAGE=DIR: one built elsewhere and carried).
pkg=${PACKAGE:-/tmp/pkg}
# The last tune or rows step of the call leaves its database, what it tuned
# and its exported records here, for the memcheck and package steps.
last_tune=/tmp/fusekit-last-tune
memcheck=(compute-sanitizer --tool memcheck --error-exitcode 9)
fails=0

step() { echo "=== $* ($(date -u +%T))" | tee -a "$log"; }

# note LABEL RC: logs "LABEL rc=RC" (gpu.sh's summary lists these) and counts
# a non-zero RC as a failure of the step.
note() {
  echo "$1 rc=$2" | tee -a "$log"
  [ "$2" -eq 0 ] || fails=$((fails + 1))
  return 0
}

# finish: ends a step, exiting non-zero when any noted command failed.
finish() {
  step "done"
  exit "$fails"
}

# need_bins NAME...: fails the step when a carried binary is absent or lacks
# a shared library on this machine.
need_bins() {
  local b missing
  for b in "$@"; do
    [ -x "$bin/$b" ] || { echo "no $bin/$b: run scripts/prepare_device.sh and carry .device/bin" | tee -a "$log"; exit 1; }
  done
  missing=$(for b in "$@"; do ldd "$bin/$b" 2>/dev/null; done | grep "not found" || true)
  if [ -n "$missing" ]; then echo "missing libraries: $missing" | tee -a "$log"; exit 1; fi
}

# copies MIB...: device-to-device copies of MIB MiB (bench/copy_bandwidth,
# median of 50), one JSON line each appended to $out/copy.jsonl; none given:
# its default, 1 GiB.
copies() {
  local mb
  if [ $# -eq 0 ]; then
    timeout 60 "$bin/copy_bandwidth" >>"$out/copy.jsonl" 2>>"$log"
    note copy_bandwidth $?
  fi
  for mb in "$@"; do
    timeout 30 "$bin/copy_bandwidth" $((mb * 1048576)) 50 >>"$out/copy.jsonl" 2>>"$log"
    note "copy_bandwidth $mb MiB" $?
  done
  tail -n "$(($# > 0 ? $# : 1))" "$out/copy.jsonl" >>"$log"
}

# remember_tune DB PATTERNS DTYPES MEMCHECK_SIZES RECORDS: what a tune step
# leaves for the memcheck and package steps after it.
remember_tune() {
  printf 'tune_db=%q\ntune_patterns=%q\ntune_dtypes=%q\ntune_memcheck_sizes=%q\ntune_records=%q\n' \
    "$1" "$2" "$3" "$4" "$5" >"$last_tune"
}

# build_package DIR RECORDS...: imports the JSONL records into a fresh
# database and builds the sm_90 package from it in DIR.
build_package() {
  local dir=$1 db=/tmp/package-records.db r
  shift
  rm -rf "$dir" "$db"
  for r in "$@"; do "$bin/fusekit" db import --db "$db" "$r" >>"$log" 2>&1 || return 1; done
  /usr/bin/time -f "build took %e s" "$bin/fusekit" build --arch sm_90 --pattern all --db "$db" --out "$dir" \
    --runtime-lib .device/lib/libfusekit_runtime.a --runtime-include runtime/include \
    --cuda-include /usr/local/cuda/include >>"$log" 2>&1
}

# need_package: fails the step unless $pkg holds a package, building it from
# $RECORDS (space-separated JSONL files) when it does not and they are given.
need_package() {
  [ -f "$pkg/lib/libfusekit_kernels.so" ] && return 0
  if [ -z "${RECORDS:-}" ]; then
    echo "no package in $pkg: run the package step first, or give RECORDS or PACKAGE" | tee -a "$log"
    exit 1
  fi
  need_bins fusekit
  # shellcheck disable=SC2086
  build_package "$pkg" $RECORDS
  note build $?
  [ -f "$pkg/lib/libfusekit_kernels.so" ] || exit 1
}

# package_verify PKG LABEL SECONDS MAX_ELEMENTS [WRAPPER...]: every kernel of
# the package against the CPU reference through its C API (fusekit verify
# --package), under WRAPPER if given (e.g. "${memcheck[@]}"); prints
# "LABEL rc=N" and returns N. FUSEKIT_PTX_ONLY=1 checks the PTX instead.
package_verify() {
  local dir=$1 label=$2 limit=$3 max=$4 rc
  shift 4
  timeout "$limit" "$@" "$bin/fusekit" verify --package "$dir" --max-elements "$max"
  rc=$?
  echo "$label rc=$rc"
  return "$rc"
}

# run_gpu_tests SECONDS: the GPU tests (ctest label gpu, one binary;
# TEST_FILTER: a --gtest_filter), their results in $out/gpu_test.json.
run_gpu_tests() {
  timeout "$1" "$bin/gpu_test" --gtest_output=json:"$out/gpu_test.json" ${TEST_FILTER:+--gtest_filter="$TEST_FILTER"} \
    >>"$log" 2>&1
  note gpu_test $?
}
