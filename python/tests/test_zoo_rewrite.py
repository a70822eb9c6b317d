"""The benchmark's models (tiny configs) go the whole CPU path: capture,
`fusekit plan`, a modeled `tune --plan`, `build --plan`, and the rewrite of
the exported graph onto the package; every region takes its kernel."""

import os
import subprocess
import sys

import pytest
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))
import torch_models  # noqa: E402
from fusekit.plan_file import load_plan  # noqa: E402
from fusekit.torch import capture, export  # noqa: E402
from fusekit.torch import ops, verify  # noqa: E402
from fusekit.torch.optimize import rewrite_module  # noqa: E402

pytest.importorskip("transformers")


def _fusekit(fusekit_bin, *args):
    done = subprocess.run([fusekit_bin, *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


# BERT takes the same path on the GPU machine (scripts/gpu/steps/torch.sh); GPT-2 and Llama add
# multi-output regions read before their last node and casts with metadata asserts.
# Llama's decode step is one row, where the norms' [hidden] weights are full-shape inputs of a [1, 1, hidden] region.
@pytest.mark.parametrize("name,size", [("gpt2", "b1"), ("llama", "b1"), ("llama", "decode")])
def test_zoo_model_rewrites_onto_its_package(tmp_path, fusekit_bin, oplib, name, size):
    c = torch_models.case(name, size, torch.float16, "cpu", tiny=True)
    plan = capture(c.module, c.inputs, str(tmp_path / "g.fkgraph.json"), name=name, fusekit_bin=fusekit_bin)
    db, pkg = str(tmp_path / "t.db"), str(tmp_path / "pkg")
    _fusekit(fusekit_bin, "tune", "--plan", plan, "--arch", "sm_90", "--budget", "1", "--db", db)
    _fusekit(fusekit_bin, "build", "--plan", plan, "--arch", "sm_90", "--db", db, "--out", pkg)
    gm, symbols = export(c.module, c.inputs)
    gm = rewrite_module(gm, pkg, load_plan(plan), arch="sm_90", symbols=symbols)
    gm.graph.lint()
    regions = gm.fusekit_regions
    wrong = [r.line() for r in regions if not r.replaced]
    assert regions and not wrong, "\n".join(wrong)
    launches = [n for n in gm.graph.nodes if ops.is_launch(n.target)]
    assert len(launches) == len(regions)
    # Llama's rotary embedding reads q and k through the head split's transpose: the kernel gets a copy
    # (at one token that transpose swaps a dim of size 1, and the view is contiguous).
    copied = [r for r in regions if "copies strided input" in r.detail]
    assert bool(copied) == ((name, size) == ("llama", "b1")), [r.line() for r in copied]
    viewed = [r for r in regions if "views input" in r.detail]
    assert bool(viewed) == (size == "decode"), [r.line() for r in viewed]
    # Every region is a call of the fixed-arity operator for its own inputs and outputs.
    for r, n in zip([r for r in regions if r.replaced], sorted(launches, key=lambda n: n.args[0])):
        assert n.args[0] == r.op_id and str(n.target) == r.operator
        assert r.operator == f"fusekit.launch_{len(r.sources)}_{len(r.outputs)}.default", r.line()
    assert any(len(r.outputs) > 1 for r in regions if r.replaced)  # a tuple-returning member too
    # Each replaced region as a module of its original ops (what bench/models.py regions times beside the
    # kernel) gives eager's values of the nodes the kernel replaces.
    ref_gm, values = verify.eager_values(c.module, c.inputs)
    for r in regions:
        if r.replaced:
            sub, feeds = verify.region_module(ref_gm, values, r)
            with torch.no_grad():
                got = sub(*feeds)
            for tensor, name in zip(got, r.outputs):
                torch.testing.assert_close(tensor, values[name], msg=r.line())
    # The region check feeds the kernel what the graph does: the viewed inputs in the region's shape.
    for r in viewed:
        ins = verify._inputs(r, ref_gm, values, gm)
        assert r.views and all(list(ins[i].shape) == r.shape for i in r.views), r.line()
