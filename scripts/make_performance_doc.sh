#!/usr/bin/env bash
# Regenerates docs/performance.md (and docs/img/peers-*.png) from the committed
# results of the H200 runs of 2026-11-30 and 2026-12-01. Needs python3-matplotlib for the plots.
set -euo pipefail
cd "$(dirname "$0")/.."
r=bench/results/2026-11-30-h200
py=${PYTHON:-$(test -x /usr/bin/python3 && echo /usr/bin/python3 || echo python3)}
# The row runs pooled under 66ed6e3+, each with its records and its copies.
pooled=()
for run in 66ed6e3 d48ac76 3b98f01 f1af08a 927c29e d66b27f-norms d66b27f-softmax b01c854 c596d18 746953c \
  4bb7884-a 4bb7884-b 610cf2d 2f45bcf; do
  pooled+=(--rows-run 66ed6e3+ "$r-$run-rows-records.jsonl.gz" "$r-$run-rows-copy.jsonl")
done
pooled+=(--rows-run 66ed6e3+ "$r-610cf2d-lnrms-records.jsonl.gz" -)  # no copies of its own
pooled+=(--rows-run 66ed6e3+ "$r-610cf2d-1k-rows-records.jsonl.gz" "$r-610cf2d-1k-rows-copy.jsonl")
pooled+=(--rows-run 66ed6e3+ "$r-2f45bcf-peers-records.jsonl.gz" -)  # no copies of its own
pooled+=(--rows-run 66ed6e3+ "$r-0e6d801-lnrms-records.jsonl.gz" -)
pooled+=(--rows-run 66ed6e3+ "$r-2acacfa-lnrms-records.jsonl.gz" -)
for run in 731a221-65k ee61f7b-65k da426bc-65k 1795516-65k; do
  pooled+=(--rows-run 66ed6e3+ "$r-$run-rows-records.jsonl.gz" "$r-$run-rows-copy.jsonl")
done
# The Halide row schedule with vectors and warp lanes (f32, Halide records only).
h=bench/results/2026-12-01-h200
pooled+=(--rows-run 66ed6e3+ "$h-aadf380-halide-rows-records.jsonl.gz" "$h-aadf380-halide-rows-copy.jsonl")
pooled+=(--rows-run 66ed6e3+ "$h-fd4659c-halide-rows-records.jsonl.gz" -)  # no copies of its own
pooled+=(--rows-run 66ed6e3+ "$h-8a4d7bb-65k-rows-records.jsonl.gz" "$h-8a4d7bb-65k-rows-copy.jsonl")
pooled+=(--rows-run 66ed6e3+ "$h-740c4f2-halide-rows-records.jsonl.gz" -)  # Halide only, no copies of its own
pooled+=(--rows-run 66ed6e3+ "$h-d25d308-hint2-rows-records.jsonl.gz" -)  # no copies of its own
pooled+=(--rows-run 66ed6e3+ "$h-5e29efa-minb-rows-records.jsonl.gz" -)  # cut at 300 s: 3 of 14 ops
pooled+=(--rows-run 66ed6e3+ "$h-abbeed6-rows-records.jsonl.gz" "$h-abbeed6-rows-copy.jsonl")
# Timed with the L2 eviction priorities reset between candidates (5f673fd on).
pooled+=(--rows-run 66ed6e3+ "$h-5f673fd-rmsbf16-rows-records.jsonl.gz" "$h-5f673fd-rmsbf16-rows-copy.jsonl")
pooled+=(--rows-run 66ed6e3+ "$h-881a7d3-norms-rows-records.jsonl.gz" "$h-881a7d3-norms-rows-copy.jsonl")
pooled+=(--rows-run 66ed6e3+ "$h-df6396f-rows-65536-records.jsonl.gz" "$h-df6396f-rows-65536-copy.jsonl")
pooled+=(--rows-run 66ed6e3+ "$h-df6396f-rows-16384-records.jsonl.gz" "$h-df6396f-rows-16384-copy.jsonl")
pooled+=(--rows-run 66ed6e3+ "$h-b0d82bd-aln-budget96-records.jsonl.gz" "$h-b0d82bd-aln-budget96-copy.jsonl")
"$py" scripts/performance_report.py "$r-summary.json" docs/performance.md \
  --run a11723e "$r-a11723e-records.jsonl.gz" "$r-a11723e-copy.jsonl" \
  --run a2a0ff6-64m "$r-a2a0ff6-64m-records.jsonl.gz" "$r-a2a0ff6-64m-copy.jsonl" \
  --memcheck "$r-a11723e-memcheck.txt" --gpu-test "$r-a11723e-gpu_test.json" --notes docs/performance_notes.md \
  --command "# the whole catalog (run a11723e), then the 64 M rows again next to same-bytes copies (run a2a0ff6-64m):
