#!/usr/bin/env bash
# fusekit against PyTorch eager, TorchScript and torch.compile in one call
# (bench/peers.py), through a package built from $RECORDS (JSONL files,
# space-separated) on the GPU machine while peers.py compiles torch.compile's
# graphs (reused if an earlier call on the same machine left it in /tmp/pkg).
# Then, with the time left, the package's kernels against the CPU reference
# and under memcheck. Expects .device/ from scripts/prepare_device.sh, or
# PACKAGE=DIR: a package `fusekit build` wrote here, of which only
# DIR/lib/libfusekit_kernels.so need travel (carried), for a call that
# cannot carry .device/ beside the tree (no VERIFY then: that needs fusekit
# and Halide there).
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
pkg=${PACKAGE:-/tmp/pkg}
ready=/tmp/pkg.ready
step package and peers
if [ -n "${PACKAGE:-}" ]; then
  [ -f "$pkg/lib/libfusekit_kernels.so" ] && echo ok >"$ready" || echo "no $pkg/lib/libfusekit_kernels.so" >"$ready"
elif [ -f "$pkg/lib/libfusekit_kernels.so" ]; then
  echo ok >"$ready"
else
  rm -f "$ready"
  # shellcheck disable=SC2086
  ( build_package "$pkg" ${RECORDS:?} && echo ok >"$ready.tmp" || echo "build failed, see log.txt" >"$ready.tmp"
    mv "$ready.tmp" "$ready" ) &
fi
timeout ${PEERS_TIMEOUT:-480} python3 bench/peers.py --package "$pkg" --package-ready "$ready" --out "$out/peers.json" \
  ${PEERS_ARGS:-} 2>"$out/peers_stderr.txt" | tee "$out/peers.txt"
echo "peers rc=${PIPESTATUS[0]}" | tee -a "$log"
wait
if [ -n "${VERIFY:-}" ]; then
  step every kernel of the package against the CPU reference, then memcheck up to 1 M elements
  { package_verify "$pkg" verify ${VERIFY_TIMEOUT:-60} ${VERIFY_MAX:-17000000}
    package_verify "$pkg" memcheck ${MEMCHECK_TIMEOUT:-60} 1100000 "${memcheck[@]}"; } >"$out/verify_package.txt" 2>&1
  grep "rc=\|checks\|ERROR SUMMARY" "$out/verify_package.txt" | tee -a "$log"
fi
step done
