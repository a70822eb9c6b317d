"""On a GPU: every region fusekit replaces in the benchmark's models gives
eager's outputs, and the optimized modules run under inference_mode, no_grad
and inside a CUDA graph.

The packages come from scripts/gpu/steps/torch.sh (FUSEKIT_MODELS=DIR: one
folder per case with plan.json and pkg/); without a GPU, or without that
folder, every test skips with the reason.
"""

import glob
import json
import os
import sys

import pytest
import torch

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..")
sys.path.insert(0, os.path.join(ROOT, "bench"))

if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU: the model tests need one", allow_module_level=True)
WORK = os.environ.get("FUSEKIT_MODELS")
if not WORK or not os.path.isdir(WORK):
    pytest.skip("FUSEKIT_MODELS names no folder of built model packages (scripts/gpu/steps/torch.sh makes it)",
                allow_module_level=True)

import torch_models  # noqa: E402
from fusekit.torch import explain, ops, optimize, verify  # noqa: E402

CASES = sorted(d for d in glob.glob(os.path.join(WORK, "*")) if os.path.isdir(os.path.join(d, "pkg")))
SELECT = os.environ.get("FUSEKIT_MODEL_CASES", "-b1-,-decode-").split(",")


def _case(d):
    with open(os.path.join(d, "case.json")) as f:
        c = json.load(f)
    return torch_models.case(c["model"], c["size"], getattr(torch, c["dtype"].replace("torch.", "")), "cuda")


@pytest.mark.parametrize("case_dir", [d for d in CASES if any(s in os.path.basename(d) for s in SELECT)],
                         ids=os.path.basename)
def test_every_replaced_region_matches_eager(case_dir):
    c = _case(case_dir)
    gm = optimize(c.module, os.path.join(case_dir, "pkg"), c.inputs, plan=os.path.join(case_dir, "plan.json"),
                  name=c.name.replace("50", ""))
    print(explain(gm))
    replaced = [r for r in gm.fusekit_regions if r.replaced]
    assert replaced, "no region took a kernel:\n" + explain(gm)
    # The graph calls the fixed-arity operator of each region's arity (what the per-call bar measures).
    calls = [str(n.target) for n in gm.graph.nodes if ops.is_launch(n.target)]
    assert sorted(calls) == sorted(r.operator for r in replaced), calls
    assert all(r.operator == str(ops.operator(len(r.sources), len(r.outputs))) for r in replaced)
    assert any(ops.is_fixed(t) for t in calls), calls
    checks = verify.check_regions(c.module, c.inputs, gm)
    bad = [x for x in checks if not x["ok"]]
    assert len(checks) == len(replaced) and not bad, bad
    with torch.inference_mode():
        ref = c.module(*c.inputs)
        out = gm(*c.inputs)
    scale = ref.float().abs().max().item()
    # End to end the kernels' rounding compounds through the layers: a looser bound.
    assert (out.float() - ref.float()).abs().max().item() <= 0.1 * scale


def test_cuda_graph_replay_matches_a_plain_call():
    d = next((d for d in CASES if "-b1-" in d), None)
    if d is None:
        pytest.skip("no batch-1 case built")
    c = _case(d)
    gm = optimize(c.module, os.path.join(d, "pkg"), c.inputs, plan=os.path.join(d, "plan.json"),
                  name=c.name.replace("50", ""))
    with torch.no_grad():
        plain = gm(*c.inputs).clone()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            gm(*c.inputs)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out = gm(*c.inputs)
        graph.replay()
        torch.cuda.synchronize()
    torch.testing.assert_close(out, plain)