scripts/prepare_device.sh build && BUDGET=24 TUNE_TIMEOUT=330 MEMCHECK_TIMEOUT=100 bash scripts/gpu_session.sh
scripts/prepare_device.sh build && RECORDS=bench/results/2026-11-30-h200-a11723e-records.jsonl.gz TUNE_TIMEOUT=150 \\
  bash scripts/gpu_package_session.sh
# gpu_session.sh runs, on the H200:
#   gpu_test                                          (ctest label gpu)
#   copy_bandwidth                                    (1 GiB, before and after tuning)
#   fusekit tune --arch sm_90 --dtype f32,bf16 --sizes 4096,65536,1048576,67108864 --budget 24 --db /tmp/h200.db
#   fusekit db export --db /tmp/h200.db h200.jsonl
#   compute-sanitizer --tool memcheck fusekit verify --arch sm_90 --dtype f32,bf16 --sizes 4096,65536 --db /tmp/h200.db
# gpu_package_session.sh first runs copy_bandwidth at 128, 192, 256, 384, 512 and 1024 MiB and
#   fusekit tune --arch sm_90 --dtype f32,bf16 --sizes 67108864 --budget 24" \
  --rows-run bb06126+4817c18 "$r-bb06126-rows-records.jsonl.gz" "$r-bb06126-rows-copy.jsonl" \
  --rows-run bb06126+4817c18 "$r-4817c18-rows-records.jsonl.gz" "$r-4817c18-rows-copy.jsonl" \
  "${pooled[@]}" \
  --rows-exclude d66b27f onepass=1 --rows-exclude b01c854 onepass=1 \
  --rows-gpu-test "$r-bb06126-rows-gpu_test.json,$r-55b0be7-rows-gpu_test.json,$r-66ed6e3-rows-gpu_test.json,$r-d48ac76-rows-gpu_test.json,$r-3b98f01-rows-gpu_test.json,$r-f1af08a-rows-gpu_test.json,$r-927c29e-rows-gpu_test.json,$r-d66b27f-norms-rows-gpu_test.json,$r-b01c854-rows-gpu_test.json,$r-c596d18-rows-gpu_test.json,$r-746953c-rows-gpu_test.json,$r-4bb7884-a-rows-gpu_test.json,$r-2f45bcf-rows-gpu_test.json,$r-963bca3-rows-gpu_test.json,$r-da426bc-65k-rows-gpu_test.json,$h-fd4659c-halide-rows-gpu_test.json,$h-740c4f2-halide-rows-gpu_test.json,$h-c541c46-gpu-tests-gpu_test.json,$h-d25d308-hint2-rows-gpu_test.json,$h-2e72e96-review-gpu_test.json,$h-550a299-hint-pointwise-gpu_test.json,$h-4beebcd-occ-pointwise-gpu_test.json,$h-5e29efa-minb-gpu_test.json,$h-abbeed6-rows-gpu_test.json,$h-764bae3-tests-gpu_test.json,$h-2253671-rmsbf16-rows-gpu_test.json,$h-5f673fd-rmsbf16-rows-gpu_test.json,$h-083d4bd-tests-gpu_test.json,$h-ea6f012-twosets-gpu_test.json,$h-b0d82bd-aln-budget96-gpu_test.json" \
  --rows-memcheck "$r-bb06126-rows-memcheck.txt,$r-4817c18-rows-memcheck.txt,$r-55b0be7-rows-memcheck.txt,$r-66ed6e3-rows-memcheck.txt,$r-d48ac76-rows-memcheck.txt,$r-3b98f01-rows-memcheck.txt,$r-f1af08a-rows-memcheck.txt,$r-927c29e-rows-memcheck.txt,$r-d66b27f-norms-rows-memcheck.txt,$r-d66b27f-softmax-rows-memcheck.txt,$r-b01c854-rows-memcheck.txt,$r-c596d18-rows-memcheck.txt,$r-746953c-rows-memcheck.txt,$r-4bb7884-a-rows-memcheck.txt,$r-4bb7884-b-rows-memcheck.txt,$r-610cf2d-rows-memcheck.txt,$r-610cf2d-1k-rows-memcheck.txt,$r-2f45bcf-rows-memcheck.txt,$r-731a221-65k-rows-memcheck.txt,$r-ee61f7b-65k-rows-memcheck.txt,$r-da426bc-65k-rows-memcheck.txt,$r-1795516-65k-rows-memcheck.txt,$h-aadf380-halide-rows-memcheck.txt,$h-8a4d7bb-65k-rows-memcheck.txt,$h-d25d308-hint2-rows-memcheck.txt,$h-550a299-hint-pointwise-memcheck.txt,$h-4beebcd-occ-pointwise-memcheck.txt,$h-5e29efa-minb-rows-memcheck.txt,$h-abbeed6-rows-memcheck.txt,$h-764bae3-tests-memcheck.txt,$h-764bae3-rmsbf16-rows-memcheck.txt,$h-2253671-rmsbf16-rows-memcheck.txt,$h-5f673fd-rmsbf16-rows-memcheck.txt,$h-881a7d3-norms-rows-memcheck.txt,$h-a396dab-pointwise-hint-memcheck.txt,$h-083d4bd-smta-cs-memcheck.txt,$h-df6396f-rows-65536-memcheck.txt,$h-df6396f-rows-16384-memcheck.txt,$h-b0d82bd-aln-budget96-memcheck.txt" \
  --rows-notes docs/performance_rows_notes.md \
  --rows-command "scripts/prepare_device.sh build && TEST_TIMEOUT=120 TUNE_TIMEOUT=330 MEMCHECK_TIMEOUT=100 BUDGET=16 \\
  bash scripts/gpu_reduction_session.sh                                           # run bb06126, 6 min 11 s
