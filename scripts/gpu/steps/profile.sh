# shellcheck shell=bash
# profile: every kernel of the package (the package step's, or one built from
# RECORDS) profiled by bench/profile_kernels.py: host time per call and CUDA
# events (calls.json), Nsight Compute's duration, DRAM bytes and occupancy
# (ncu.csv), merged -> profile.json. CALLS_TIMEOUT (150 s), NCU_TIMEOUT (200 s).
need_package
step environment
ncu --version | tail -1 >>"$log" 2>&1
step wall time per call and CUDA events
timeout "${CALLS_TIMEOUT:-150}" python3 bench/profile_kernels.py calls --package "$pkg" --out "$out/calls.json" >>"$log" 2>&1
note calls $?
step nsight compute
timeout "${NCU_TIMEOUT:-200}" ncu --clock-control none --nvtx --nvtx-include "fk/" --csv --page raw --metrics \
  gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,sm__warps_active.avg.pct_of_peak_sustained_active,sm__maximum_warps_per_active_cycle_pct \
  python3 bench/profile_kernels.py ncu --package "$pkg" >"$out/ncu.csv" 2>>"$log"
note ncu $?
python3 bench/profile_kernels.py merge --calls "$out/calls.json" --ncu "$out/ncu.csv" --out "$out/profile.json" \
  --gpu "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" | tee -a "$log"
note merge "${PIPESTATUS[0]}"
finish
