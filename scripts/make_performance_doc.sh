#!/usr/bin/env bash
# Regenerates docs/performance.md from the committed results of the H200 session of 2026-11-30.
set -euo pipefail
cd "$(dirname "$0")/.."
r=bench/results/2026-11-30-h200
python3 scripts/performance_report.py "$r-records.jsonl" "$r-copy.jsonl" "$r-tune.json" docs/performance.md \
  --memcheck "$r-memcheck.txt" --gpu-test "$r-gpu_test.json" --notes docs/performance_notes.md \
  --command "scripts/prepare_device.sh build && BUDGET=32 TUNE_TIMEOUT=450 bash scripts/gpu_session.sh
# which runs, on the H200:
#   copy_bandwidth                                   (before and after tuning)
#   fusekit tune --arch sm_90 --dtype f32,bf16 --sizes 4096,65536,1048576,67108864 --budget 32 --db /tmp/h200.db
#   fusekit db export --db /tmp/h200.db h200.jsonl
#   compute-sanitizer --tool memcheck fusekit verify --arch sm_90 --dtype f32,bf16 --sizes 4096,65536 --db /tmp/h200.db"