scripts/prepare_device.sh build && SKIP_TESTS=1 BACKENDS=nvrtc TUNE_TIMEOUT=400 MEMCHECK_TIMEOUT=100 BUDGET=20 \\
  bash scripts/gpu_reduction_session.sh                                           # run 4817c18, 4 min 36 s
# = gpu_test (bb06126); copy_bandwidth at 64-1024 MiB; fusekit tune --arch sm_90 --pattern softmax,log_softmax,
#   layernorm,rmsnorm,add_layernorm,add_rmsnorm,bias_add_softmax --dtype f32,bf16 --backend nvrtc,halide (bb06126;
#   4817c18: nvrtc) (shapes 256x1024 32768x1024 8192x4096 4096x16384 1024x65536 3000x3001); compute-sanitizer
#   memcheck of fusekit verify of every winner at 256x1024, 3000x3001 (and 9x65537 in 4817c18).
# 4817c18 changed the bf16 seeds (half the threads, twice the cached vectors); the two runs' records are
# imported into one database, so each shape bucket's winner is the faster of the two runs.
scripts/prepare_device.sh build && DTYPES=bf16 BUDGET=28 BACKENDS=nvrtc TUNE_TIMEOUT=300 \
  bash scripts/gpu_reduction_session.sh                                           # run 55b0be7, 4 min 33 s
scripts/prepare_device.sh build && DTYPES=f32,bf16 BUDGET=24 BACKENDS=nvrtc TUNE_TIMEOUT=400 TEST_TIMEOUT=150 \
  MEMCHECK_TIMEOUT=60 bash scripts/gpu_reduction_session.sh                       # run 66ed6e3, 8 min 10 s
