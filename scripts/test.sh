#!/usr/bin/env bash
# The full test suite from scratch: installs what is missing, builds, runs
# every test. Tests labelled `gpu` skip with the reason where no GPU exists.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build} ./scripts/build.sh
cd "${BUILD_DIR:-build}"
ctest --output-on-failure -j "$(nproc)"
