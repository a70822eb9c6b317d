#!/usr/bin/env bash
# Regenerates docs/performance.md and docs/img/peers-*.png from the committed
# results of the shipped package's runs (bench/results/README.md lists them).
# Needs python3-matplotlib for the plots.
set -euo pipefail
cd "$(dirname "$0")/.."
r=bench/results/2026-11-30-h200
h=bench/results/2026-12-01-h200
py=${PYTHON:-$(test -x /usr/bin/python3 && echo /usr/bin/python3 || echo python3)}
"$py" scripts/performance_report.py docs/performance.md --plots img --history c08d2e3 \
  --section docs/performance/pytorch_models.md --section docs/performance/gemm_epilogues.md \
  --section docs/performance/general_layouts.md --section docs/performance/halide_backend.md \
  --peers b0d82bd "$h-b0d82bd-peers-peers.json" \
  --peers-command "# One device call (b0d82bd-peers, 296 s), carrying .pkg/lib/libfusekit_kernels.so, the package built here:
#   OUT=\$OUT PACKAGE=.pkg PEERS_TIMEOUT=450 bash scripts/gpu_peers_session.sh     (at c08d2e3)
scripts/gpu.sh PACKAGE=.pkg PEERS_TIMEOUT=450 peers                               # the same today
# = python3 bench/peers.py --package .pkg --package-ready /tmp/pkg.ready --out peers.json" \
  --package b0d82bd "$h-b0d82bd-package-winners.jsonl.gz" \
  --package-command "export H=bench/results/2026-12-01-h200
# The records: the previous package's (a396dab, 178) with two retunes superseding the keys they cover
# (df6396f-rows-65536: every row op at 1024x65536; df6396f-rows-16384: softmax, log_softmax,
# bias_add_softmax, add_layernorm, add_rmsnorm at 4096x16384), built here (no GPU needed; 61 s):
python3 scripts/winners_jsonl.py \$H-b0d82bd-package-winners.jsonl.gz \$H-a396dab-package-winners.jsonl.gz \\
  \$H-df6396f-rows-65536-records.jsonl.gz \$H-df6396f-rows-16384-records.jsonl.gz --supersede df6396f-rows
build/cli/fusekit db import --db /tmp/pkgdb.db \$H-b0d82bd-package-winners.jsonl.gz
build/cli/fusekit build --arch sm_90 --pattern all --db /tmp/pkgdb.db --out .pkg --runtime-lib build/runtime/libfusekit_runtime.a \\
  --runtime-include runtime/include --cuda-include /usr/local/cuda/include
# The retunes (one device call each; memcheck of their winners 14 and 13 checks, 0 errors):
scripts/gpu.sh OPS=softmax,log_softmax,bias_add_softmax,add_layernorm,add_rmsnorm,layernorm,rmsnorm DTYPES=f32,bf16 \\
  SIZES=1024x65536 BUDGET=24 BACKENDS=nvrtc SPECIALIZE=3 TUNE_TIMEOUT=370 rows MEMCHECK_TIMEOUT=40 memcheck
scripts/gpu.sh OPS=softmax,log_softmax,bias_add_softmax,add_layernorm,add_rmsnorm DTYPES=f32,bf16 SIZES=4096x16384 \\
  BUDGET=24 BACKENDS=nvrtc SPECIALIZE=3 TUNE_TIMEOUT=330 rows MEMCHECK_TIMEOUT=40 memcheck
# (run at c08d2e3 as SKIP_TESTS=1 ... bash scripts/gpu_reduction_session.sh)" \
  --halide "$h-740c4f2-halide-rows-records.jsonl.gz" \
  --halide-command "# 740c4f2-halide-rows (5 min 32 s; GPU tests 10 of 10; verify --package 66 checks, 0 failed, and under
# memcheck 66 checks, 0 errors), at c08d2e3: TEST_TIMEOUT=180 TUNE_TIMEOUT=200 VERIFY_TIMEOUT=60 MEMCHECK_TIMEOUT=100 \\
#   bash scripts/gpu_halide_rows_session.sh
scripts/gpu.sh TEST_TIMEOUT=180 tests TUNE_TIMEOUT=200 VERIFY_TIMEOUT=60 MEMCHECK_TIMEOUT=100 rows-halide   # today
# = fusekit tune --arch sm_90 --pattern (every row op) --dtype f32 --backend halide --budget 12
#   --sizes 32768x1024,8192x4096,4096x16384,1024x65536,3000x3001" \
  --profile "$h-b0d82bd-profile-profile.json" \
  --profile-command "# The package of the peers call (the same records), built again on the GPU machine and profiled in a call
# of its own (b0d82bd-profile, 80 s), at c08d2e3:
#   RECORDS=\$H-b0d82bd-package-winners.jsonl.gz SKIP_VERIFY=1 CALLS_TIMEOUT=90 NCU_TIMEOUT=120 bash scripts/gpu_profile_session.sh
scripts/gpu.sh RECORDS=\$H-b0d82bd-package-winners.jsonl.gz package CALLS_TIMEOUT=90 NCU_TIMEOUT=120 profile   # today
# = fusekit build --arch sm_90; python3 bench/profile_kernels.py calls (host time per call over 2000
#   back-to-back calls, CUDA events); ncu --clock-control none --nvtx --nvtx-include fk/ ... profile_kernels.py ncu; merge" \
  --runtime 261f2b1 "$r-261f2b1-package" \
  --runtime-command "# 261f2b1-package: a package of the pointwise catalog (records of run a11723e), at c08d2e3:
#   SKIP_TUNE=1 RECORDS=bench/results/2026-11-30-h200-a11723e-records.jsonl.gz bash scripts/gpu_package_session.sh
scripts/gpu.sh RECORDS=bench/results/2026-11-30-h200-a11723e-records.jsonl.gz package VERIFY_MAX=134217728 \\
  MEMCHECK_PTX=1 verify example dispatch                                          # today
# = fusekit build --arch sm_90; fusekit verify --package, then with FUSEKIT_PTX_ONLY=1; the example app;
#   compute-sanitizer memcheck of the example and of verify --package (problems up to 1.1 M elements, cubins
#   and PTX); dispatch_bench --benchmark_repetitions=5"
