# shellcheck shell=bash
# torch: fusekit's kernels inside PyTorch models (issue 25). Builds the
# PyTorch operator library (torch.utils.cpp_extension, against this machine's
# torch), captures the models with torch.export and plans each capture
# (bench/models.py capture), tunes each plan on this GPU (TORCH_BUDGET
# schedules per entry and size, 4) and builds its package, runs the GPU tests
# (python/tests/gpu: every replaced region against eager, CUDA graph replay,
# opcheck on CUDA; and python/tests/test_operator.py, the operator's checks
# with CPU tensors, against this machine's torch), one forward of each model
# under memcheck, then bench/models.py against eager, TorchScript and
# torch.compile -> capture.txt, tune-<case>.txt, gpu_tests.txt, models.json,
# models.md. TORCH_MODELS narrows the models ("bert gpt2 llama resnet50"; one
# or two fit a call), TORCH_SIZES the sizes ("b1 large decode"), TORCH_ITERS
# the timed forwards (50), TORCH_METHODS the methods (all: "eager torchscript
# compile compile_ro fusekit fusekit_graph"), TORCH_BENCH=0 skips the
# benchmark, TORCH_TESTS=0 the GPU tests, TORCH_TUNE_ARGS replaces the tune's
# options (--backend nvrtc), TORCH_MEMCHECK=0 skips one forward of each model
# at TORCH_MEMCHECK_SIZE (b1) under compute-sanitizer (memcheck.txt),
# TORCH_REGIONS=0 skips timing each region's kernel against torch.compile of
# its own ops (regions.json). models.json's host_overhead (also in the log) is
# the per-call bar: the host time of the operator the rewrite emits for the
# first region (launch_<inputs>_<outputs>) against torch.add, the same call as
# an FX graph node, and the generic launch(op, [inputs]) it replaced.
need_bins fusekit
work=/tmp/fusekit_torch_models
models=${TORCH_MODELS:-bert gpt2 llama resnet50}
sizes=${TORCH_SIZES:+--sizes $TORCH_SIZES}
export FUSEKIT_BIN="$PWD/$bin/fusekit" FUSEKIT_TORCH_BUILD=/tmp/fusekit_torch_build PYTHONPATH="$PWD/python:$PWD/bench"
python3 -c "import torch, transformers, torchvision;
print('torch', torch.__version__, 'cuda', torch.version.cuda, 'transformers', transformers.__version__)" >>"$log" 2>&1

step operator library
python3 -c "from fusekit.torch import ops; m = ops.library(); print(m.path, 'current stream:', m.has_current_stream())" \
  >>"$log" 2>&1
note "operator library" $?

step capture and plan "$models"
# shellcheck disable=SC2086
timeout 300 python3 bench/models.py capture --work "$work" --models $models $sizes >"$out/capture.txt" 2>&1
note capture $?

step tune and build each plan
for plan in "$work"/*/plan.json; do
  [ -f "$plan" ] || continue
  d=$(dirname "$plan") c=$(basename "$(dirname "$plan")")
  # shellcheck disable=SC2086
  timeout 120 "$bin/fusekit" tune --plan "$plan" --arch sm_90 --budget "${TORCH_BUDGET:-4}" \
    ${TORCH_TUNE_ARGS:---backend nvrtc} --db "$d/tune.db" >"$out/tune-$c.txt" 2>&1
  note "$c tune" $?
  timeout 120 "$bin/fusekit" build --plan "$plan" --arch sm_90 --db "$d/tune.db" --out "$d/pkg" \
    --runtime-lib .device/lib/libfusekit_runtime.a --runtime-include runtime/include \
    --cuda-include /usr/local/cuda/include >>"$out/tune-$c.txt" 2>&1
  note "$c build" $?
done

if [ "${TORCH_TESTS:-1}" != 0 ]; then
  step gpu tests
  FUSEKIT_MODELS="$work" timeout 300 python3 -m pytest -q -p no:cacheprovider python/tests/gpu python/tests/test_operator.py \
    >"$out/gpu_tests.txt" 2>&1
  note "gpu tests" $?
  tail -3 "$out/gpu_tests.txt" >>"$log"
fi

if [ "${TORCH_MEMCHECK:-1}" != 0 ]; then
  step memcheck one forward of each model
  # Only fusekit's NVRTC kernels (the tune's default backend here) are instrumented (kns: a name substring).
  # shellcheck disable=SC2086
  timeout 300 "${memcheck[@]}" --kernel-name kns=fusekit_sm python3 bench/models.py forward --work "$work" \
    --models $models --sizes "${TORCH_MEMCHECK_SIZE:-b1}" >"$out/memcheck.txt" 2>&1
  note "memcheck forward" $?
  grep -E "regions replaced|ERROR SUMMARY" "$out/memcheck.txt" >>"$log"
fi

if [ "${TORCH_BENCH:-1}" != 0 ]; then
  step benchmark
  # shellcheck disable=SC2086
  timeout 420 python3 bench/models.py bench --work "$work" --models $models $sizes --iters "${TORCH_ITERS:-50}" \
    ${TORCH_METHODS:+--methods $TORCH_METHODS} --out "$out/models.json" >"$out/bench.txt" 2>&1
  note bench $?
fi
[ -f "$out/models.json" ] && python3 bench/models.py table "$out/models.json" >"$out/models.md" 2>>"$log"
[ -f "$out/models.json" ] && python3 -c "import json, sys; print('host_overhead', json.load(open(sys.argv[1])).get('host_overhead'))" \
  "$out/models.json" >>"$log" 2>&1

if [ "${TORCH_REGIONS:-1}" != 0 ]; then
  step each region against torch.compile
  # shellcheck disable=SC2086
  timeout 300 python3 bench/models.py regions --work "$work" --models $models $sizes --out "$out/regions.json" \
    >"$out/regions.txt" 2>&1
  note regions $?
fi
finish
