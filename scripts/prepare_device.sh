#!/usr/bin/env bash
# Prepares .device/ (git-ignored) for scripts/gpu_session.sh: stripped
# binaries from BUILD_DIR and the Debian runtime packages the GPU machine
# (Ubuntu 24.04 with CUDA, no Halide) lacks.
set -euo pipefail
build=${1:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$root/.device/bin" "$root/.device/debs"
for b in cli/fusekit tests/gpu_test bench/copy_bandwidth bench/dispatch_bench; do
  strip -o "$root/.device/bin/$(basename "$b")" "$root/$build/$b"
done
mkdir -p "$root/.device/lib"
strip --strip-debug -o "$root/.device/lib/libfusekit_runtime.a" "$root/$build/runtime/libfusekit_runtime.a"
cd "$root/.device/debs"
for p in libhalide14-0 libllvm14 libz3-4 libboost-program-options1.74.0 libicu72 libxxhash0 \
  libffi8 libedit2 libxml2 libtinfo6 libbsd0 libmd0 libbenchmark1debian; do
  ls "${p}"_*.deb >/dev/null 2>&1 || apt-get download "$p"
done
du -sh "$root/.device"
