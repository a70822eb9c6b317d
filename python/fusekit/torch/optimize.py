"""fusekit.torch.optimize and explain: a module with its plan's regions calling
a built package's kernels, the rest its own ops."""

import json
import os
import tempfile

from .. import plan_file
from . import graph_capture as _capture
from .package import Package
from .rewrite import Rewriter


def _plan_for(gm, name, symbols, package, plan, fusekit_bin):
    if plan is not None:
        return plan_file.load_plan(plan)
    recorded = package.plan()
    if recorded is not None and plan is None and fusekit_bin is None and recorded.get("model") == name:
        return plan_file.load_plan(recorded)
    # Plan this very graph: its node names are the ones the rewrite looks for.
    with tempfile.TemporaryDirectory() as d:
        graph = _capture.graph_from_module(gm, name, symbols)
        path = os.path.join(d, f"{name}.fkgraph.json")
        with open(path, "w") as f:
            json.dump(graph, f)
        from .. import cli
        out = os.path.join(d, f"{name}.plan.json")
        cli.run(["plan", path, "--out", out], fusekit_bin)
        return plan_file.load_plan(out)


def rewrite_module(gm, package_dir, plan, arch=None, shapes="exact", allow_ptx=False, symbols=None):
    """Rewrites an exported GraphModule in place; returns it with its report."""
    rw = Rewriter(gm, plan, package_dir, arch=arch, shapes=shapes, allow_ptx=allow_ptx, symbols=symbols)
    gm.fusekit_regions = rw.run()
    return gm


def optimize(module, package_dir, example_inputs, dims=None, plan=None, name=None, arch=None, shapes="exact",
             allow_ptx=False, fusekit_bin=None):
    """`module` exported (torch.export, eval mode) with every plan region the
    package has a kernel for replaced by a call of a fusekit launch operator
    (ops.operator: launch_<inputs>_<outputs>).

    plan: a plan path or dict (default: the one the package was built from,
    else `fusekit plan` on this capture); arch: decide for this arch instead of
    the current device ("sm_90"); shapes: "exact" takes only tuned shape
    buckets, "nearest" any; allow_ptx: take a package's portable PTX where it
    has no cubin for the arch.
    """
    gm, symbols = _capture.export(module, example_inputs, dims)
    name = name or type(module).__name__.lower()
    package = Package(package_dir)
    chosen = _plan_for(gm, name, symbols, package, plan, fusekit_bin)
    return rewrite_module(gm, package_dir, chosen, arch=arch, shapes=shapes, allow_ptx=allow_ptx, symbols=symbols)


def explain(module, runtime=None):
    """One line per plan region: the kernel it took, or why it kept its ops.
    runtime (default: when a CUDA device is present): add the package
    runtime's own choice for each replaced region (fusekit_explain)."""
    regions = getattr(module, "fusekit_regions", None)
    if regions is None:
        raise ValueError("this module was not made by fusekit.torch.optimize or the fusekit torch.compile backend")
    if runtime is None:
        import torch
        runtime = torch.cuda.is_available()
    taken = sum(r.replaced for r in regions)
    lines = [f"{taken} of {len(regions)} regions call fusekit kernels"]
    for r in regions:
        line = r.line()
        if runtime and r.replaced and all(isinstance(d, int) for d in r.shape):
            from . import ops
            line += f" | runtime: {ops.library().explain(r.op_id, list(r.shape), 256)}"
        lines.append(line)
    return "\n".join(lines)
