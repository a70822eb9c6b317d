#!/usr/bin/env bash
# The full test suite from scratch: installs what is missing, builds, runs
# every test, then the sanitized build's tests (scripts/test_sanitized.sh;
# SANITIZE=0 leaves them out). Tests labelled `gpu` skip with the reason where
# no GPU exists.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build} ./scripts/build.sh
(cd "${BUILD_DIR:-build}" && ctest --output-on-failure -j "$(nproc)")
[ "${SANITIZE:-1}" = 0 ] || ./scripts/test_sanitized.sh
