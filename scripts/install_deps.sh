#!/usr/bin/env bash
# Installs the Debian packages fusekit builds against, when any is missing,
# and checks for the CUDA toolkit (headers + NVRTC; no driver needed).
set -euo pipefail
packages=(build-essential cmake libhalide14-0-dev libboost-program-options-dev libgtest-dev libbenchmark-dev
          libsqlite3-dev nlohmann-json3-dev libxxhash-dev zlib1g-dev python3 python3-numpy
          libpq-dev postgresql libonnx-dev libprotobuf-dev
          libxgboost-dev  # the learned cost model (cost_model/)
          python3-plotly chromium)  # fusekit report inlines plotly.js; its test renders the page in chromium
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "fusekit: installing ${missing[*]}" >&2
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}" >/dev/null
fi
cuda_root=${CUDAToolkit_ROOT:-/usr/local/cuda}
if [ ! -f "$cuda_root/include/nvrtc.h" ] || [ ! -f "$cuda_root/include/cuda.h" ]; then
  echo "fusekit: no CUDA toolkit at $cuda_root (need include/cuda.h, include/nvrtc.h and libnvrtc);" \
       "install the CUDA toolkit or set CUDAToolkit_ROOT" >&2
  exit 1
fi
# Python packages of the CPU tests (python/requirements-ci.txt), installed
# only when one is missing: the PyPI torch wheel and its CUDA libraries are
# several GB.
requirements="$(cd "$(dirname "$0")/.." && pwd)/python/requirements-ci.txt"
if [ -f "$requirements" ]; then
  py_missing=()
  while read -r pkg; do
    pkg=${pkg%%#*}
    pkg=${pkg// /}
    pkg=${pkg%%[<>=]*}
    [ -z "$pkg" ] && continue
    python3 -c "import ${pkg//-/_}" 2>/dev/null || py_missing+=("$pkg")
  done < "$requirements"
  if [ ${#py_missing[@]} -gt 0 ]; then
    echo "fusekit: pip-installing ${py_missing[*]}" >&2
    python3 -m pip install -q -r "$requirements" 2>/dev/null || python3 -m pip install -q --break-system-packages -r "$requirements"
  fi
fi
