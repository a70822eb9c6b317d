"""fusekit.torch.capture: graph JSON of small modules with the four models' op patterns."""

import json
import os

import pytest
import torch

import patterns
from fusekit import graph_json
from fusekit.torch import capture
from fusekit.torch import export as fk_export


def _graph(tmp_path, module, inputs, dims=None, **kw):
    path = str(tmp_path / "m.fkgraph.json")
    assert capture(module, inputs, path, dims=dims, run_plan=False, **kw) == path
    with open(path) as f:
        g = json.load(f)
    graph_json.check(g)  # what was written, read back, is well formed
    return g


def _ops(g):
    return [n["op"] for n in g["nodes"]]


def _node(g, name):
    return next(n for n in g["nodes"] if n["name"] == name)


def _producer(g, tensor):
    return next(n for n in g["nodes"] if tensor in n["outputs"])


def test_bert_ffn_bias_gelu_erf_and_residual_layernorm(tmp_path):
    g = _graph(tmp_path, patterns.BertFfn(), (torch.randn(2, 8, 32),), dims={"x": {0: "batch", 1: "seq"}},
               tune_dims={"batch": [1, 16], "seq": [128, 512]})
    assert g["inputs"] == ["x"] and g["tensors"]["x"] == {"dtype": "f32", "shape": ["batch", "seq", 32]}
    assert g["dims"] == {"batch": [1, 16], "seq": [128, 512]}
    gelu = next(n for n in g["nodes"] if n["op"] == "Gelu")
    assert gelu["attrs"] == {"approximate": "none"}
    # The bias is an Add of its own right before the GELU, on the matmul's output.
    bias = _producer(g, gelu["inputs"][0])
    assert bias["op"] == "Add" and _producer(g, bias["inputs"][0])["op"] == "MatMul"
    assert g["constants"][bias["inputs"][1]] == {"dtype": "f32", "shape": [128]}  # no values: 128 > small
    ln = next(n for n in g["nodes"] if n["op"] == "LayerNormalization")
    assert ln["attrs"] == {"axis": -1, "epsilon": 1e-12}
    residual = _producer(g, ln["inputs"][0])
    assert residual["op"] == "Add" and "x" in residual["inputs"]
    assert g["outputs"] == ln["outputs"]
    assert g["tensors"][ln["outputs"][0]]["shape"] == ["batch", "seq", 32]
    assert g["constants"][ln["inputs"][1]]["shape"] == [32]


def test_gpt2_gelu_tanh_both_spellings(tmp_path):
    g = _graph(tmp_path, patterns.Gpt2Mlp(), (torch.randn(2, 4, 32),))
    assert next(n for n in g["nodes"] if n["op"] == "Gelu")["attrs"] == {"approximate": "tanh"}
    ops = _ops(g)
    assert "Tanh" in ops and "Pow" in ops
    pow_node = next(n for n in g["nodes"] if n["op"] == "Pow")
    assert g["constants"][pow_node["inputs"][1]] == {"dtype": "f32", "shape": [], "values": [3.0]}
    scalars = sorted(c["values"][0] for c in g["constants"].values() if c["shape"] == [] and "values" in c)
    assert 0.044715 in scalars and 0.5 in scalars


def test_attention_scale_mask_softmax(tmp_path):
    q, k, m = torch.randn(2, 4, 8, 16), torch.randn(2, 4, 8, 16), torch.zeros(2, 1, 8, 8)
    g = _graph(tmp_path, patterns.Attention(), (q, k, m))
    sm = next(n for n in g["nodes"] if n["op"] == "Softmax")
    assert sm["attrs"] == {"axis": -1}
    add = _producer(g, sm["inputs"][0])
    assert add["op"] == "Add" and "mask" in add["inputs"]
    mul = _producer(g, [t for t in add["inputs"] if t != "mask"][0])
    assert mul["op"] == "Mul" and g["constants"][mul["inputs"][1]]["values"] == [0.125]
    assert _producer(g, mul["inputs"][0])["op"] == "MatMul"
    assert g["tensors"]["mask"]["shape"] == [2, 1, 8, 8]


def test_llama_rmsnorm_with_casts(tmp_path):
    g = _graph(tmp_path, patterns.LlamaRmsNorm(), (torch.randn(2, 8, 32, dtype=torch.bfloat16),),
               dims={"x": {0: "batch"}})
    casts = [n for n in g["nodes"] if n["op"] == "Cast"]
    assert [c["attrs"]["to"] for c in casts] == ["f32", "bf16"]
    mean = next(n for n in g["nodes"] if n["op"] == "ReduceMean")
    assert mean["attrs"] == {"axes": [-1], "keepdims": 1}
    assert g["tensors"][mean["outputs"][0]] == {"dtype": "f32", "shape": ["batch", 8, 1]}
    eps = _producer(g, _node(g, "rsqrt::sqrt")["inputs"][0])
    assert eps["op"] == "Add" and g["constants"][eps["inputs"][1]]["values"] == pytest.approx([1e-6])
    assert _node(g, "rsqrt")["op"] == "Reciprocal"
    weight = [c for c in g["constants"].values() if c["shape"] == [32]]
    assert weight and weight[0]["dtype"] == "bf16" and weight[0]["values"] == [1.5] * 32  # small: values kept
    assert g["tensors"][g["outputs"][0]]["dtype"] == "bf16"


