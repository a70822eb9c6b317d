#!/usr/bin/env bash
# GPU step "torch": fusekit's kernels inside PyTorch models (issue 25).
#
# Captures BERT base, GPT-2 small, a Llama-style decoder (hidden 2048, 4
# layers, GQA; batch 1, large batch, one decode step) and ResNet-50 with
# torch.export, plans each capture (`fusekit plan`), tunes the plan on this
# GPU with a small budget (`fusekit tune --plan`), builds its package
# (`fusekit build --plan`), builds the PyTorch operator library
# (torch.utils.cpp_extension), runs the GPU tests (every replaced region
# against eager, CUDA graph replay, opcheck on CUDA), then bench/models.py.
#
# Runs in the repo root with the build in build/. Writes under $OUT/torch/:
# step.log, capture.txt, tune-<case>.txt, gpu_tests.txt, models.json,
# models.md. TORCH_MODELS narrows the models ("bert llama"), TORCH_BUDGET the
# tune budget per entry and size (default 4), TORCH_ITERS the timed forwards.
set -uo pipefail
cd "$(dirname "$0")/../../.."
out="${OUT:?}/torch"
mkdir -p "$out"
log="$out/step.log"
work=/tmp/fusekit_torch_models
fk="$PWD/build/cli/fusekit"
export FUSEKIT_BIN="$fk" FUSEKIT_TORCH_BUILD="$PWD/build/python_ops" PYTHONPATH="$PWD/python:$PWD/bench"
models=${TORCH_MODELS:-bert gpt2 llama resnet50}
step() { echo "== $* ($(date -u +%T))" | tee -a "$log"; }
fail=0

step environment
{ nvidia-smi --query-gpu=name,driver_version --format=csv; python3 -c "import torch, transformers, torchvision;
print('torch', torch.__version__, 'cuda', torch.version.cuda, 'transformers', transformers.__version__)"; } >>"$log" 2>&1

step operator library
start=$(date +%s)
python3 -c "from fusekit.torch import ops; m = ops.library(); print(m.path, 'current stream:', m.has_current_stream())" \
  >>"$log" 2>&1 || { echo "operator library build failed" | tee -a "$log"; exit 1; }
echo "operator library built in $(( $(date +%s) - start )) s" | tee -a "$log"

step capture and plan
# shellcheck disable=SC2086
timeout 300 python3 bench/models.py capture --work "$work" --models $models >"$out/capture.txt" 2>&1
echo "capture rc=$?" | tee -a "$log"

step tune and build each plan
for plan in "$work"/*/plan.json; do
  [ -f "$plan" ] || continue
  d=$(dirname "$plan"); c=$(basename "$d")
  timeout 120 "$fk" tune --plan "$plan" --arch sm_90 --budget "${TORCH_BUDGET:-4}" --db "$d/tune.db" \
    >"$out/tune-$c.txt" 2>&1
  echo "$c: tune rc=$?" | tee -a "$log"
  timeout 120 "$fk" build --plan "$plan" --arch sm_90 --db "$d/tune.db" --out "$d/pkg" >>"$out/tune-$c.txt" 2>&1
  echo "$c: build rc=$?" | tee -a "$log"
done

step gpu tests
FUSEKIT_MODELS="$work" timeout 300 python3 -m pytest -q -p no:cacheprovider python/tests/gpu >"$out/gpu_tests.txt" 2>&1
rc=$?; echo "gpu tests rc=$rc" | tee -a "$log"; [ $rc -eq 0 ] || fail=1
tail -3 "$out/gpu_tests.txt" | tee -a "$log"

step benchmark
# shellcheck disable=SC2086
timeout 420 python3 bench/models.py bench --work "$work" --models $models --iters "${TORCH_ITERS:-50}" \
  --out "$out/models.json" >"$out/bench.txt" 2>&1
rc=$?; echo "bench rc=$rc" | tee -a "$log"; [ $rc -eq 0 ] || fail=1
[ -f "$out/models.json" ] && python3 bench/models.py table "$out/models.json" >"$out/models.md" 2>>"$log"
step done
exit $fail
