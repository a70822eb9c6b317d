"""The rewrite with hand-written plans against a real package (modeled sm_90
kernels): replaced regions, fallbacks with their reasons, explain()."""

import copy

import pytest
import torch

import patterns
import fusekit.torch as fk
from fusekit.torch import backend


def _plan(entries):
    return {"format": "fusekit-plan", "version": 1, "model": "test", "dims": {}, "entries": entries,
            "unsupported": [], "boundaries": [], "coverage": {}}


def _bias_gelu(name="bias_gelu", dtype="f32"):
    return {"name": name, "expr": "out = gelu(x + b[col])", "dtype": dtype, "sizes": ["64x64"],
            "occurrences": [{"nodes": ["linear", "gelu"], "inputs": {"x": "linear::matmul", "b": "lin_bias"},
                             "outputs": {"out": "gelu"}, "shape": [4, 16, 64]}]}


def _relu_add(dtype="f32"):
    return {"name": "relu_add", "expr": "out = relu(x) + y", "dtype": dtype, "sizes": ["4096"],
            "occurrences": [{"nodes": ["relu", "add"], "inputs": {"x": "gelu", "y": "y"},
                             "outputs": {"out": "add"}, "shape": [4, 16, 64]}]}


def _targets(gm):
    return [str(n.target) for n in gm.graph.nodes if n.op == "call_function"]


def _inputs(rows=4, dtype=torch.float32):
    return torch.randn(rows, 16, 64, dtype=dtype), torch.randn(rows, 16, 64, dtype=dtype)


def test_regions_with_kernels_are_replaced(package, oplib):
    m = patterns.BiasGeluReluAdd()
    gm = fk.optimize(m, package, _inputs(), plan=_plan([_bias_gelu(), _relu_add()]), arch="sm_90")
    targets = _targets(gm)
    # Each region is one call of the fixed-arity operator for its 2 inputs and 1 output, taken
    # straight from torch.ops (no Python wrapper, no getitem), and nothing calls the generic launch.
    assert targets.count("fusekit.launch_2_1.default") == 2 and "fusekit.launch.default" not in targets
    assert "<built-in function getitem>" not in targets
    assert all(n.target is torch.ops.fusekit.launch_2_1.default for n in gm.graph.nodes
               if "fusekit" in str(n.target))
    assert "aten.gelu.default" not in targets and "aten.relu.default" not in targets
    # The linear stays, without its bias: the kernel adds it.
    lin = next(n for n in gm.graph.nodes if str(n.target) == "aten.linear.default")
    assert len(lin.args) == 2
    launches = [n for n in gm.graph.nodes if str(n.target) == "fusekit.launch_2_1.default"]
    first, second = gm.fusekit_regions
    assert launches[0].args[0] == first.op_id and launches[0].args[2].name == "lin_bias"
    assert launches[1].args[1] is launches[0]  # relu_add reads bias_gelu's output
    assert first.operator == second.operator == "fusekit.launch_2_1.default"
    assert "torch.ops.fusekit.launch_2_1.default(" in gm.code
    text = fk.explain(gm)
    assert text.splitlines()[0] == "2 of 2 regions call fusekit kernels"
    assert "kernel   bias_gelu#0 [linear, gelu] shape [4, 16, 64]" in text
    assert "exact arch" in text and "exact bucket" in text
    # Called with CPU tensors, the kernel's device check names the tensor.
    with pytest.raises(ValueError, match=r"input 'x \(linear::matmul\)' is on cpu"):
        gm(*_inputs())


def test_fallbacks_keep_the_ops_and_say_why(package, oplib):
    m = patterns.BiasGeluReluAdd()
    x, y = _inputs()
    eager = m.eval()(x, y)
    gm = fk.optimize(m, package, (x, y), plan=_plan([_bias_gelu(name="no_such_op"), _relu_add()]), arch="sm_80")
    assert not [t for t in _targets(gm) if "fusekit" in t]
    assert "aten.gelu.default" in _targets(gm) and "aten.relu.default" in _targets(gm)
    text = fk.explain(gm)
    assert text.splitlines()[0] == "0 of 2 regions call fusekit kernels"
    assert "the package has no kernel 'no_such_op'" in text
    assert "'relu_add' f32 has no code for sm_80 (package has ptx (compute_75), sm_90); rebuild with --arch sm_80" in text
    torch.testing.assert_close(gm(x, y), eager)  # the fallback graph computes what the module does


