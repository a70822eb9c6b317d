"""The launch operators' argument checks (a Python exception naming the
tensor, never a crash) and their fake kernels, on a real package without a
GPU: the fixed-arity family the rewrite emits (launch_<inputs>_<outputs>) and
the generic launch(op, [inputs]) it keeps for wider entries."""

import shutil
import subprocess

import pytest
import torch

from fusekit.torch import ops


@pytest.fixture(scope="module")
def bias_gelu(package, oplib):
    return ops.register_op(package, "bias_gelu", "f32", "rowcol", ["x (h)", "b (bias)"], [0, 1], ["out (g)"], [])


@pytest.fixture(scope="module")
def bn_relu(package, oplib):
    return ops.register_op(package, "bn_relu", "f32", "nchw", ["x (conv)", "scale (s)", "shift (t)"], [0, 2, 2],
                           ["out (r)"], [])


def _call(op, *tensors):
    return torch.ops.fusekit.launch(op, list(tensors))


def _fixed(op, *tensors, outputs=1):
    return getattr(torch.ops.fusekit, f"launch_{len(tensors)}_{outputs}").default(op, *tensors)


def test_wrong_device_names_the_tensor(bias_gelu):
    with pytest.raises(ValueError, match=r"fusekit op 'bias_gelu': input 'x \(h\)' is on cpu; the kernel needs "
                                         r"every tensor on one CUDA device"):
        _call(bias_gelu, torch.randn(8, 64), torch.randn(64))


def test_wrong_dtype_names_the_tensor(bias_gelu):
    with pytest.raises(ValueError, match=r"input 'b \(bias\)' is Half; this kernel was built for f32"):
        _call(bias_gelu, torch.randn(8, 64), torch.randn(64, dtype=torch.float16))


def test_wrong_broadcast_shape_names_the_tensor(bias_gelu):
    with pytest.raises(ValueError, match=r"input 'b \(bias\)' has shape \[32\] \(32 elements\); the kernel takes "
                                         r"64 contiguous elements"):
        _call(bias_gelu, torch.randn(8, 64), torch.randn(32))


def test_full_inputs_must_share_the_shape(package, oplib):
    op = ops.register_op(package, "relu_add", "f32", "flat", ["x (a)", "y (b)"], [0, 0], ["out (c)"], [])
    with pytest.raises(ValueError, match=r"input 'y \(b\)' has shape \[4, 8\], not the region's \[8, 4\]"):
        _call(op, torch.randn(8, 4), torch.randn(4, 8))
    # An elementwise kernel takes any dense layout, but the same for all.
    with pytest.raises(ValueError, match=r"input 'y \(b\)' has strides \[1, 8\]"):
        _call(op, torch.randn(8, 4), torch.randn(4, 8).t())


def test_strided_row_input(bias_gelu):
    x = torch.randn(64, 16).t()  # [16, 64], not contiguous
    with pytest.raises(ValueError, match=r"input 'x \(h\)' has strides \[1, 16\]; this kernel indexes"):
        _call(bias_gelu, x, torch.randn(64))


def test_channels_last_is_named(bn_relu):
    x = torch.randn(2, 4, 8, 8).to(memory_format=torch.channels_last)
    with pytest.raises(ValueError, match=r"input 'x \(conv\)' has strides .* \(channels-last\)"):
        _call(bn_relu, x, torch.randn(4), torch.randn(4))


def test_input_count(bias_gelu):
    with pytest.raises(ValueError, match="fusekit op 'bias_gelu' takes 2 inputs, got 1"):
        _call(bias_gelu, torch.randn(8, 64))


def test_unknown_op_id(oplib):
    with pytest.raises(ValueError, match="no registered op 12345"):
        _call(12345, torch.randn(8))


def test_bad_package_folder(tmp_path, oplib):
    with pytest.raises(ValueError, match="cannot load the package library"):
        ops.load_package(str(tmp_path))