# 55b0be7: bf16 rows held packed in registers and the keep parameter (bf16 only); 66ed6e3 adds whole vectors
# without per-lane guards, which changes every NVRTC row kernel, so its records (f32 and bf16) replace the
# earlier runs' NVRTC winners in this table; the Halide column is still run bb06126's.
OPS=add_layernorm,rmsnorm,layernorm,bias_add_softmax,softmax,add_rmsnorm,log_softmax DTYPES=f32,bf16 BUDGET=24 \
  BACKENDS=nvrtc SIZES=32768x1024,8192x4096,4096x16384,1024x65536 TEST_TIMEOUT=180 TUNE_TIMEOUT=340 \
  MEMCHECK_TIMEOUT=50 MEMCHECK_SIZES=256x1024,3000x3001,9x65537,7x16381 bash scripts/gpu_reduction_session.sh  # d48ac76
OPS=(as above) DTYPES=f32,bf16 BUDGET=24 BACKENDS=nvrtc TEST_TIMEOUT=150 TUNE_TIMEOUT=395 MEMCHECK_TIMEOUT=40 \
  MEMCHECK_SIZES=256x1024,3000x3001,9x65537,7x16381 bash scripts/gpu_reduction_session.sh       # 3b98f01, 6 min 50 s
OPS=rmsnorm,add_layernorm,layernorm,softmax DTYPES=f32,bf16 BUDGET=24 BACKENDS=nvrtc SIZES=4096x16384,1024x65536 \
  TEST_TIMEOUT=100 TUNE_TIMEOUT=120 MEMCHECK_TIMEOUT=30 MEMCHECK_SIZES=3000x3001,9x65537,7x16381 \
  bash scripts/gpu_reduction_session.sh                                           # f1af08a (tune cut at 120 s: 7 of 8)
DTYPES=f32,bf16 BUDGET=32 BACKENDS=nvrtc SIZES=8192x4096,4096x16384,1024x65536 TEST_TIMEOUT=150 TUNE_TIMEOUT=330 \
  MEMCHECK_TIMEOUT=50 MEMCHECK_SIZES=3000x3001,9x65537,2000x4096 bash scripts/gpu_reduction_session.sh
                                                       # 927c29e, 7 min 26 s (tune cut at 330 s: 12 of 14)
OPS=layernorm,add_layernorm,rmsnorm,add_rmsnorm DTYPES=f32,bf16 BUDGET=36 BACKENDS=nvrtc \
  SIZES=8192x4096,4096x16384,1024x65536 TEST_TIMEOUT=200 TUNE_TIMEOUT=300 MEMCHECK_TIMEOUT=50 \
  MEMCHECK_SIZES=3000x3001,9x65537,2000x4096 bash scripts/gpu_reduction_session.sh    # d66b27f-norms, 6 min 4 s
SKIP_TESTS=1 OPS=softmax,log_softmax,bias_add_softmax (the rest as above)                 # d66b27f-softmax, 2 min 50 s
OPS=layernorm,add_layernorm,softmax,log_softmax,bias_add_softmax BUDGET=28 TUNE_TIMEOUT=280 (the rest as above)
                                                                                         # b01c854, 5 min 16 s
OPS=layernorm,add_layernorm,softmax BUDGET=38 TUNE_TIMEOUT=260 MEMCHECK_TIMEOUT=40 (the rest as above)
                                                                                         # c596d18, 3 min 52 s
OPS=layernorm,softmax,rmsnorm BUDGET=36 TEST_TIMEOUT=150 TUNE_TIMEOUT=190 MEMCHECK_TIMEOUT=30 (the rest as above)
                                                                                         # 746953c, 4 min 21 s
OPS=layernorm,softmax,rmsnorm,add_layernorm DTYPES=f32,bf16 BUDGET=24 BACKENDS=nvrtc SIZES=8192x4096,4096x16384,1024x65536 \
  TEST_TIMEOUT=200 TUNE_TIMEOUT=280 MEMCHECK_TIMEOUT=60 MEMCHECK_SIZES=3000x3001,9x65537,2000x4096 \
  bash scripts/gpu_reduction_session.sh                                           # 4bb7884-a, 5 min 17 s
