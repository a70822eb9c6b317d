#!/usr/bin/env bash
# Regenerates docs/performance.md from the committed results of the H200 runs of 2026-11-30.
set -euo pipefail
cd "$(dirname "$0")/.."
r=bench/results/2026-11-30-h200
python3 scripts/performance_report.py "$r-summary.json" docs/performance.md \
  --run 020bcad "$r-020bcad-records.jsonl" "$r-020bcad-copy.jsonl" \
  --run 5e99409 "$r-5e99409-records.jsonl" "$r-5e99409-copy.jsonl" \
  --memcheck "$r-020bcad-memcheck.txt,$r-5e99409-memcheck.txt" \
  --gpu-test "$r-020bcad-gpu_test.json,$r-5e99409-gpu_test.json" --notes docs/performance_notes.md \
  --command "# at each commit (020bcad, 5e99409):
scripts/prepare_device.sh build && BUDGET=32 TUNE_TIMEOUT=450 bash scripts/gpu_session.sh       # 020bcad
scripts/prepare_device.sh build && BUDGET=20 TUNE_TIMEOUT=230 MEMCHECK_TIMEOUT=40 bash scripts/gpu_session.sh  # 5e99409
# gpu_session.sh runs, on the H200:
#   gpu_test                                          (ctest label gpu)
#   copy_bandwidth                                    (before and after tuning)
#   fusekit tune --arch sm_90 --dtype f32,bf16 --sizes 4096,65536,1048576,67108864 --budget \$BUDGET --db /tmp/h200.db
#   fusekit db export --db /tmp/h200.db h200.jsonl
#   compute-sanitizer --tool memcheck fusekit verify --arch sm_90 --dtype f32,bf16 --sizes 4096,65536 --db /tmp/h200.db"
