#!/usr/bin/env bash
# fusekit against PyTorch eager, TorchScript and torch.compile in one call
# (bench/peers.py), through a package built from $RECORDS on the GPU machine
# (reused if an earlier call on the same machine left it in /tmp/pkg).
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
pkg=/tmp/pkg
if [ ! -f "$pkg/lib/libfusekit_kernels.so" ]; then
  step package
  rm -rf "$pkg" /tmp/p.db
  "$bin/fusekit" db import --db /tmp/p.db "${RECORDS:?}" >>"$log" 2>&1
  "$bin/fusekit" build --arch sm_90 --db /tmp/p.db --out "$pkg" --runtime-lib .device/lib/libfusekit_runtime.a \
    --runtime-include runtime/include --cuda-include /usr/local/cuda/include >>"$log" 2>&1
  echo "build rc=$?" | tee -a "$log"
fi
step peers
timeout ${PEERS_TIMEOUT:-480} python3 bench/peers.py --package "$pkg" --out "$out/peers.json" ${PEERS_ARGS:-} \
  2>"$out/peers_stderr.txt" | tee "$out/peers.txt"
echo "peers rc=${PIPESTATUS[0]}" | tee -a "$log"
step done