SKIP_TESTS=1 OPS=log_softmax,add_rmsnorm,bias_add_softmax TUNE_TIMEOUT=260 (the rest as above)  # 4bb7884-b, 3 min
SKIP_TESTS=1 SIZES=4096x16384 MEMCHECK_SIZES=3000x3001,7x16384 TUNE_TIMEOUT=260 (every op; the rest as above)
                                                            # 610cf2d-rows, 4 min 34 s (tune cut at 260 s: 12 of 14)
fusekit tune --arch sm_90 --pattern layernorm,rmsnorm --dtype bf16,f32 --backend nvrtc --budget 24 --specialize 6 \
  --sizes 4096x16384        # 610cf2d-lnrms, the first step of the second peers call below (no copies of its own)
SKIP_TESTS=1 DTYPES=bf16,f32 BUDGET=20 BACKENDS=nvrtc SIZES=32768x1024 TUNE_TIMEOUT=150 MEMCHECK_TIMEOUT=40 \
  MEMCHECK_SIZES=3000x3001,7x1024 bash scripts/gpu_reduction_session.sh
                                                         # 610cf2d-1k, 2 min 44 s (tune cut at 150 s: 10 of 14)
OPS=softmax,log_softmax,layernorm,rmsnorm,add_layernorm,add_rmsnorm,bias_add_softmax DTYPES=f32,bf16 BUDGET=24 BACKENDS=nvrtc \
  SIZES=4096x16384,1024x65536 TEST_TIMEOUT=160 TUNE_TIMEOUT=300 MEMCHECK_TIMEOUT=45 MEMCHECK_SIZES=3000x3001,9x65537,7x16381 \
  bash scripts/gpu_reduction_session.sh                     # 2f45bcf-rows, 7 min 26 s (tune cut at 300 s: 10 of 14)
fusekit tune --arch sm_90 --pattern add_rmsnorm,bias_add_softmax --dtype f32,bf16 --backend nvrtc --budget 24 \
  --sizes 4096x16384,1024x65536     # 2f45bcf-peers, the first step of the peers call below (no copies of its own)
fusekit tune --arch sm_90 --pattern layernorm,rmsnorm --dtype bf16 --backend nvrtc --budget 24 --sizes 4096x16384
      # 0e6d801-lnrms and 2acacfa-lnrms, each the first step of a call that then ran
      # RECORDS=<its winners> PEERS_ARGS='--ops layernorm,rmsnorm' bash scripts/gpu_peers_session.sh (no copies)
source scripts/device_env.sh; fusekit tune --arch sm_90 --pattern bn_relu --dtype f32,bf16 --backend nvrtc --budget 24 \
  --sizes 67108864,1048576 --db /tmp/rows.db; OPS=rmsnorm,layernorm,softmax,add_layernorm,add_rmsnorm,log_softmax,bias_add_softmax \
  DTYPES=f32,bf16 BUDGET=24 BACKENDS=nvrtc SIZES=1024x65536 SKIP_TESTS=1 TUNE_TIMEOUT=330 MEMCHECK_TIMEOUT=45 \
  MEMCHECK_SIZES=9x65537,7x16381 bash scripts/gpu_reduction_session.sh   # 731a221-65k, 3 min 40 s (bn_relu first, same database)
OPS=(as above) DTYPES=f32,bf16 BUDGET=24 BACKENDS=nvrtc SIZES=1024x65536 SKIP_TESTS=1 TUNE_TIMEOUT=360 MEMCHECK_TIMEOUT=45 \
  MEMCHECK_SIZES=9x65537,7x16381 bash scripts/gpu_reduction_session.sh   # ee61f7b-65k, 3 min 48 s
timeout 200 gpu_test    # 963bca3: the GPU tests of this session, 10 of 10, first step of the peers call 963bca3
OPS=rmsnorm,layernorm,softmax,log_softmax,add_layernorm,add_rmsnorm,bias_add_softmax DTYPES=bf16 BUDGET=24 BACKENDS=nvrtc \
  SIZES=1024x65536 TEST_TIMEOUT=170 TUNE_TIMEOUT=170 MEMCHECK_TIMEOUT=35 MEMCHECK_SIZES=9x65537,7x16381 \
  bash scripts/gpu_reduction_session.sh         # da426bc-65k, 3 min 26 s (GPU tests 10 of 10, after the peers call)
