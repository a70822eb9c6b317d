"""The benchmark's four models (tiny configs, same op patterns) capture into
well-formed graphs with the patterns fusekit fuses."""

import collections
import json
import os
import sys

import pytest
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))
import torch_models  # noqa: E402
from fusekit.torch import capture  # noqa: E402

pytest.importorskip("transformers")
pytest.importorskip("torchvision")


@pytest.mark.parametrize("name,size,expect", [
    ("bert", "b1", {"Gelu", "LayerNormalization"}),
    ("gpt2", "b1", {"Tanh", "Pow", "LayerNormalization"}),
    ("llama", "b1", {"ReduceMean", "Sigmoid", "Reciprocal"}),
    ("llama", "decode", {"ReduceMean", "Concat"}),
    ("resnet50", "b1", {"BatchNormalization", "Relu", "Conv"}),
])
def test_zoo_model_captures(tmp_path, name, size, expect):
    c = torch_models.case(name, size, torch.float32, "cpu", tiny=True)
    path = capture(c.module, c.inputs, str(tmp_path / "g.fkgraph.json"), run_plan=False)
    with open(path) as f:
        g = json.load(f)
    ops = collections.Counter(n["op"] for n in g["nodes"])
    assert expect <= set(ops), ops
    opaque = {n["attrs"]["target"] for n in g["nodes"] if n["op"] == "Opaque"}
    assert not opaque & {"aten.relu_.default", "aten.add_.Tensor", "aten.gelu.default", "aten.layer_norm.default"}
