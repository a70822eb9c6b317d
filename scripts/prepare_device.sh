#!/usr/bin/env bash
# Prepares .device/ (git-ignored) for scripts/gpu.sh: stripped
# binaries from BUILD_DIR and the Debian runtime packages the GPU machine
# (Ubuntu 24.04 with CUDA, no Halide) lacks.
set -euo pipefail
build=${1:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$root/.device/bin" "$root/.device/debs"
for b in cli/fusekit tests/gpu_test tests/gemm_gpu_test tests/fuzz_corpus bench/copy_bandwidth bench/dispatch_bench bench/gemm_race bench/guided_rematch; do
  strip -o "$root/.device/bin/$(basename "$b")" "$root/$build/$b"
done
mkdir -p "$root/.device/lib"
strip --strip-debug -o "$root/.device/lib/libfusekit_runtime.a" "$root/$build/runtime/libfusekit_runtime.a"
cd "$root/.device/debs"
# ONNX import (libonnx1, libprotobuf32) and the PostgreSQL client (libpq5 and
# the LDAP and SASL libraries of Debian's build) joined fusekit's links too,
# and so did XGBoost (the learned cost model: libxgboost0, libdmlc0).
for p in libhalide14-0 libllvm14 libz3-4 libboost-program-options1.74.0 libxxhash0 \
  libffi8 libedit2 libtinfo6 libbsd0 libmd0 libonnx1 libprotobuf32 libpq5 libldap-2.5-0 libsasl2-2 \
  libxgboost0 libdmlc0; do
  ls "${p}"_*.deb >/dev/null 2>&1 || apt-get download "$p"
done
# Debian's LLVM links libxml2 and, through it, ICU 72: Ubuntu 24.04 machines
# that have libxml2.so.2 (cmake's libarchive pulls it in) need neither, so
# they sit in a folder of their own that a call can leave out of `carry`.
mkdir -p "$root/.device/debs-xml"
mv libicu72_*.deb libxml2_*.deb "$root/.device/debs-xml/" 2>/dev/null || true
# Only dispatch_bench needs Google Benchmark: a folder of its own, so that a
# call that does not run it can leave it out of `carry` (64 MiB in all).
mkdir -p "$root/.device/debs-bench"
mv libbenchmark1debian_*.deb "$root/.device/debs-bench/" 2>/dev/null || true
cd "$root/.device/debs-bench"
ls libbenchmark1debian_*.deb >/dev/null 2>&1 || apt-get download libbenchmark1debian
cd "$root/.device/debs-xml"
for p in libicu72 libxml2; do ls "${p}"_*.deb >/dev/null 2>&1 || apt-get download "$p"; done
# The binaries gzipped as well (a third of their size), which
# scripts/device_env.sh unpacks: carrying .device/gz instead of .device/bin
# leaves room in 64 MiB for more beside them (two cost models, gpu_test).
mkdir -p "$root/.device/gz"
for f in "$root/.device/bin"/*; do gzip -9 -c "$f" >"$root/.device/gz/$(basename "$f").gz"; done
du -sh "$root/.device"/*
