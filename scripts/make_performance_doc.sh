#!/usr/bin/env bash
# Regenerates docs/performance.md (and docs/img/peers-*.png) from the committed
# results of the H200 runs of 2026-11-30. Needs python3-matplotlib for the plots.
set -euo pipefail
cd "$(dirname "$0")/.."
r=bench/results/2026-11-30-h200
py=${PYTHON:-$(test -x /usr/bin/python3 && echo /usr/bin/python3 || echo python3)}
"$py" scripts/performance_report.py "$r-summary.json" docs/performance.md \
  --run a11723e "$r-a11723e-records.jsonl" "$r-a11723e-copy.jsonl" \
  --run a2a0ff6-64m "$r-a2a0ff6-64m-records.jsonl" "$r-a2a0ff6-64m-copy.jsonl" \
  --memcheck "$r-a11723e-memcheck.txt" --gpu-test "$r-a11723e-gpu_test.json" --notes docs/performance_notes.md \
  --command "# the whole catalog (run a11723e), then the 64 M rows again next to same-bytes copies (run a2a0ff6-64m):
scripts/prepare_device.sh build && BUDGET=24 TUNE_TIMEOUT=330 MEMCHECK_TIMEOUT=100 bash scripts/gpu_session.sh
scripts/prepare_device.sh build && RECORDS=bench/results/2026-11-30-h200-a11723e-records.jsonl TUNE_TIMEOUT=150 \\
  bash scripts/gpu_package_session.sh
# gpu_session.sh runs, on the H200:
#   gpu_test                                          (ctest label gpu)
#   copy_bandwidth                                    (1 GiB, before and after tuning)
#   fusekit tune --arch sm_90 --dtype f32,bf16 --sizes 4096,65536,1048576,67108864 --budget 24 --db /tmp/h200.db
#   fusekit db export --db /tmp/h200.db h200.jsonl
#   compute-sanitizer --tool memcheck fusekit verify --arch sm_90 --dtype f32,bf16 --sizes 4096,65536 --db /tmp/h200.db
# gpu_package_session.sh first runs copy_bandwidth at 128, 192, 256, 384, 512 and 1024 MiB and
#   fusekit tune --arch sm_90 --dtype f32,bf16 --sizes 67108864 --budget 24" \
  --rows-run 0204f8f "$r-0204f8f-rows-records.jsonl" "$r-0204f8f-rows-copy.jsonl" \
  --rows-run 1005d24 "$r-1005d24-rows-records.jsonl" "$r-1005d24-rows-copy.jsonl" \
  --rows-gpu-test "$r-0204f8f-rows-gpu_test.json,$r-1005d24-rows-gpu_test.json" \
  --rows-memcheck "$r-0204f8f-rows-memcheck.txt" --rows-notes docs/performance_rows_notes.md \
  --rows-command "scripts/prepare_device.sh build && TUNE_TIMEOUT=270 TEST_TIMEOUT=150 MEMCHECK_TIMEOUT=60 \\
  bash scripts/gpu_reduction_session.sh                                            # run 0204f8f
# = gpu_test; copy_bandwidth at 64-1024 MiB; fusekit tune --arch sm_90 --pattern softmax,log_softmax,layernorm,
#   rmsnorm,add_layernorm,add_rmsnorm,bias_add_softmax --dtype f32,bf16 --backend nvrtc --budget 16
#   (shapes 256x1024 32768x1024 8192x4096 4096x16384 1024x65536 3000x3001); memcheck of fusekit verify
# run 1005d24 (after the measurer fix), on the H200:
#   gpu_test; fusekit tune --arch sm_90 --pattern add_layernorm,add_rmsnorm --dtype f32,bf16 --backend nvrtc \\
#   --budget 16; copy_bandwidth 256, 512, 1024 MiB" \
  --package-run fc2b3b4 "$r-fc2b3b4-package" "before selections were reused per call" \
  --package-run ffff4b3 "$r-ffff4b3-package" "selections reused per call; a noisy machine" \
  --package-run 261f2b1 "$r-261f2b1-package" "and no string built per selection" \
  --peers 261f2b1 "$r-261f2b1-peers.json" --plots img \
  --peers-command "# at 261f2b1, in one device call after the runtime session:
scripts/prepare_device.sh build && export RECORDS=bench/results/2026-11-30-h200-a11723e-records.jsonl
SKIP_TUNE=1 bash scripts/gpu_package_session.sh; PEERS_TIMEOUT=420 bash scripts/gpu_peers_session.sh
# = fusekit build --arch sm_90 (run a11723e's records), then
#   python3 bench/peers.py --package /tmp/pkg --out peers.json      (2 min 24 s on the H200)
# bench/peers.py had the pointwise ops only then; its row ops have not run yet."