def test_dtype_the_package_lacks(package, oplib):
    m = patterns.BiasGeluReluAdd().to(torch.float16)
    gm = fk.optimize(m, package, _inputs(dtype=torch.float16), plan=_plan([_bias_gelu(dtype="f16")]), arch="sm_90")
    assert "'bias_gelu' was built for f32, not f16" in fk.explain(gm)


def test_plan_dtype_other_than_the_graphs(package, oplib):
    m = patterns.BiasGeluReluAdd()
    gm = fk.optimize(m, package, _inputs(), plan=_plan([_relu_add(dtype="f16")]), arch="sm_90")
    assert "'out' (add) is f32; the kernel takes f16" in fk.explain(gm)


def test_untuned_shape_bucket(package, oplib):
    m = patterns.BiasGeluReluAdd()
    plan = _plan([_relu_add()])
    gm = fk.optimize(m, package, _inputs(rows=8), plan=plan, arch="sm_90")  # 8192 elements: bucket 2^13
    text = fk.explain(gm)
    assert "8192 elements (bucket n<=2^13) were not tuned" in text and "fallback relu_add#0" in text
    gm = fk.optimize(m, package, _inputs(rows=8), plan=plan, arch="sm_90", shapes="nearest")
    assert "nearest bucket" in fk.explain(gm) and "fusekit.launch_2_1.default" in _targets(gm)


def test_plan_of_another_graph(package, oplib):
    bad = _relu_add()
    bad["occurrences"][0]["nodes"] = ["relu_99", "add"]
    gm = fk.optimize(patterns.BiasGeluReluAdd(), package, _inputs(), plan=_plan([bad]), arch="sm_90")
    assert "nodes ['relu_99'] are not in this graph" in fk.explain(gm)


def test_region_output_used_outside(package, oplib):
    class Both(torch.nn.Module):
        def forward(self, x, y):
            r = torch.relu(x)
            return r + y, r * 2.0
    plan = _plan([{"name": "relu_add", "expr": "out = relu(x) + y", "dtype": "f32", "sizes": ["4096"],
                   "occurrences": [{"nodes": ["relu", "add"], "inputs": {"x": "x", "y": "y"},
                                    "outputs": {"out": "add"}, "shape": [4, 16, 64]}]}])
    gm = fk.optimize(Both(), package, _inputs(), plan=plan, arch="sm_90")
    assert "node 'relu' is used by 'mul' outside the region but is not one of its outputs" in fk.explain(gm)


def _bn_plan(shape):
    return _plan([{"name": "bn_relu", "expr": "out = relu(x * scale[c] + shift[c])", "dtype": "f32",
                   "sizes": ["1x4x1024"],
                   "occurrences": [{"nodes": ["batch_norm", "relu"],
                                    "inputs": {"x": "conv2d", "scale": "batch_norm::scale",
                                               "shift": "batch_norm::shift"},
                                    "outputs": {"out": "relu"}, "shape": shape}]}])


def test_batchnorm_relu_folds_scale_and_shift(package, oplib):
    m = patterns.ConvBnRelu().eval()
    x = torch.randn(1, 4, 32, 32)  # 4096 elements
    gm = fk.optimize(m, package, (x,), plan=_bn_plan([1, 4, 32, 32]), arch="sm_90")
    assert "1 of 1 regions call fusekit kernels" in fk.explain(gm)
    assert "aten.batch_norm.default" not in _targets(gm)
    bn = m.bn
    scale = bn.weight / torch.sqrt(bn.running_var + bn.eps)
    torch.testing.assert_close(gm.fusekit_batch_norm_scale, scale.detach())
    torch.testing.assert_close(gm.fusekit_batch_norm_shift, (bn.bias - bn.running_mean * scale).detach())
    # The folded form is the module's batch norm: the oracle is PyTorch's own.
    conv = m.conv(x)
    folded = torch.relu(conv * gm.fusekit_batch_norm_scale[None, :, None, None]
                        + gm.fusekit_batch_norm_shift[None, :, None, None])
    torch.testing.assert_close(folded, m(x))


