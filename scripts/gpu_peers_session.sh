#!/usr/bin/env bash
# fusekit against PyTorch eager, TorchScript and torch.compile in one call
# (bench/peers.py), through a package built from $RECORDS (JSONL files,
# space-separated) on the GPU machine (reused if an earlier call on the same
# machine left it in /tmp/pkg).
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
pkg=/tmp/pkg
if [ ! -f "$pkg/lib/libfusekit_kernels.so" ]; then
  step package
  # shellcheck disable=SC2086
  build_package "$pkg" ${RECORDS:?}
  echo "build rc=$?" | tee -a "$log"
fi
step peers
timeout ${PEERS_TIMEOUT:-480} python3 bench/peers.py --package "$pkg" --out "$out/peers.json" ${PEERS_ARGS:-} \
  2>"$out/peers_stderr.txt" | tee "$out/peers.txt"
echo "peers rc=${PIPESTATUS[0]}" | tee -a "$log"
step done
