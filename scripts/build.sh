#!/usr/bin/env bash
# Installs what is missing, then configures and builds into BUILD_DIR (default:
# build): every target, or only the TARGETs given (./scripts/build.sh fusekit).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install_deps.sh
build=${BUILD_DIR:-build}
export PATH="${CUDAToolkit_ROOT:-/usr/local/cuda}/bin:$PATH"
[ -f "$build/CMakeCache.txt" ] || cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j "$(nproc)" ${1:+--target "$@"} >&2