def test_llama_silu_times_gate(tmp_path):
    g = _graph(tmp_path, patterns.LlamaMlp(), (torch.randn(2, 8, 32),))
    silu = _node(g, "silu")
    assert silu["op"] == "Mul" and _node(g, "silu::sigmoid")["op"] == "Sigmoid"
    assert silu["inputs"][0] == _node(g, "silu::sigmoid")["inputs"][0]
    gated = next(n for n in g["nodes"] if n["op"] == "Mul" and "silu" in n["inputs"])
    assert _producer(g, [t for t in gated["inputs"] if t != "silu"][0])["op"] == "MatMul"
    # Linears without bias: one MatMul named after the FX node, no Add.
    assert _node(g, "linear")["op"] == "MatMul" and "Add" not in _ops(g)


def test_resnet_batchnorm_relu_and_add_relu(tmp_path):
    g = _graph(tmp_path, patterns.ResNetBlock(), (torch.randn(2, 8, 6, 6),), dims={"x": {0: "batch"}})
    bns = [n for n in g["nodes"] if n["op"] == "BatchNormalization"]
    assert len(bns) == 2 and bns[0]["attrs"]["epsilon"] == pytest.approx(1e-5)
    assert len(bns[0]["inputs"]) == 5
    assert [g["constants"][t]["shape"] for t in bns[0]["inputs"][1:]] == [[8]] * 4
    relus = [n for n in g["nodes"] if n["op"] == "Relu"]
    assert _producer(g, relus[0]["inputs"][0]) is bns[0]
    add = _producer(g, relus[1]["inputs"][0])
    assert add["op"] == "Add" and "x" in add["inputs"]
    conv = next(n for n in g["nodes"] if n["op"] == "Conv")
    assert conv["attrs"] == {"strides": [1, 1], "pads": [1, 1, 1, 1], "dilations": [1, 1], "group": 1}
    assert g["tensors"][g["outputs"][0]]["shape"] == ["batch", 8, 6, 6]


def test_names_are_fx_node_names(tmp_path):
    module = patterns.BertFfn()
    gm, _ = fk_export(module, (torch.randn(2, 8, 32),))
    fx_names = {n.name for n in gm.graph.nodes}
    g = _graph(tmp_path, module, (torch.randn(2, 8, 32),))
    assert {n["name"].split("::")[0] for n in g["nodes"]} <= fx_names


def test_unknown_op_is_opaque(tmp_path):
    class Cumsum(torch.nn.Module):
        def forward(self, x):
            return torch.cumsum(x, dim=1) + 1.0
    g = _graph(tmp_path, Cumsum(), (torch.randn(2, 8),))
    opaque = next(n for n in g["nodes"] if n["op"] == "Opaque")
    assert opaque["attrs"] == {"target": "aten.cumsum.default"} and opaque["inputs"] == ["x"]


def test_checker_rejects_broken_graphs():
    good = {"format": "fusekit-graph", "version": 1, "name": "m", "opset": 17, "inputs": ["x"], "outputs": ["y"],
            "tensors": {"x": {"dtype": "f32", "shape": [2]}, "y": {"dtype": "f32", "shape": [2]}},
            "constants": {}, "nodes": [{"name": "r", "op": "Relu", "inputs": ["x"], "outputs": ["y"]}]}
    graph_json.check(good)
    bad_dtype = json.loads(json.dumps(good))
    bad_dtype["tensors"]["x"]["dtype"] = "float"
    with pytest.raises(ValueError, match="tensors.x: dtype 'float'"):
        graph_json.check(bad_dtype)
    out_of_order = json.loads(json.dumps(good))
    out_of_order["nodes"][0]["inputs"] = ["z"]
    with pytest.raises(ValueError, match="input 'z' is not a graph input"):
        graph_json.check(out_of_order)


def test_dims_naming_an_unknown_input():
    with pytest.raises(ValueError, match="dims names inputs \\['nope'\\]"):
        capture(patterns.BertFfn(), (torch.randn(2, 8, 32),), "/tmp/never.json", dims={"nope": {0: "batch"}},
                run_plan=False)


def test_capture_runs_fusekit_plan(tmp_path, fusekit_bin):
    path = str(tmp_path / "ffn.fkgraph.json")
    probe = __import__("subprocess").run([fusekit_bin, "plan"], capture_output=True, text=True)
    has_plan = "unknown command 'plan'" not in probe.stdout + probe.stderr
    if has_plan:
        plan = capture(patterns.BertFfn(), (torch.randn(2, 8, 32),), path, fusekit_bin=fusekit_bin)
        from fusekit.plan_file import load_plan
        assert plan.endswith("ffn.plan.json") and load_plan(plan).entries
    else:  # this build has no `fusekit plan` yet: the message says which command failed
        with pytest.raises(RuntimeError, match="fusekit plan"):
            capture(patterns.BertFfn(), (torch.randn(2, 8, 32),), path, fusekit_bin=fusekit_bin)
        assert os.path.isfile(path)
