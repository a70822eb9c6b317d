#!/usr/bin/env python3
"""Exports the test models fusekit's graph tests read, with random weights.

BERT-base (opset 14: layernorm written out as ReduceMean/Sub/Pow/...), GPT-2, a two-layer Llama-style decoder (HF LlamaConfig) and
torchvision's ResNet-50, through the TorchScript exporter (opset 17) and,
where it works, the dynamo exporter (opset 18+, optimized, then converted to
opset 17, the newest Debian's libonnx 1.12 knows). Weights are stripped:
every initializer of more than 64 elements becomes a graph input of the
same name, dtype and shape, so the file holds the graph only (KBs to a few
MB) and still runs under ONNX Runtime when the weights are fed as inputs.

    python3 scripts/export_test_models.py --out tests/data/models [--only bert]
"""
import argparse
import os
import sys
import tempfile

import onnx
import torch

MAX_KEPT = 64


def annotate_shapes(model):
    """Symbolic shapes on every value (ONNX Runtime's symbolic shape inference):
    libonnx 1.12's inference loses dims through Reshape targets computed by
    Shape/Gather/Concat subgraphs, which the TorchScript exporter writes."""
    from onnxruntime.tools.symbolic_shape_infer import SymbolicShapeInference
    return SymbolicShapeInference.infer_shapes(model, auto_merge=True)


def drop_opset18_attrs(model):
    """The 18 -> 17 converter leaves noop_with_empty_axes on ReduceMean/ReduceMax,
    which their opset-13 forms lack (ONNX Runtime then rejects the model)."""
    for n in model.graph.node:
        if n.op_type in ("ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd"):
            keep = [a for a in n.attribute if a.name != "noop_with_empty_axes"]
            del n.attribute[:]
            n.attribute.extend(keep)
    return model


def strip_weights(model):
    g = model.graph
    kept, moved = [], []
    for init in g.initializer:
        n = 1
        for d in init.dims:
            n *= d
        (moved if n > MAX_KEPT else kept).append(init)
    for init in moved:
        vi = onnx.helper.make_tensor_value_info(init.name, init.data_type, list(init.dims))
        g.input.append(vi)
    del g.initializer[:]
    g.initializer.extend(kept)
    return len(moved)


def bert():
    from transformers import BertConfig, BertModel
    m = BertModel(BertConfig(attn_implementation="eager")).eval()
    ids = torch.randint(0, 1000, (2, 16))
    return m, (ids, torch.ones_like(ids)), ["input_ids", "attention_mask"], {0: "batch", 1: "seq"}, 14


def gpt2():
    from transformers import GPT2Config, GPT2Model
    m = GPT2Model(GPT2Config(attn_implementation="eager", use_cache=False)).eval()
    ids = torch.randint(0, 1000, (2, 16))
    return m, (ids, torch.ones_like(ids)), ["input_ids", "attention_mask"], {0: "batch", 1: "seq"}, 17


def llama():
    from transformers import LlamaConfig, LlamaModel
    cfg = LlamaConfig(hidden_size=256, intermediate_size=688, num_hidden_layers=2, num_attention_heads=4,
                      num_key_value_heads=4, vocab_size=1000, max_position_embeddings=512,
                      attn_implementation="eager", use_cache=False)
    m = LlamaModel(cfg).eval()
    ids = torch.randint(0, 1000, (2, 16))
    return m, (ids, torch.ones_like(ids)), ["input_ids", "attention_mask"], {0: "batch", 1: "seq"}, 17


def resnet50():
    import torchvision
    m = torchvision.models.resnet50(weights=None).eval()
    return m, (torch.randn(2, 3, 224, 224),), ["images"], {0: "batch"}, 17


class WrapLM(torch.nn.Module):
    """input_ids, attention_mask -> the last hidden state (HF models return dataclasses)."""

    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, input_ids, attention_mask):
        return self.m(input_ids=input_ids, attention_mask=attention_mask)[0]


class WrapVision(torch.nn.Module):
    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, images):
        return self.m(images)


def wrap(m, names):
    return WrapLM(m) if len(names) == 2 else WrapVision(m)


def export_torchscript(m, args, names, axes, path, opset):
    dyn = {n: axes for n in names}
    dyn["out"] = {0: "batch"} if len(axes) == 1 else axes
    torch.onnx.export(wrap(m, names), args, path, input_names=names, output_names=["out"], dynamic_axes=dyn,
                      opset_version=opset, dynamo=False, do_constant_folding=False)


def export_dynamo(m, args, names, axes, path):
    batch = torch.export.Dim("batch", min=1, max=64)
    dims = {0: batch}
    if len(axes) > 1:
        dims[1] = torch.export.Dim("seq", min=2, max=512)
    prog = torch.onnx.export(wrap(m, names), args, dynamic_shapes={n: dims for n in names}, input_names=names,
                             output_names=["out"], dynamo=True)
    prog.optimize()
    prog.save(path)
    model = onnx.load(path, load_external_data=False)
    return annotate_shapes(drop_opset18_attrs(onnx.version_converter.convert_version(model, 17)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="tests/data/models")
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--no-dynamo", action="store_true")
    ap.add_argument("--dynamo-only", action="store_true", help="leave the TorchScript exports as they are")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    torch.manual_seed(0)
    for name, make in [("bert", bert), ("gpt2", gpt2), ("llama", llama), ("resnet50", resnet50)]:
        if a.only and name not in a.only:
            continue
        m, args, names, axes, opset = make()
        # Distinct random weights: the exporter merges equal initializers
        # (freshly initialized biases are all zero), which real models lack.
        with torch.no_grad():
            for p in m.parameters():
                p.uniform_(-0.1, 0.1)
        with tempfile.TemporaryDirectory() as tmp:
            raw = os.path.join(tmp, name + ".onnx")
            if not a.dynamo_only:
                export_torchscript(m, args, names, axes, raw, opset)
                model = annotate_shapes(onnx.load(raw))
                moved = strip_weights(model)
                dst = os.path.join(a.out, name + ".onnx")
                onnx.save(model, dst)
                print(f"{dst}: {len(model.graph.node)} nodes, {moved} weights stripped, {os.path.getsize(dst)} bytes")
            if a.no_dynamo:
                continue
            try:
                model = export_dynamo(m, args, names, axes, os.path.join(tmp, name + "_dynamo.onnx"))
            except Exception as e:  # an exporter failure is reported, the TorchScript model stays
                print(f"{name}: dynamo export failed: {type(e).__name__}: {str(e)[:300]}", file=sys.stderr)
                continue
            moved = strip_weights(model)
            dst = os.path.join(a.out, name + "_dynamo.onnx")
            onnx.save(model, dst)
            print(f"{dst}: {len(model.graph.node)} nodes, {moved} weights stripped, {os.path.getsize(dst)} bytes")


if __name__ == "__main__":
    main()
