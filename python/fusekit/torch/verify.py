"""Checking every replaced region of an optimized module against PyTorch:
each kernel is called on the values eager PyTorch computes for its inputs,
and its outputs are compared with eager's values of the nodes it replaced
(one region at a time, so errors do not compound through the model)."""

import operator

import torch
from torch.fx import Interpreter

from . import graph_capture, ops

# (rtol, atol) relative to the reference's largest magnitude, per dtype.
TOLERANCE = {torch.float32: (2e-3, 2e-3), torch.float16: (1e-2, 1e-2), torch.bfloat16: (5e-2, 5e-2)}


def eager_values(module, example_inputs, dims=None):
    """Every FX node's value, by name, of the module's exported graph run by PyTorch."""
    gm, _ = graph_capture.export(module, example_inputs, dims)
    run = Interpreter(gm, garbage_collect_values=False)
    with torch.no_grad():
        run.run(*example_inputs)
    return gm, {n.name: v for n, v in run.env.items()}


def _inputs(region, gm, values, optimized):
    out = []
    for kind, name in region.sources:
        if kind == "node":
            out.append(values[name])
        elif kind == "contiguous":  # a strided view the rewritten graph copies first
            out.append(values[name].contiguous())
        elif kind == "attr":
            out.append(operator.attrgetter(name)(optimized))
        else:  # the matmul of a linear whose bias the kernel adds
            out.append(_matmul_value(next(n for n in gm.graph.nodes if n.name == name), values))
    return [t.reshape(region.shape) if i in region.views else t for i, t in enumerate(out)]


def _matmul_value(node, values):
    """The bias-free product of a linear/addmm node, from the eager values of its arguments."""
    a = [values[x.name] if isinstance(x, torch.fx.Node) else x for x in node.args]
    packet = node.target.__name__.split(".")[0]
    return torch.nn.functional.linear(a[0], a[1]) if packet == "linear" else a[1] @ a[2]


def region_module(gm, values, region):
    """(GraphModule, inputs) computing a replaced region's outputs with its
    original ops, from the eager values of what it reads: what torch.compile
    is timed on beside the kernel. A linear whose bias alone the region holds
    enters as its matmul's value plus that bias, as the kernel sees it."""
    from .rewrite import _fx, _Region
    held = {}
    for name in region.nodes:
        held.setdefault(_fx(name), set()).add(name)
    g, env, feeds = torch.fx.Graph(), {}, []

    def feed(value):
        feeds.append(value)
        return g.placeholder(f"in{len(feeds) - 1}")

    def arg(a):
        if a not in env:
            env[a] = feed(values[a.name])
        return env[a]
    for n in gm.graph.nodes:
        if n.name not in held:
            continue
        if _Region._holds_all(n, held[n.name]):
            env[n] = g.node_copy(n, arg)
        else:  # the bias Add of a linear/addmm: the matmul comes in as a value
            bias = n.args[2] if n.target.__name__.startswith("linear") else n.args[0]
            env[n] = g.call_function(torch.ops.aten.add.Tensor, (feed(_matmul_value(n, values)), arg(bias)))
    by_name = {n.name: n for n in gm.graph.nodes}
    g.output(tuple(env[by_name[name]] for name in region.outputs))
    return torch.fx.GraphModule(gm, g), feeds


def check_regions(module, example_inputs, optimized, dims=None, reference=None):
    """One dict per replaced region: entry, occurrence, worst error, ok.
    reference: eager_values()' result, when the caller has it already."""
    gm, values = reference or eager_values(module, example_inputs, dims)
    report = []
    for region in getattr(optimized, "fusekit_regions", []):
        if not region.replaced:
            continue
        with torch.no_grad():  # through the operator the rewritten graph calls
            got = ops.launch(region.op_id, _inputs(region, gm, values, optimized), len(region.outputs))
        worst, ok = 0.0, True
        for tensor, name in zip(got, region.outputs):
            ref = values[name]
            rtol, atol = TOLERANCE.get(ref.dtype, (1e-3, 1e-3))
            scale = ref.abs().max().item() or 1.0
            err = (tensor.float() - ref.float()).abs().max().item()
            worst = max(worst, err / scale)
            ok &= err <= atol * scale + rtol * scale
        report.append({"entry": region.entry, "occurrence": region.occurrence, "nodes": region.nodes,
                       "max_rel_error": worst, "ok": bool(ok)})
    return report