OPS=rmsnorm,layernorm,softmax,log_softmax SKIP_TESTS=1 TUNE_TIMEOUT=120 MEMCHECK_TIMEOUT=30 (the rest as above)   # 1795516-65k, 1 min 29 s
OPS=softmax,log_softmax,layernorm,rmsnorm,add_layernorm,add_rmsnorm,bias_add_softmax DTYPES=f32 BUDGET=12 BACKENDS=halide \
  SIZES=32768x1024,8192x4096,4096x16384,1024x65536,3000x3001 TEST_TIMEOUT=200 TUNE_TIMEOUT=250 MEMCHECK_TIMEOUT=70 \
  MEMCHECK_SIZES=256x1024,3000x3001,4096x64 bash scripts/gpu_reduction_session.sh
      # aadf380-halide-rows, 4 min 7 s (GPU tests 9 of 10: a 1024-thread Halide kernel over the register limit, fixed in 3aebcc6)
TEST_TIMEOUT=200 TUNE_TIMEOUT=200 VERIFY_TIMEOUT=90 MEMCHECK_TIMEOUT=150 bash scripts/gpu_halide_rows_session.sh
      # fd4659c-halide-rows, 3 min 57 s: GPU tests 10 of 10; the same Halide-only tune at budget 12; a package of its
      # winners; fusekit verify --package 42 checks, 0 failed, and under memcheck 42 checks, 0 errors
SKIP_TESTS=1 OPS=softmax,log_softmax,layernorm,add_layernorm,bias_add_softmax DTYPES=f32,bf16 BUDGET=24 BACKENDS=nvrtc \
  SIZES=1024x65536 TUNE_TIMEOUT=360 MEMCHECK_TIMEOUT=45 MEMCHECK_SIZES=9x65537,7x16381 \
  bash scripts/gpu_reduction_session.sh                                   # 8a4d7bb-65k, 3 min 20 s
TEST_TIMEOUT=180 TUNE_TIMEOUT=200 VERIFY_TIMEOUT=60 MEMCHECK_TIMEOUT=100 bash scripts/gpu_halide_rows_session.sh
      # 740c4f2-halide-rows, 5 min 32 s: GPU tests 10 of 10; the Halide tune now specializes (staged rows);
      # verify --package 66 checks, 0 failed, and under memcheck 66 checks, 0 errors
source scripts/device_env.sh; timeout 200 .device/bin/gpu_test --gtest_output=json:\$OUT/gpu_test.json   # c541c46, 10 of 10
OPS=softmax,log_softmax,layernorm,rmsnorm,add_layernorm,add_rmsnorm,bias_add_softmax DTYPES=f32,bf16 SIZES=4096x16384 \\
  BACKENDS=nvrtc BUDGET=16 SPECIALIZE=3 TUNE_TIMEOUT=290 TEST_TIMEOUT=200 MEMCHECK_TIMEOUT=60 \\
  bash scripts/gpu_reduction_session.sh   # d25d308-hint2-rows, 6 min 14 s: GPU tests 10 of 10 (copies not kept)
source scripts/device_env.sh; run_gpu_tests 200; fusekit tune --arch sm_90 --pattern rmsnorm,softmax --dtype f32 \\
  --backend nvrtc,halide --budget 4 --specialize 0 --sizes 3000x3001,512x4096 --db /tmp/r.db; compute-sanitizer --tool \\
  memcheck fusekit verify --arch sm_90 --pattern rmsnorm,softmax --dtype f32 --sizes 3000x3001,512x4096 --db /tmp/r.db
      # 2e72e96-review, 2 min 30 s, after the review's changes to fusekit verify: GPU tests 10 of 10; 12 checks, 0 errors