def test_channels_last_falls_back_for_per_channel_kernels(package, oplib):
    m = patterns.ConvBnRelu().eval().to(memory_format=torch.channels_last)
    x = torch.randn(1, 4, 32, 32).to(memory_format=torch.channels_last)
    gm = fk.optimize(m, package, (x,), plan=_bn_plan([1, 4, 32, 32]), arch="sm_90")
    assert "input 'x' is channels-last; the nchw kernel indexes a contiguous tensor" in fk.explain(gm)
    torch.testing.assert_close(gm(x), m(x))


def test_explain_of_a_plain_module():
    with pytest.raises(ValueError, match="not made by fusekit.torch.optimize"):
        fk.explain(torch.nn.ReLU())


def test_compile_backend_is_registered_and_needs_a_package(package, oplib, monkeypatch):
    assert "fusekit" in torch._dynamo.list_backends()
    monkeypatch.delenv("FUSEKIT_PACKAGE", raising=False)
    with pytest.raises(Exception, match="the fusekit backend needs a package"):
        torch.compile(patterns.BiasGeluReluAdd(), backend="fusekit")(*_inputs())


def test_compile_backend_with_an_empty_plan_runs_the_graph(package, oplib):
    torch._dynamo.reset()
    m = patterns.BiasGeluReluAdd().eval()
    x, y = _inputs()
    with torch.no_grad():
        compiled = torch.compile(m, backend="fusekit", options={"package": package, "plan": _plan([]),
                                                                "arch": "sm_90"})
        torch.testing.assert_close(compiled(x, y), m(x, y))
    assert fk.explain(backend.last()).splitlines()[0] == "0 of 0 regions call fusekit kernels"


def test_region_sources_resolve_to_eager_values(package, oplib):
    """What the GPU check feeds each kernel: eager's values of the region's inputs."""
    from fusekit.torch import verify
    m = patterns.BiasGeluReluAdd().eval()
    x, y = _inputs()
    gm = fk.optimize(m, package, (x, y), plan=_plan([_bias_gelu(), _relu_add()]), arch="sm_90")
    first, second = gm.fusekit_regions
    assert first.sources == [("matmul", "linear"), ("attr", "lin.bias")] and first.outputs == ["gelu"]
    assert second.sources == [("node", "gelu"), ("node", "y")] and second.outputs == ["add"]
    ref_gm, values = verify.eager_values(m, (x, y))
    ins = verify._inputs(first, ref_gm, values, gm)
    with torch.no_grad():
        torch.testing.assert_close(ins[0], x @ m.lin.weight.T)
        torch.testing.assert_close(ins[1], m.lin.bias)
        torch.testing.assert_close(values["gelu"], torch.nn.functional.gelu(m.lin(x)))


def test_dynamic_batch_takes_the_kernel_per_call(package, oplib):
    m = patterns.BiasGeluReluAdd()
    dims = {"x": {0: "batch"}, "y": {0: "batch"}}
    gm = fk.optimize(m, package, _inputs(), dims=dims, plan=_plan([_relu_add()]), arch="sm_90")
    text = fk.explain(gm)
    assert "1 of 1 regions call fusekit kernels" in text and "shape step 'per call (dynamic shape)'" in text
    assert "shape ['batch', 16, 64]" in text


def test_optimize_uses_the_plan_a_package_records(package, oplib, tmp_path):
    import json
    import shutil
    pkg = tmp_path / "pkg"
    shutil.copytree(package, pkg)
    manifest = pkg / "share" / "fusekit_kernels" / "manifest.json"
    data = json.loads(manifest.read_text())
    data["plan"] = dict(_plan([_relu_add()]), model="biasgelureluadd")
    manifest.write_text(json.dumps(data))
    gm = fk.optimize(patterns.BiasGeluReluAdd(), str(pkg), _inputs(), arch="sm_90")
    assert "1 of 1 regions call fusekit kernels" in fk.explain(gm)