def test_operator_opcheck_on_cuda():
    d = next((d for d in CASES if "-b1-" in d), None)
    if d is None:
        pytest.skip("no batch-1 case built")
    c = _case(d)
    gm = optimize(c.module, os.path.join(d, "pkg"), c.inputs, plan=os.path.join(d, "plan.json"),
                  name=c.name.replace("50", ""))
    region = next(r for r in gm.fusekit_regions if r.replaced)
    ref_gm, values = verify.eager_values(c.module, c.inputs)
    ins = verify._inputs(region, ref_gm, values, gm)
    target = ops.operator(len(ins), len(region.outputs))
    assert ops.is_fixed(target) and str(target) == region.operator
    torch.library.opcheck(target, ops.call_args(target, region.op_id, ins),
                          test_utils=("test_schema", "test_faketensor", "test_aot_dispatch_dynamic"))
    # The generic operator, kept for entries wider than the family, gives the same outputs.
    n = len(region.outputs)
    for got, want in zip(torch.ops.fusekit.launch(region.op_id, ins), ops.launch(region.op_id, ins, n)):
        torch.testing.assert_close(got, want)
    # An offset view (misaligned for vector loads) either runs or fails with the package's message: never a crash.
    full = ins[0]
    shifted = torch.empty(full.numel() + 1, dtype=full.dtype, device=full.device)[1:].view_as(full).copy_(full)
    try:
        out = ops.launch(region.op_id, [shifted] + ins[1:], n)
        torch.testing.assert_close(out[0], ops.launch(region.op_id, ins, n)[0])
    except RuntimeError as e:
        assert "fusekit op" in str(e)
    # On CUDA too a wrong dtype is a Python exception naming the tensor.
    with pytest.raises(ValueError, match="this kernel was built for"):
        ops.launch(region.op_id, [ins[0].double()] + ins[1:], n)


def test_inductor_reduce_overhead_over_the_optimized_module():
    """torch.compile(mode="reduce-overhead") of the rewritten module: Inductor
    keeps the launch operators as extern calls (their fake kernels) inside its CUDA graphs."""
    d = next((d for d in CASES if "-b1-" in d), None)
    if d is None:
        pytest.skip("no batch-1 case built")
    c = _case(d)
    gm = optimize(c.module, os.path.join(d, "pkg"), c.inputs, plan=os.path.join(d, "plan.json"),
                  name=c.name.replace("50", ""))
    torch._dynamo.reset()
    compiled = torch.compile(gm, mode="reduce-overhead")
    with torch.no_grad():
        plain = gm(*c.inputs)
        for _ in range(3):
            out = compiled(*c.inputs)
    scale = plain.float().abs().max().item()
    assert (out.float() - plain.float()).abs().max().item() <= 0.05 * scale


_STRIDED_CALL = r"""
import json, os, sys
sys.path[:0] = sys.argv[2].split(os.pathsep)
import torch, torch_models
from fusekit.torch import ops, optimize, verify
d = sys.argv[1]
c = json.load(open(os.path.join(d, "case.json")))
case = torch_models.case(c["model"], c["size"], getattr(torch, c["dtype"].replace("torch.", "")), "cuda")
gm = optimize(case.module, os.path.join(d, "pkg"), case.inputs, plan=os.path.join(d, "plan.json"),
              name=case.name.replace("50", ""))
region = next((r for r in gm.fusekit_regions if r.replaced and any(k == "contiguous" for k, _ in r.sources)), None)
if region is None:
    print("NO_STRIDED_REGION")
    sys.exit(0)
ref_gm, values = verify.eager_values(case.module, case.inputs)
ins = verify._inputs(region, ref_gm, values, gm)
k = next(i for i, (kind, _) in enumerate(region.sources) if kind == "contiguous")
ins[k] = values[region.sources[k][1]]  # the strided view itself, not the copy the graph makes
print("calling", region.operator, "with", tuple(ins[k].shape), ins[k].stride(), flush=True)
try:
    ops.launch(region.op_id, ins, len(region.outputs))
    print("NO_ERROR")
except ValueError as e:
    print("VALUE_ERROR", e)
"""


def test_strided_input_to_the_operator_is_a_value_error():
    """Called straight from Python with the strided view a rewritten graph
    copies first, the operator raises ValueError naming the tensor (a child
    process, so that a crash fails this test and not the run)."""
    import subprocess
    d = next((d for d in CASES if os.path.basename(d).startswith("llama-b1")), None)
    if d is None:
        pytest.skip("no llama-b1 case built (its rotary regions read strided views)")
    path = os.pathsep.join([os.path.join(ROOT, "python"), os.path.join(ROOT, "bench")])
    done = subprocess.run([sys.executable, "-X", "faulthandler", "-c", _STRIDED_CALL, d, path],
                          capture_output=True, text=True, timeout=240)
    text = done.stdout + done.stderr[-6000:]
    if "NO_STRIDED_REGION" in done.stdout:
        pytest.skip("no region of the llama case reads a strided view")
    assert done.returncode == 0, f"child exited {done.returncode}:\n{text}"
    assert "VALUE_ERROR" in done.stdout and "call .contiguous()" in done.stdout, text
