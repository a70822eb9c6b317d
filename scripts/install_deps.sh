#!/usr/bin/env bash
# Installs the Debian packages fusekit builds against, when any is missing,
# and checks for the CUDA toolkit (headers + NVRTC; no driver needed).
set -euo pipefail
packages=(build-essential cmake libhalide14-0-dev libboost-program-options-dev libgtest-dev libbenchmark-dev
          libsqlite3-dev nlohmann-json3-dev libxxhash-dev zlib1g-dev python3 python3-numpy)
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
