#!/usr/bin/env bash
# One device call asking where a gap against Inductor comes from (the kernel,
# or its surroundings): bench/gap_probe.py times the packaged fusekit kernel,
# hand-written probes, Inductor as torch.compile calls it, and Inductor's own
# cubin launched on fusekit's tensors, in one process; then the SASS of each.
#
#   LIST=bench/probes/rmsnorm-gap/list.txt HAND='bench/probes/rmsnorm-gap/*.cu' \
#   OP=rmsnorm DTYPE=f32 SHAPE=4096x16384 bash scripts/gpu_gap_session.sh
#
# HAND='' times no hand-written kernels (as for the pointwise ops' lists,
# bench/probes/pointwise-gap/). Expects .device/ from scripts/prepare_device.sh,
# or VARIANTS=DIR: kernels scripts/probe_variants.py printed here into DIR
# (carried), which needs no fusekit there.
# Writes at most 8 files under $OUT: log.txt, gap.json, gap.txt, sass.txt,
# artifacts.tar.gz.
set -uo pipefail
source "$(dirname "$0")/device_env.sh"
list=${LIST:-bench/probes/rmsnorm-gap/list.txt}
step environment
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv; which cuobjdump nvcc; } >>"$log" 2>&1
step "kernels of $list"
rm -rf /tmp/gap-variants /tmp/gap-art
if [ -n "${VARIANTS:-}" ]; then
  cp -r "$VARIANTS" /tmp/gap-variants
else
  python3 scripts/probe_variants.py "$list" /tmp/gap-variants --fusekit "$bin/fusekit" >>"$log" 2>&1
fi
step probe
# shellcheck disable=SC2086
timeout "${PROBE_TIMEOUT:-300}" python3 bench/gap_probe.py --op "${OP:-rmsnorm}" --dtype "${DTYPE:-f32}" \
  --shape "${SHAPE:-4096x16384}" --dir /tmp/gap-variants --hand ${HAND-bench/probes/rmsnorm-gap/*.cu} \
  --artifacts /tmp/gap-art --out "$out/gap.json" --rounds "${ROUNDS:-5}" --reps "${REPS:-500}" >"$out/gap.txt" 2>>"$log"
echo "probe rc=$?" | tee -a "$log"
step sass
{
  for c in /tmp/gap-art/*.cubin; do echo "##### $c"; cuobjdump -sass "$c"; done
  for f in /tmp/gap-variants/*.cu ${HAND-bench/probes/rmsnorm-gap/*.cu}; do
    echo "##### $f"
    nvcc -arch=sm_90 -cubin -std=c++17 --use_fast_math -DFK_FAST -I"$(dirname "$f")" -o /tmp/gap-k.cubin "$f" 2>/dev/null &&
      cuobjdump -sass /tmp/gap-k.cubin
  done
} >"$out/sass.txt" 2>&1
tar -czf "$out/artifacts.tar.gz" -C /tmp gap-art gap-variants 2>>"$log"
step done