PATTERNS=relu_add,sigmoid_mul_tanh_add,bias_gelu,bias_gelu_tanh,bn_relu,residual_add_relu,silu_mul SIZES=67108864 \\
  BUDGET=32 BACKENDS=nvrtc TUNE_TIMEOUT=330 MEMCHECK_TIMEOUT=100 bash scripts/gpu_session.sh
      # 550a299-hint-pointwise, 3 min 42 s: the pointwise hint parameter (taken out again in 68afece, no effect);
      # GPU tests 11 of 11, memcheck of the winners 42 checks, 0 errors. The same command at 4beebcd (occ=1):
      # 4beebcd-occ-pointwise, 4 min 4 s, GPU tests 11 of 11, memcheck 42 checks, 0 errors (pointwise runs; the
      # row tables above do not read their records)
OPS=softmax,log_softmax,layernorm,rmsnorm,add_layernorm,add_rmsnorm,bias_add_softmax DTYPES=f32,bf16 SIZES=4096x16384 \\
  BACKENDS=nvrtc BUDGET=16 SPECIALIZE=3 TUNE_TIMEOUT=300 TEST_TIMEOUT=220 MEMCHECK_TIMEOUT=50 \\
  bash scripts/gpu_reduction_session.sh
      # 5e29efa-minb-rows: minb (registers capped for B blocks per SM) as a searched parameter and the tuner's
      # register-capped twins of its specialized schedules; GPU tests 11 of 11; the tune was cut at 300 s after
      # 3 of 14 ops (minb made the space's enumeration 4x slower; abbeed6 takes it out of the search);
      # memcheck 3 checks, 0 errors. The same command at abbeed6 (TUNE_TIMEOUT=340 TEST_TIMEOUT=200
      # MEMCHECK_TIMEOUT=45): abbeed6-rows, 7 min 11 s, GPU tests 11 of 11, every op tuned (287 s), batches timed
      # in 5 interleaved rounds; memcheck of the winners 20 checks, 0 errors
OPS=softmax,log_softmax,bias_add_softmax,add_layernorm,add_rmsnorm,layernorm,rmsnorm DTYPES=f32,bf16 SIZES=1024x65536 \\
  BUDGET=24 BACKENDS=nvrtc SPECIALIZE=3 SKIP_TESTS=1 TUNE_TIMEOUT=370 MEMCHECK_TIMEOUT=40 \\
  bash scripts/gpu_reduction_session.sh     # df6396f-rows-65536, 344 s, the L2 reset and two input copies
      # (5f673fd, ea6f012); memcheck 14 checks, 0 errors. The same with the norms left out at SIZES=4096x16384
      # (TUNE_TIMEOUT=330): df6396f-rows-16384, 249 s, memcheck 13 checks, 0 errors. Then add_layernorm f32 alone
      # at 1024x65536 with BUDGET=96 TUNE_TIMEOUT=200 and the GPU tests first: b0d82bd-aln-budget96, 234 s,
      # GPU tests 12 of 12, memcheck 1 check, 0 errors (commands in docs/performance_peers_notes.md)
