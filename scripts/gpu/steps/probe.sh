# shellcheck shell=bash
# probe: Nsight Compute sections (speed of light, occupancy, launch, warp
# states, memory workload) for up to 5 schedules of one row op at one shape,
# beside the kernel torch.compile (Inductor, default mode) generates for it ->
# ncu-N.txt, ncu-inductor.txt, inductor.jsonl, inductor-code.txt. For asking
# why one kernel is slower than another, where the tuner's times only say that
# it is.
#   SCHEDULES (required, separated by ;), OP (layernorm), DTYPE (bf16), SHAPE
#   (4096x16384), BUDGET (40), LAUNCH_SKIP (6), INDUCTOR_SKIP (20),
#   NCU_TIMEOUT (150 s), INDUCTOR_TIMEOUT (200 s).
# Each schedule is profiled inside a `fusekit tune` of the op at SHAPE (every
# seed measured, so a seed schedule runs there): the kernel named as `fusekit
# source` names it, its launch LAUNCH_SKIP + 1 (past the verification on the
# odd shape). Inductor's: launch INDUCTOR_SKIP + 1 of the Triton kernels of
# bench/inductor_configs.py --one (a fresh compilation, its code logged).
need_bins fusekit
op=${OP:-layernorm}
dt=${DTYPE:-bf16}
shape=${SHAPE:-4096x16384}
if [ -z "${SCHEDULES:-}" ]; then echo "probe: give SCHEDULES, schedules separated by ;" | tee -a "$log"; exit 1; fi
IFS=';' read -ra schedules <<<"$SCHEDULES"
if [ "${#schedules[@]}" -gt 5 ]; then echo "probe: at most 5 schedules (8 files under \$OUT)" | tee -a "$log"; exit 1; fi
sections=(--section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats
  --section MemoryWorkloadAnalysis)
step environment
ncu --version | tail -1 >>"$log" 2>&1
i=0
for s in "${schedules[@]}"; do
  entry=$("$bin/fusekit" source --pattern "$op" --arch sm_90 --dtype "$dt" --params "$s" 2>>"$log" |
    grep -o "fusekit_sm90_[A-Za-z0-9_]*" | head -1)
  step "schedule $i: $s ($entry)"
  if [ -z "$entry" ]; then note "schedule $i: no kernel" 1; i=$((i + 1)); continue; fi
  timeout "${NCU_TIMEOUT:-150}" ncu --clock-control none -k "regex:$entry" --launch-skip "${LAUNCH_SKIP:-6}" \
    --launch-count 1 "${sections[@]}" --log-file "$out/ncu-$i.txt" \
    "$bin/fusekit" tune --arch sm_90 --pattern "$op" --dtype "$dt" --sizes "$shape" --backend nvrtc \
    --budget "${BUDGET:-40}" --db "/tmp/probe-$i.db" >/dev/null 2>>"$log"
  note "ncu $i" $?
  i=$((i + 1))
done
step "Inductor's $op $dt $shape"
# In this process (--one), with an empty Inductor cache, so that it compiles and logs the code.
TORCHINDUCTOR_CACHE_DIR=$(mktemp -d) TORCH_LOGS=output_code timeout "${INDUCTOR_TIMEOUT:-200}" \
  ncu --clock-control none -k "regex:triton" --launch-skip "${INDUCTOR_SKIP:-20}" --launch-count 1 "${sections[@]}" \
  --log-file "$out/ncu-inductor.txt" python3 bench/inductor_configs.py --one "$op:$dt:$shape" \
  >"$out/inductor.jsonl" 2>"$out/inductor-code.txt"
note "ncu inductor" $?
finish
