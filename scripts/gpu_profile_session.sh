#!/usr/bin/env bash
# The package of $RECORDS (JSONL files, space-separated) on the GPU: built,
# every kernel verified through the C API (cubins, then PTX), memcheck, and
# the profiling figures of every op (bench/profile_kernels.py: wall time per
# call, CUDA events, Nsight Compute). Expects .device/ from
# scripts/prepare_device.sh (REUSE_PACKAGE=1: a package an earlier step of
# the same call left in /tmp/pkg; SKIP_VERIFY=1: no verify and memcheck, e.g.
# after gpu_peers_session.sh with VERIFY=1). Writes at most 8 files under $OUT.
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
pkg=/tmp/pkg

step environment
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv; ncu --version | tail -1; } >>"$log" 2>&1

step package
if [ -n "${REUSE_PACKAGE:-}" ] && [ -f "$pkg/lib/libfusekit_kernels.so" ]; then
  echo "reusing $pkg" | tee -a "$log"
else
  # shellcheck disable=SC2086
  build_package "$pkg" ${RECORDS:?}
  echo "build rc=$?" | tee -a "$log"
fi

if [ -z "${SKIP_VERIFY:-}" ]; then
  step every kernel of the package against the CPU reference, cubins then PTX
  { package_verify "$pkg" verify ${VERIFY_TIMEOUT:-150} ${VERIFY_MAX:-17000000}
    FUSEKIT_PTX_ONLY=1 package_verify "$pkg" "verify ptx" ${VERIFY_TIMEOUT:-150} 1100000; } >"$out/verify_package.txt" 2>&1
  grep "rc=\|checks" "$out/verify_package.txt" | tee -a "$log"

  step memcheck of the package up to 1 M elements
  package_verify "$pkg" memcheck ${MEMCHECK_TIMEOUT:-150} 1100000 "${memcheck[@]}" >"$out/memcheck.txt" 2>&1
  grep "memcheck rc=" "$out/memcheck.txt" | tee -a "$log"
  grep "ERROR SUMMARY\|checks" "$out/memcheck.txt" | tee -a "$log"
fi

step wall time per call and CUDA events
timeout ${CALLS_TIMEOUT:-150} python3 bench/profile_kernels.py calls --package "$pkg" --out "$out/calls.json" >>"$log" 2>&1
echo "calls rc=$?" | tee -a "$log"

step nsight compute
timeout ${NCU_TIMEOUT:-200} ncu --clock-control none --nvtx --nvtx-include "fk/" --csv --page raw --metrics \
  gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,sm__warps_active.avg.pct_of_peak_sustained_active,sm__maximum_warps_per_active_cycle_pct \
  python3 bench/profile_kernels.py ncu --package "$pkg" >"$out/ncu.csv" 2>>"$log"
echo "ncu rc=$?" | tee -a "$log"
python3 bench/profile_kernels.py merge --calls "$out/calls.json" --ncu "$out/ncu.csv" --out "$out/profile.json" \
  --gpu "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" | tee -a "$log"
step done