def test_compile_backend_replaces_a_region_of_dynamos_graph(package, oplib):
    """The plan names the nodes of the graph the backend exports from dynamo's:
    learn them with an empty plan, then compile with a plan for relu + add."""
    m = patterns.BiasGeluReluAdd().eval()
    x, y = _inputs()
    torch._dynamo.reset()
    with torch.no_grad():
        torch.compile(m, backend="fusekit", options={"package": package, "plan": _plan([]), "arch": "sm_90"})(x, y)
    nodes = {str(n.target): n for n in backend.last().graph.nodes if n.op == "call_function"}
    relu, add = nodes["aten.relu.default"], nodes["aten.add.Tensor"]
    plan = _plan([{"name": "relu_add", "expr": "out = relu(x) + y", "dtype": "f32", "sizes": ["4096"],
                   "occurrences": [{"nodes": [relu.name, add.name],
                                    "inputs": {"x": relu.args[0].name, "y": add.args[1].name},
                                    "outputs": {"out": add.name}, "shape": [4, 16, 64]}]}])
    torch._dynamo.reset()
    compiled = torch.compile(m, backend="fusekit", options={"package": package, "plan": plan, "arch": "sm_90"})
    with torch.no_grad(), pytest.raises(Exception, match=r"input 'x \(.*\)' is on cpu"):
        compiled(x, y)  # the kernel is called inside the compiled graph: its device check fires
    assert fk.explain(backend.last()).splitlines()[0] == "1 of 1 regions call fusekit kernels"
    assert "fusekit.launch_2_1.default" in _targets(backend.last())


def test_general_broadcast_sizes_follow_numpy():
    from fusekit.plan_file import infer_layout
    from fusekit.torch.rewrite import _broadcast_numel, _elements
    mask = "s = x * 0.125 + m[d0,d3]\nout = exp(s - max(s, col)) / sum(exp(s - max(s, col)), col)"
    assert infer_layout(mask) == "ndrows" and infer_layout("out = x + p[d0,d1]") == "nd"
    assert _broadcast_numel("ndrows", [2, 12, 5, 7], 1 | 8) == 2 * 7    # [B, 1, 1, S]
    assert _broadcast_numel("nd", [4, 5, 8], 1 | 2) == 5 * 8            # [1, S, D] over a 3-D space
    assert _broadcast_numel("nd", [4, 5, 8], 4) == 4                    # d2 of a 3-D space is its first dim
    assert _elements("ndrows", [2, 12, 5, 7]) == (840, 7)


def test_a_strided_input_read_by_two_regions_is_copied_once(package, oplib):
    """Both row kernels read the transposed view: one contiguous copy feeds both."""
    class Two(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.b1 = torch.nn.Parameter(torch.randn(64))
            self.b2 = torch.nn.Parameter(torch.randn(64))

        def forward(self, x):
            t = x.transpose(1, 2)
            return torch.nn.functional.gelu(t + self.b1), torch.nn.functional.gelu(t + self.b2)
    occ = [{"nodes": [add, gelu], "inputs": {"x": "transpose", "b": b}, "outputs": {"out": gelu},
            "shape": [4, 16, 64]} for add, gelu, b in (("add", "gelu", "b1"), ("add_1", "gelu_1", "b2"))]
    plan = _plan([{"name": "bias_gelu", "expr": "out = gelu(x + b[col])", "dtype": "f32", "sizes": ["64x64"],
                   "occurrences": occ}])
    gm = fk.optimize(Two(), package, (torch.randn(4, 64, 16),), plan=plan, arch="sm_90")
    assert [r.replaced for r in gm.fusekit_regions] == [True, True], fk.explain(gm)
    clones = [n for n in gm.graph.nodes if n.target is torch.ops.aten.clone.default]
    assert len(clones) == 1 and clones[0].args[0].name == "transpose"
    launches = [n for n in gm.graph.nodes if "fusekit" in str(n.target)]
    assert len(launches) == 2 and all(n.args[1] is clones[0] for n in launches)
    assert all("copies strided input 'x'" in r.detail for r in gm.fusekit_regions)
    gm.graph.lint()