def test_register_needs_a_full_input(package, oplib):
    with pytest.raises(ValueError, match="has no full-shape input"):
        ops.register_op(package, "bias_gelu", "f32", "rowcol", ["b"], [1], ["out"], [])


def test_meta_kernel_shapes_outputs(bias_gelu, bn_relu):
    out = _call(bias_gelu, torch.empty(8, 64, device="meta"), torch.empty(64, device="meta"))
    assert len(out) == 1 and out[0].shape == (8, 64) and out[0].device.type == "meta"
    out = _call(bn_relu, torch.empty(2, 4, 8, 8, device="meta"), torch.empty(4, device="meta"),
                torch.empty(4, device="meta"))
    assert out[0].shape == (2, 4, 8, 8) and out[0].is_contiguous()
    with pytest.raises(ValueError, match=r"input 'scale \(s\)' has shape \[3\]"):
        _call(bn_relu, torch.empty(2, 4, 8, 8, device="meta"), torch.empty(3, device="meta"),
              torch.empty(4, device="meta"))


def test_meta_kernel_takes_general_broadcasts(package, oplib):
    # ndrows: BERT's [B, 1, 1, S] mask (axes d0 and d3: bits 1 | 8) over [B, H, S, S] scores.
    op = ops.register_op(package, "bert_mask", "f32", "ndrows", ["x (scores)", "m (mask)"], [0, 1 | 8],
                         ["out (probs)"], [])
    out = _call(op, torch.empty(2, 3, 5, 7, device="meta"), torch.empty(2, 1, 1, 7, device="meta"))
    assert out[0].shape == (2, 3, 5, 7) and out[0].is_contiguous()
    with pytest.raises(ValueError, match=r"input 'm \(mask\)' has shape \[2, 1, 5, 7\] \(70 elements\); the kernel "
                                         r"takes 14 contiguous elements"):
        _call(op, torch.empty(2, 3, 5, 7, device="meta"), torch.empty(2, 1, 5, 7, device="meta"))
    # nd of a 3-D tensor: a [1, S, D] position table (d0, d1) over [B, S, D].
    pos = ops.register_op(package, "pos_add", "f32", "nd", ["x (tok)", "p (pos)"], [0, 1 | 2], ["out (h)"], [])
    out = _call(pos, torch.empty(4, 5, 8, device="meta"), torch.empty(1, 5, 8, device="meta"))
    assert out[0].shape == (4, 5, 8)
    with pytest.raises(ValueError, match=r"input 'x \(tok\)' has 5 dimensions; the kernel takes 1 to 4"):
        _call(pos, torch.empty(1, 2, 4, 5, 8, device="meta"), torch.empty(5, 8, device="meta"))


def test_opcheck_schema_fake_and_aot(bias_gelu):
    args = (bias_gelu, [torch.empty(8, 64, device="meta"), torch.empty(64, device="meta")])
    torch.library.opcheck(torch.ops.fusekit.launch.default, args,
                          test_utils=("test_schema", "test_faketensor", "test_aot_dispatch_dynamic"))


def test_exports_through_the_op_with_dynamic_rows(bias_gelu):
    class Uses(torch.nn.Module):
        def forward(self, x, b):
            return torch.ops.fusekit.launch(bias_gelu, [x, b])[0] * 2.0
    rows = torch.export.Dim("rows")
    ep = torch.export.export(Uses(), (torch.empty(8, 64), torch.empty(64)), dynamic_shapes={"x": {0: rows}, "b": None})
    launch = next(n for n in ep.graph.nodes if "fusekit.launch" in str(n.target))
    shape = launch.meta["val"][0].shape
    assert not isinstance(shape[0], int) and shape[1] == 64


@pytest.fixture(scope="module")
def pair(package, oplib):
    """Two outputs, for the tuple-returning members (meta tensors only: the package is never called)."""
    return ops.register_op(package, "residual_pair", "f32", "flat", ["x (a)", "y (b)"], [0, 0],
                           ["sum (s)", "out (o)"], [])


