#!/usr/bin/env bash
# Nsight Compute sections (speed of light, occupancy, launch, warp states,
# memory workload) for chosen schedules of one row op at one shape, next to
# the kernel torch.compile (Inductor, default mode) generates for the same op,
# in one device call. For asking why one kernel is slower than another, where
# the tuner's times only say that it is.
#
#   OP=layernorm DTYPE=bf16 SHAPE=4096x16384 \
#   SCHEDULES='cache=4 fast=1 keep=1 persist=2 rows=1 smem=1 split=1 threads=512 vec=8;...' \
#   bash scripts/gpu_probe_session.sh
#
# Each schedule is profiled inside a `fusekit tune` of the op at SHAPE (every
# seed measured, so a seed schedule runs there): the kernel named as
# `fusekit source` names it, its launch LAUNCH_SKIP + 1 (past the verification
# on the odd shape). Inductor's kernel: launch INDUCTOR_SKIP + 1 of the Triton
# kernels of bench/inductor_configs.py --one (a fresh compilation); its
# generated code is logged (TORCH_LOGS=output_code). Expects .device/ from
# scripts/prepare_device.sh. Writes at most 8 files under $OUT.
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
op=${OP:-layernorm}
dt=${DTYPE:-bf16}
shape=${SHAPE:-4096x16384}
IFS=';' read -ra schedules <<<"${SCHEDULES:?give SCHEDULES, schedules separated by ;}"
if [ "${#schedules[@]}" -gt 5 ]; then echo "at most 5 schedules (8 files under \$OUT)" | tee -a "$log"; exit 2; fi
sections=(--section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats
  --section MemoryWorkloadAnalysis)

step environment
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv; ncu --version | tail -1; } >>"$log" 2>&1

i=0
for s in "${schedules[@]}"; do
  entry=$("$bin/fusekit" source --pattern "$op" --arch sm_90 --dtype "$dt" --params "$s" 2>>"$log" |
    grep -o "fusekit_sm90_[A-Za-z0-9_]*" | head -1)
  step "schedule $i: $s ($entry)"
  if [ -z "$entry" ]; then echo "no kernel for this schedule" | tee -a "$log"; i=$((i + 1)); continue; fi
  timeout "${NCU_TIMEOUT:-150}" ncu --clock-control none -k "regex:$entry" --launch-skip "${LAUNCH_SKIP:-6}" \
    --launch-count 1 "${sections[@]}" --log-file "$out/ncu-$i.txt" \
    "$bin/fusekit" tune --arch sm_90 --pattern "$op" --dtype "$dt" --sizes "$shape" --backend nvrtc \
    --budget "${BUDGET:-40}" --db "/tmp/probe-$i.db" >/dev/null 2>>"$log"
  echo "ncu rc=$?" | tee -a "$log"
  i=$((i + 1))
done

step "Inductor's $op $dt $shape"
# In this process (--one), with an empty Inductor cache, so that it compiles and logs the code.
TORCHINDUCTOR_CACHE_DIR=$(mktemp -d) TORCH_LOGS=output_code timeout "${INDUCTOR_TIMEOUT:-200}" \
  ncu --clock-control none -k "regex:triton" --launch-skip "${INDUCTOR_SKIP:-20}" --launch-count 1 "${sections[@]}" \
  --log-file "$out/ncu-inductor.txt" python3 bench/inductor_configs.py --one "$op:$dt:$shape" \
  >"$out/inductor.jsonl" 2>"$out/inductor-code.txt"
echo "ncu rc=$?" | tee -a "$log"
step done