# d48ac76: rows staged in shared memory (smem=1); a seed-spelling bug left its register seeds unmeasured, so
# 3b98f01 (the fix) tuned every shape again; f1af08a: re-reading passes with unroll=2/4; 927c29e: persistent
# blocks (persist=1/2); d66b27f: one combine per pair of reductions on cached rows (onepass) and weights
# loaded ahead (wbatch); b01c854: onepass on re-reading rows; c596d18: the pair combine's cross-warp merge
# fixed (a butterfly per warp); 746953c: L2 eviction policies on the loads (hint); 4bb7884: kernels compiled for
# one row length (len=L), the two fastest generic schedules per timed length specialized; 610cf2d: also the two
# fastest exact fits, and a 1024-thread register seed (610cf2d-lnrms: the six and six fastest); 2f45bcf: also, of the
# four fastest per length, the two whose build for the length holds more warps per SM (ptxas registers); 0e6d801:
# a 512-thread bf16 register seed for rows of 16384; 2acacfa: the warps list takes two beyond the other lists;
# 731a221-65k: persistent seeds for rows of 65536, their grid capped at the clusters the device holds; ee61f7b-65k:
# rows of 65536 split across clusters of 2; da426bc-65k: bf16 pairs of 1024-thread blocks;
# 1795516-65k: seeds past the budget taken by timed row length first; aadf380/fd4659c-halide-rows: the Halide schedule's
# vectors (vec) and warp-lane combine (lanes), Halide records only (the Halide column); 8a4d7bb-65k: the pair seeds
# (split=2) also with one combine per pair of reductions (onepass=1); 740c4f2-halide-rows: Halide rows specialized for
# their length, the row staged in shared memory where it fits; d25d308-hint2-rows: Inductor's load hints (hint=2) on
# the rows of 16384 held in registers, --specialize 3. Every schedule these runs name prints the same kernel in all the commits that
# know its parameters (new parameters default to the old kernel), except onepass=1 in d66b27f and b01c854,
# whose pair combine c596d18 replaced: those records are left out; and persistent schedules (persist>0), whose
# grid 731a221 caps at the clusters the device holds (before, P x SMs / split clusters, of which up to 3 clusters of
# 4 were not resident on the H200): their records before 731a221 measured the uncapped grid (none wins a shape). The rest pool into one database: each
# shape's winner is the schedule whose records have the lowest median, as \`fusekit build\` chooses." \
  --package-run fc2b3b4 "$r-fc2b3b4-package" "before selections were reused per call" \
  --package-run ffff4b3 "$r-ffff4b3-package" "selections reused per call; a noisy machine" \
  --package-run 261f2b1 "$r-261f2b1-package" "and no string built per selection" \
  --profile "$h-b0d82bd-profile-profile.json" \
  --profile-command "# the package of the peers call b0d82bd below (the same records), built again on the GPU machine and
# profiled in a call of its own (80 s):
RECORDS=bench/results/2026-12-01-h200-b0d82bd-package-winners.jsonl.gz SKIP_VERIFY=1 CALLS_TIMEOUT=90 NCU_TIMEOUT=120 bash scripts/gpu_profile_session.sh
# = fusekit build --arch sm_90 from those records; python3 bench/profile_kernels.py calls (host time per call over
#   2000 back-to-back calls, CUDA events); ncu --clock-control none --nvtx --nvtx-include fk/ ...
#   (profile_kernels.py ncu); merge" \
  --peers "b0d82bd" "$h-b0d82bd-peers-peers.json" --plots img \
  --peers-notes docs/performance_peers_notes.md \
  --peers-command "export H=bench/results/2026-12-01-h200
# The package: the records of the previous full-suite call 3df6580 (178), with the fixed-measurer retunes
# df6396f-rows-65536 (every row op at 1024x65536) and df6396f-rows-16384 (softmax, log_softmax, bias_add_softmax,
# add_layernorm, add_rmsnorm at 4096x16384) superseding theirs, built here (no GPU needed; 61 s):
python3 scripts/winners_jsonl.py \$H-b0d82bd-package-winners.jsonl.gz \$H-a396dab-package-winners.jsonl.gz \\
  \$H-df6396f-rows-65536-records.jsonl.gz \$H-df6396f-rows-16384-records.jsonl.gz --supersede df6396f-rows
build/cli/fusekit db import --db /tmp/pkgdb.db \$H-b0d82bd-package-winners.jsonl.gz
build/cli/fusekit build --arch sm_90 --pattern all --db /tmp/pkgdb.db --out .pkg --runtime-lib build/runtime/libfusekit_runtime.a \\
  --runtime-include runtime/include --cuda-include /usr/local/cuda/include
# One device call, carrying .pkg/lib/libfusekit_kernels.so:
OUT=\$OUT PACKAGE=.pkg PEERS_TIMEOUT=450 bash scripts/gpu_peers_session.sh   # call b0d82bd, the whole suite, 296 s
# = python3 bench/peers.py --package .pkg --package-ready /tmp/pkg.ready --out peers.json: compiles torch.compile's
#   252 graphs in 8 processes, then times every op in 5 interleaved rounds, a 300 us spin kernel queued before
#   each timed call (--spacer-us), at least two input sets rotated at every size. The package's kernels were
#   verified against the CPU reference when tuned (odd shapes), the retunes' winners under memcheck
#   (df6396f-rows-65536: 14 checks, df6396f-rows-16384: 13 checks, 0 errors), and 126 of 126 outputs matched
#   eager in this call."