def test_the_family_and_its_bounds(oplib):
    assert torch.ops.fusekit.fixed_arity() == [8, 3]
    assert ops.operator(2, 1) is torch.ops.fusekit.launch_2_1.default
    assert str(torch.ops.fusekit.launch_3_2.default._schema) == (
        "fusekit::launch_3_2(int op, Tensor i0, Tensor i1, Tensor i2) -> (Tensor, Tensor)")
    # Past the family (and for no outputs) the generic operator serves.
    assert ops.operator(9, 1) is torch.ops.fusekit.launch.default
    assert ops.operator(2, 4) is torch.ops.fusekit.launch.default
    assert ops.call_args(ops.operator(9, 1), 5, ["t"] * 9) == (5, ["t"] * 9)


def test_fixed_operator_checks_name_the_tensor(bias_gelu):
    x, b = torch.randn(8, 64), torch.randn(64)
    with pytest.raises(ValueError, match=r"input 'x \(h\)' is on cpu; the kernel needs every tensor on one CUDA"):
        _fixed(bias_gelu, x, b)
    with pytest.raises(ValueError, match=r"input 'b \(bias\)' is Half; this kernel was built for f32"):
        _fixed(bias_gelu, x, b.half())
    with pytest.raises(ValueError, match=r"input 'b \(bias\)' has shape \[32\] \(32 elements\)"):
        _fixed(bias_gelu, x, torch.randn(32))


def test_fixed_operator_of_the_wrong_count(bias_gelu):
    x, b = torch.randn(8, 64), torch.randn(64)
    with pytest.raises(ValueError, match="fusekit op 'bias_gelu' takes 2 inputs, got 3"):
        _fixed(bias_gelu, x, b, b)
    with pytest.raises(ValueError, match="fusekit op 'bias_gelu' has 1 outputs; it was called through an "
                                         "operator with 2"):
        _fixed(bias_gelu, x, b, outputs=2)
    with pytest.raises(ValueError, match="no registered op 12345"):
        _fixed(12345, x, b)
    # Not a tensor where the schema has one: the binding's own error, still a Python exception.
    with pytest.raises(RuntimeError, match="i1"):
        torch.ops.fusekit.launch_2_1.default(bias_gelu, x, 3)


def test_fixed_fake_kernels_shape_outputs(bias_gelu, bn_relu, pair):
    out = _fixed(bias_gelu, torch.empty(8, 64, device="meta"), torch.empty(64, device="meta"))
    assert isinstance(out, torch.Tensor) and out.shape == (8, 64) and out.device.type == "meta"
    out = _fixed(bn_relu, torch.empty(2, 4, 8, 8, device="meta"), torch.empty(4, device="meta"),
                 torch.empty(4, device="meta"))
    assert out.shape == (2, 4, 8, 8) and out.is_contiguous()
    x = torch.empty(4, 8, device="meta").t()  # an elementwise kernel keeps a dense layout
    s, o = _fixed(pair, x, torch.empty(4, 8, device="meta").t(), outputs=2)
    assert s.shape == o.shape == (8, 4) and s.stride() == o.stride() == x.stride()


@pytest.mark.parametrize("which", ["bias_gelu", "bn_relu", "pair"])
def test_opcheck_of_the_fixed_operators(which, request):
    op = request.getfixturevalue(which)
    args = {"bias_gelu": [torch.empty(8, 64), torch.empty(64)],
            "bn_relu": [torch.empty(2, 4, 8, 8), torch.empty(4), torch.empty(4)],
            "pair": [torch.empty(8, 4), torch.empty(8, 4)]}[which]
    target = ops.operator(len(args), 2 if which == "pair" else 1)
    assert ops.is_fixed(target)
    torch.library.opcheck(target, (op, *[a.to("meta") for a in args]),
                          test_utils=("test_schema", "test_faketensor", "test_aot_dispatch_dynamic"))


