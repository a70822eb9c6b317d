#!/usr/bin/env bash
# Builds probe.cpp against Debian's Halide 14 and against PyPI's halide 21.0.0
# wheel (its C++ library, downloaded into $WORK) and runs both.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=${WORK:-/tmp/halide_probe}
mkdir -p "$work"
cd "$work"
[ -f x/halide/include/Halide.h ] || {
  pip download halide==21.0.0 --no-deps -d . >/dev/null
  python3 -m zipfile -e halide-21.0.0-*.whl x
}
g++ -std=c++17 "$here/probe.cpp" -I/usr/include/halide14 -lHalide14 -lpthread -ldl -o probe14
g++ -std=c++17 "$here/probe.cpp" -Ix/halide/include -Lx/halide/lib64 -lHalide -Wl,-rpath,"$work/x/halide/lib64" \
  -lpthread -ldl -o probe21
echo "== Halide 14"; ./probe14 2>/dev/null
echo "== Halide 21.0.0 (PyPI wheel)"; ./probe21 2>/dev/null
