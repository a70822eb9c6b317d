#!/usr/bin/env bash
# The fast CPU test executables built with AddressSanitizer and
# UndefinedBehaviorSanitizer in their own build folder (build-asan): the
# expression limits, the grammar fuzzer, the comparisons, the tuning
# database and the runtime (over its fake driver). A sanitizer report fails
# the run. SANITIZE_JOBS sets the build's parallelism (default: every core).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install_deps.sh
dir=${SANITIZE_BUILD_DIR:-build-asan}
flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS="$flags" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" >/dev/null
cmake --build "$dir" -j "${SANITIZE_JOBS:-$(nproc)}" --target generator_test tunedb_test schedules_test runtime_test
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
"$dir/tests/generator_test" --gtest_filter='ExprLimits*:GrammarFuzz*:ExprParser*'
"$dir/tests/tunedb_test"
"$dir/tests/schedules_test"
"$dir/tests/runtime_test"
