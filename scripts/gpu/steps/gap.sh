# shellcheck shell=bash
# gap: where a gap against Inductor comes from (the kernel, or its
# surroundings): bench/gap_probe.py times kernels of chosen schedules,
# hand-written probes, Inductor as torch.compile calls it, and Inductor's own
# cubin launched on fusekit's tensors, in one process; then the SASS of each
# -> gap.json, gap.txt, sass.txt, artifacts.tar.gz.
#   LIST (bench/probes/rmsnorm-gap/list.txt: schedules, printed here with
#   fusekit source), or VARIANTS=DIR: kernels scripts/probe_variants.py printed
#   elsewhere into DIR (carried; needs no fusekit here); HAND (hand-written
#   kernels, default bench/probes/rmsnorm-gap/*.cu; HAND= for none, as for the
#   pointwise lists); OP (rmsnorm), DTYPE (f32), SHAPE (4096x16384), ROUNDS
#   (5), REPS (500), PROBE_TIMEOUT (300 s).
list=${LIST:-bench/probes/rmsnorm-gap/list.txt}
# shellcheck disable=SC2206
hand=(${HAND-bench/probes/rmsnorm-gap/*.cu})
step environment
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv; command -v cuobjdump nvcc; } >>"$log" 2>&1
step "kernels of ${VARIANTS:-$list}"
rm -rf /tmp/gap-variants /tmp/gap-art
if [ -n "${VARIANTS:-}" ]; then
  cp -r "$VARIANTS" /tmp/gap-variants
  note variants $?
else
  need_bins fusekit
  python3 scripts/probe_variants.py "$list" /tmp/gap-variants --fusekit "$bin/fusekit" >>"$log" 2>&1
  note variants $?
fi
step probe
timeout "${PROBE_TIMEOUT:-300}" python3 bench/gap_probe.py --op "${OP:-rmsnorm}" --dtype "${DTYPE:-f32}" \
  --shape "${SHAPE:-4096x16384}" --dir /tmp/gap-variants --hand "${hand[@]}" \
  --artifacts /tmp/gap-art --out "$out/gap.json" --rounds "${ROUNDS:-5}" --reps "${REPS:-500}" >"$out/gap.txt" 2>>"$log"
note probe $?
step sass
{
  for c in /tmp/gap-art/*.cubin; do echo "##### $c"; cuobjdump -sass "$c"; done
  for f in /tmp/gap-variants/*.cu "${hand[@]}"; do
    echo "##### $f"
    nvcc -arch=sm_90 -cubin -std=c++17 --use_fast_math -DFK_FAST -I"$(dirname "$f")" -o /tmp/gap-k.cubin "$f" 2>/dev/null &&
      cuobjdump -sass /tmp/gap-k.cubin
  done
} >"$out/sass.txt" 2>&1
tar -czf "$out/artifacts.tar.gz" -C /tmp gap-art gap-variants 2>>"$log"
finish
