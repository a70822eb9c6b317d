# shellcheck shell=bash
# peers: bench/peers.py, fusekit through the package's C ABI against PyTorch
# eager, TorchScript and torch.compile -> peers.json, peers.txt,
# peers_stderr.txt. The package: the package step's (or PACKAGE=DIR, of which
# only lib/libfusekit_kernels.so need travel), else one built from RECORDS
# while peers.py compiles torch.compile's graphs. PEERS_TIMEOUT (480 s),
# PEERS_ARGS (extra peers.py arguments, e.g. --ops layernorm,rmsnorm).
ready=/tmp/pkg.ready
step package and peers
if [ -f "$pkg/lib/libfusekit_kernels.so" ]; then
  echo ok >"$ready"
elif [ -n "${PACKAGE:-}" ] || [ -z "${RECORDS:-}" ]; then
  echo "no package in $pkg: run the package step first, or give RECORDS or PACKAGE" | tee -a "$log"
  exit 1
else
  need_bins fusekit
  rm -f "$ready"
  # shellcheck disable=SC2086
  ( build_package "$pkg" $RECORDS && echo ok >"$ready.tmp" || echo "build failed, see log.txt" >"$ready.tmp"
    mv "$ready.tmp" "$ready" ) &
fi
# shellcheck disable=SC2086
timeout "${PEERS_TIMEOUT:-480}" python3 bench/peers.py --package "$pkg" --package-ready "$ready" --out "$out/peers.json" \
  ${PEERS_ARGS:-} 2>"$out/peers_stderr.txt" | tee "$out/peers.txt"
note peers "${PIPESTATUS[0]}"
wait
finish
