#!/usr/bin/env python3
"""An oracle independent of Halide: every catalog op and every function and
precedence rule of the expression language computed with numpy (float64)
from its formula, against fusekit's CPU reference (`fusekit eval`).

usage: oracle_test.py FUSEKIT_BINARY
"""
import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np

erf = np.vectorize(math.erf)


def sigmoid(v):
    return 1.0 / (1.0 + np.exp(-v))


def gelu(v):
    return 0.5 * v * (1.0 + erf(v / math.sqrt(2.0)))


def gelu_tanh(v):
    return 0.5 * v * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (v + 0.044715 * v ** 3)))


def relu(v):
    return np.maximum(v, 0.0)


def silu(v):
    return v * sigmoid(v)


def softmax(v):
    e = np.exp(v - v.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def layernorm(v, w, b, eps):
    d = v - v.mean(axis=-1, keepdims=True)
    return d / np.sqrt((d * d).mean(axis=-1, keepdims=True) + eps) * w + b


def rmsnorm(v, w, eps):
    return v / np.sqrt((v * v).mean(axis=-1, keepdims=True) + eps) * w


# Catalog ops: name -> (size, formula over inputs i and params p); each
# returns the outputs in order.
CATALOG = {
    "relu_add": ("4099", lambda i, p: [relu(i["x"]) + i["y"]]),
    "sigmoid_mul_tanh_add": ("4099", lambda i, p: [np.tanh(sigmoid(i["x"]) * i["y"]) + i["z"]]),
    "bias_gelu": ("7x131", lambda i, p: [gelu(i["x"] + i["b"])]),
    "bias_gelu_tanh": ("7x131", lambda i, p: [gelu_tanh(i["x"] + i["b"])]),
    "bn_relu": ("3x5x17", lambda i, p: [relu(i["x"] * i["scale"] + i["shift"])]),
    "residual_add_relu": ("4099", lambda i, p: [relu(i["x"] + i["r"])]),
    "silu_mul": ("4099", lambda i, p: [silu(i["a"]) * i["b"]]),
    "softmax": ("5x1001", lambda i, p: [softmax(i["x"])]),
    "log_softmax": ("5x1001", lambda i, p: [
        i["x"] - i["x"].max(-1, keepdims=True)
        - np.log(np.exp(i["x"] - i["x"].max(-1, keepdims=True)).sum(-1, keepdims=True))]),
    "layernorm": ("5x1001", lambda i, p: [layernorm(i["x"], i["w"], i["b"], p["eps"])]),
    "rmsnorm": ("5x1001", lambda i, p: [rmsnorm(i["x"], i["w"], p["eps"])]),
    "add_layernorm": ("5x1001", lambda i, p: [layernorm(i["x"] + i["residual"], i["w"], i["b"], p["eps"]),
                                              i["x"] + i["residual"]]),
    "add_rmsnorm": ("5x1001", lambda i, p: [rmsnorm(i["x"] + i["residual"], i["w"], p["eps"]),
                                            i["x"] + i["residual"]]),
    "bias_add_softmax": ("5x1001", lambda i, p: [softmax(p["scale"] * i["x"] + i["mask"])]),
}

# The expression language: each function, each operator's precedence and
# associativity, broadcasting, params and reductions.
EXPRESSIONS = [
    ("out = exp(x)", lambda i: np.exp(i["x"])),
    ("out = log(abs(x) + 0.5)", lambda i: np.log(np.abs(i["x"]) + 0.5)),
    ("out = tanh(x)", lambda i: np.tanh(i["x"])),
    ("out = sigmoid(x)", lambda i: sigmoid(i["x"])),
    ("out = relu(x)", lambda i: relu(i["x"])),
    ("out = gelu(x)", lambda i: gelu(i["x"])),
    ("out = gelu_tanh(x)", lambda i: gelu_tanh(i["x"])),
    ("out = silu(x)", lambda i: silu(i["x"])),
    ("out = sqrt(abs(x))", lambda i: np.sqrt(np.abs(i["x"]))),
    ("out = rsqrt(abs(x) + 0.25)", lambda i: 1.0 / np.sqrt(np.abs(i["x"]) + 0.25)),
    ("out = abs(x)", lambda i: np.abs(i["x"])),
    ("out = min(x, y)", lambda i: np.minimum(i["x"], i["y"])),
    ("out = max(x, y)", lambda i: np.maximum(i["x"], i["y"])),
    ("out = pow(abs(x) + 0.5, 3)", lambda i: (np.abs(i["x"]) + 0.5) ** 3),
    ("out = pow(abs(x) + 0.5, -1.5)", lambda i: (np.abs(i["x"]) + 0.5) ** -1.5),
    ("out = where(x > y, x, 2 * y)", lambda i: np.where(i["x"] > i["y"], i["x"], 2 * i["y"])),
    ("out = where(x <= 0, 1, y)", lambda i: np.where(i["x"] <= 0, 1.0, i["y"])),
    ("out = where(x >= 0.5, x, 0)", lambda i: np.where(i["x"] >= 0.5, i["x"], 0.0)),
    ("out = where(x < y, 1, 0)", lambda i: np.where(i["x"] < i["y"], 1.0, 0.0)),
    ("out = where(relu(x) == 0, y, x)", lambda i: np.where(relu(i["x"]) == 0, i["y"], i["x"])),
    ("out = where(relu(x) != 0, y, x)", lambda i: np.where(relu(i["x"]) != 0, i["y"], i["x"])),
    ("out = x + y * z", lambda i: i["x"] + i["y"] * i["z"]),
    ("out = x - y - z", lambda i: (i["x"] - i["y"]) - i["z"]),
    ("out = x / y / 4", lambda i: (i["x"] / i["y"]) / 4),
    ("out = x / 4 * y", lambda i: (i["x"] / 4) * i["y"]),
    ("out = -x * y", lambda i: (-i["x"]) * i["y"]),
    ("out = - - x - y", lambda i: i["x"] - i["y"]),
    ("out = (x + y) * z", lambda i: (i["x"] + i["y"]) * i["z"]),
    ("out = x - y * z + x / 2", lambda i: i["x"] - i["y"] * i["z"] + i["x"] / 2),
    ("param a = 0.3; out = a * x + y; o2 = out * out", lambda i: [0.3 * i["x"] + i["y"], (0.3 * i["x"] + i["y"]) ** 2]),
    ("out = x * b[col] + m[col, row]", lambda i: i["x"] * i["b"] + i["m"]),
    ("out = x * s[c] + t[c]", lambda i: i["x"] * i["s"] + i["t"]),
    ("out = x - mean(x, col)", lambda i: i["x"] - i["x"].mean(-1, keepdims=True)),
    ("out = x / sum(exp(x), col)", lambda i: i["x"] / np.exp(i["x"]).sum(-1, keepdims=True)),
    ("out = max(x, col) - x", lambda i: i["x"].max(-1, keepdims=True) - i["x"]),
    # General broadcasting (d0 the last axis): eval writes each input in its
    # numpy shape ([B, 1, 1, S] for m[d0,d3]), so numpy broadcasts it here.
    ("out = x + pos[d0,d1] * b[d0] - r[d2,d3]", lambda i: i["x"] + i["pos"] * i["b"] - i["r"]),
    ("out = x * q[d1,d3] + t[d2]", lambda i: i["x"] * i["q"] + i["t"]),
    ("s = x * 0.125 + m[d0,d3]\nout = exp(s - max(s, col)) / sum(exp(s - max(s, col)), col)",
     lambda i: [i["x"] * 0.125 + i["m"], softmax(i["x"] * 0.125 + i["m"])]),
    ("out = (x - mean(x, d0)) * w[d0] + g[d1,d2]", lambda i: (i["x"] - i["x"].mean(-1, keepdims=True)) * i["w"] + i["g"]),
]

# General layouts (examples/general_layouts): reductions over non-last axes
# and a transposed input, at odd shapes (numpy order: n, c, hw or rows, cols).
def _bn_stats(i):
    m = i["x"].mean(axis=(0, 2))
    return [m, ((i["x"] - m[None, :, None]) ** 2).mean(axis=(0, 2))]


def _softmax_c(i):
    e = np.exp(i["x"] - i["x"].max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


GENERAL = [
    ("out = mean(x, hw)", "3x5x17", lambda i: i["x"].mean(2)),
    ("m = mean(x, n hw); v = mean((x - m) * (x - m), n hw)", "3x5x17", _bn_stats),
    ("out = exp(x - max(x, c)) / sum(exp(x - max(x, c)), c)", "3x7x5", _softmax_c),
    ("out = gelu(x[row, col] + b[col])", "7x11", lambda i: gelu(i["x"].T + i["b"])),
    ("out = sum(x, row)", "7x11", lambda i: i["x"].sum(0)),
    ("out = x[c, hw, n] * 2", "3x5x7", lambda i: 2 * np.transpose(i["x"], (0, 2, 1))),
]


def evaluate(binary, args, tmp):
    subprocess.run([binary, "eval", *args, "--out", tmp], check=True, capture_output=True)
    with open(os.path.join(tmp, "meta.json")) as f:
        meta = json.load(f)
    shape = meta["domain"]
    ins = {}
    for d in meta["inputs"]:
        v = np.fromfile(os.path.join(tmp, d["file"]), dtype=np.float32).astype(np.float64)
        ins[d["name"]] = v.reshape(d["shape"])
    outs = [np.fromfile(os.path.join(tmp, d["file"]), dtype=np.float32).astype(np.float64).reshape(d.get("shape", shape))
            for d in meta["outputs"]]
    return ins, meta["params"], outs


def check(what, got, want, failures):
    want = np.broadcast_to(np.asarray(want, dtype=np.float64), got.shape)
    # f32 math against float64: a few f32 ulps of the values' scale.
    scale = max(1e-30, min(1.0, float(np.max(np.abs(want)))))
    err = np.abs(got - want) / (1e-5 * scale + 1e-5 * np.abs(want))
    worst = float(np.max(err)) if err.size else 0.0
    if not np.isfinite(worst) or worst > 1.0:
        k = int(np.argmax(np.where(np.isfinite(err), err, np.inf)))
        failures.append(f"{what}: element {k}: fusekit {got.flat[k]!r}, numpy {want.flat[k]!r} (ratio {worst:.3g})")


def main():
    binary = sys.argv[1]
    failures = []
    checked = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, (size, formula) in CATALOG.items():
            ins, params, outs = evaluate(binary, ["--pattern", name, "--sizes", size], tmp)
            for k, want in enumerate(formula(ins, params)):
                check(f"{name} output {k}", outs[k], want, failures)
                checked += 1
        for text, formula in EXPRESSIONS:
            size = ("3x5x7x9" if "[d" in text else "3x5x17" if "[c]" in text else "5x257" if ("col" in text)
                    else "4099")
            ins, _, outs = evaluate(binary, ["--expr", text, "--sizes", size], tmp)
            wants = formula(ins)
            wants = wants if isinstance(wants, list) else [wants]
            for k, want in enumerate(wants):
                check(f"'{text}' output {k}", outs[k], want, failures)
                checked += 1
        for text, size, formula in GENERAL:
            ins, _, outs = evaluate(binary, ["--expr", text, "--sizes", size], tmp)
            wants = formula(ins)
            wants = wants if isinstance(wants, list) else [wants]
            for k, want in enumerate(wants):
                check(f"'{text}' output {k}", outs[k], want, failures)
                checked += 1
    for f in failures:
        print("MISMATCH", f)
    print(f"{checked} outputs checked, {len(failures)} mismatches")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
