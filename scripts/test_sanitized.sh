#!/usr/bin/env bash
# The fast CPU tests built with AddressSanitizer and UndefinedBehaviorSanitizer
# in their own build folder (SANITIZE_BUILD_DIR, default build-asan): the
# expression limits, parser and grammar fuzzer, the tuning database, the
# schedules, the runtime (over its fake driver), and the CLI's hostile-input
# tests with the JSONL import fuzzer and the random command lines, which run
# the sanitized fusekit binary. Any sanitizer report fails the run: one aborts
# its process (a test, or the binary a test runs and checks the exit of), and
# ASan's reports of every process, also of a child such as the isolated Halide
# build, are written under the build folder and checked at the end (UBSan's
# runtime beside ASan's ignores log_path and prints to stderr).
# -O1 -g1 keeps a cold build short; SANITIZE_JOBS sets its parallelism
# (default: every core).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install_deps.sh
dir=${SANITIZE_BUILD_DIR:-build-asan}
export PATH="${CUDAToolkit_ROOT:-/usr/local/cuda}/bin:$PATH"
flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
[ -f "$dir/CMakeCache.txt" ] ||
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Sanitize -DCMAKE_CXX_FLAGS_SANITIZE="-O1 -g1" \
    -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
    -DFUSEKIT_BUILD_BENCH=OFF >/dev/null
cmake --build "$dir" -j "${SANITIZE_JOBS:-$(nproc)}" \
  --target generator_test tunedb_test schedules_test runtime_test cli_test fusekit >&2
reports=$(cd "$dir" && pwd)/sanitizer-reports
rm -rf "$reports"
mkdir -p "$reports"
# abort_on_error: a report is a signal, never an exit code that a test of
# exit statuses (0, 1, 2) could take for a result.
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:log_path=$reports/asan
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:abort_on_error=1:log_path=$reports/ubsan
failed=0
run() {
  echo "== $*" >&2
  "$@" || { echo "FAILED (exit $?): $*" >&2; failed=1; }
}
run "$dir/tests/generator_test" --gtest_filter='ExprLimits*:GrammarFuzz*:ExprParser*'
run "$dir/tests/tunedb_test"
run "$dir/tests/schedules_test"
run "$dir/tests/runtime_test"
run "$dir/tests/cli_test" --gtest_filter='ImportFuzz*:Hostile*'
# A file with only warnings is no report: Halide runs its lowering on a stack
# of its own (swapcontext), which ASan warns about once per process.
for f in "$reports"/*; do
  [ -e "$f" ] || continue
  if grep -qE "ERROR: |runtime error: |SUMMARY: " "$f"; then
    echo "== sanitizer report $f" >&2
    cat "$f" >&2
    failed=1
  fi
done
[ "$failed" -eq 0 ] && echo "sanitized tests passed, no sanitizer report" >&2
exit "$failed"