def test_fixed_operators_export_with_dynamic_rows(bias_gelu, pair):
    class Uses(torch.nn.Module):
        def forward(self, x, b):
            g = torch.ops.fusekit.launch_2_1.default(bias_gelu, x, b)
            s, o = torch.ops.fusekit.launch_2_2.default(pair, g, g)
            return s + o
    rows = torch.export.Dim("rows")
    ep = torch.export.export(Uses(), (torch.empty(8, 64), torch.empty(64)), dynamic_shapes={"x": {0: rows}, "b": None})
    nodes = {str(n.target): n for n in ep.graph.nodes}
    single = nodes["fusekit.launch_2_1.default"].meta["val"]
    assert isinstance(single, torch.Tensor) and not isinstance(single.shape[0], int) and single.shape[1] == 64
    both = nodes["fusekit.launch_2_2.default"].meta["val"]
    assert len(both) == 2 and all(v.shape[1] == 64 for v in both)


def test_fixed_operators_trace_under_torch_compile(bias_gelu, pair):
    """Dynamo and AOTAutograd trace the fake kernels (the ATen graph the
    compiler gets holds the operators with their shapes); the run then calls
    the real kernel, whose device check fires on CPU tensors."""
    from torch._dynamo.backends.common import aot_autograd
    graphs = []

    def record(gm, example_inputs):
        graphs.append(gm)
        return gm

    class Uses(torch.nn.Module):
        def forward(self, x, b):
            g = torch.ops.fusekit.launch_2_1.default(bias_gelu, x, b)
            s, o = torch.ops.fusekit.launch_2_2.default(pair, g, g)
            return torch.relu(s) * o
    torch._dynamo.reset()
    compiled = torch.compile(Uses(), backend=aot_autograd(fw_compiler=record), fullgraph=True)
    with torch.no_grad(), pytest.raises(ValueError, match=r"input 'x \(h\)' is on cpu"):
        compiled(torch.randn(8, 64), torch.randn(64))
    torch._dynamo.reset()
    assert len(graphs) == 1
    calls = {str(n.target): n for n in graphs[0].graph.nodes if n.op == "call_function"}
    assert calls["fusekit.launch_2_1.default"].meta["val"].shape == (8, 64)
    assert [v.shape for v in calls["fusekit.launch_2_2.default"].meta["val"]] == [(8, 64), (8, 64)]


def test_a_later_process_loads_the_built_library_by_its_stamp(oplib, tmp_path, monkeypatch):
    """The stamp written beside the library names it; another source, flags or
    torch gives another stamp, which finds nothing and builds again."""
    monkeypatch.setenv("FUSEKIT_TORCH_BUILD", str(tmp_path))
    src = tmp_path / "ops.cpp"
    src.write_text("// v1\n")
    lib = tmp_path / "lib.so"
    lib.write_bytes(b"")
    stamp = ops._stamp(str(src), ["-DA"], [], [])
    ops._write_stamp(stamp, str(lib))
    assert ops._built(stamp) == str(lib)
    assert ops._built(ops._stamp(str(src), ["-DB"], [], [])) is None
    src.write_text("// v2\n")
    assert ops._built(ops._stamp(str(src), ["-DA"], [], [])) is None
    lib.unlink()
    assert ops._built(stamp) is None  # a stamp whose library is gone builds again


def test_library_shares_torchs_libstdcxx(oplib):
    """A static libstdc++ inside the library breaks its messages' numbers (a crash on some hosts)."""
    readelf = shutil.which("readelf")
    if readelf is None:
        pytest.skip("readelf (binutils) is not installed")
    dynamic = subprocess.run([readelf, "-d", oplib.path], capture_output=True, text=True, check=True).stdout
    assert "[libstdc++.so.6]" in dynamic, dynamic
