#!/usr/bin/env python3
"""The general-layout ops (examples/general_layouts) against torch.compile.

  python3 bench/layouts_bench.py --packages DIR --out results.json [--dtypes bf16,f32] [--iters 200]

DIR holds one package per op (DIR/<op>, from `fusekit build --expr`), called
through its C ABI (`fusekit_launch`) with ctypes on PyTorch's current stream.
Each op at a ResNet- or BERT-like shape: global average pooling (ResNet-50's
head), BatchNorm statistics (ResNet's first stage), softmax over dim 1, and
transpose + bias + GELU (BERT-large's hidden size). Every fusekit result is
first checked against eager on the inputs widened to f32 and rounded once to
the storage dtype (fusekit's own math: f32, one rounding). Timing: CUDA events
around each call after a warm-up, the median of --iters calls, the inputs of
each call the same (the tensors of the largest op fit in L2 only partly); the
same protocol for eager and for torch.compile (static shapes, default mode).
"""
import argparse
import json
import os
import statistics
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peers  # noqa: E402  (its ctypes binding of fusekit_launch)

DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
# Tolerances as fusekit verifies (search/host_tensor.cpp), widened for the
# reductions by 1 + sqrt(count)/16.
TOL = {"f32": (1e-5, 1e-5), "f16": (1e-3, 2e-3), "bf16": (1e-2, 1.6e-2)}


def gap(x):
    return (x.mean(dim=2),)


def bn_stats(x):
    v, m = torch.var_mean(x, dim=(0, 2), correction=0)
    return (m, v)


def softmax1(x):
    return (torch.softmax(x, dim=1),)


def tbg(x, b):
    return (F.gelu(x.t() + b),)


# op, fn, domain (outermost first, as fusekit_launch takes it), inputs' shapes, reduced count.
OPS = [
    ("global_avg_pool", gap, [32, 2048, 49], [[32, 2048, 49]], 49),
    ("batchnorm_stats", bn_stats, [32, 256, 3136], [[32, 256, 3136]], 32 * 3136),
    ("softmax_dim1", softmax1, [32, 128, 784], [[32, 128, 784]], 128),
    ("transpose_bias_gelu", tbg, [4096, 1024], [[1024, 4096], [1024]], 1),
]


def median_us(fn, iters):
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1000.0)
    return statistics.median(times)


def check(got, want, dtype, count):
    atol, rtol = TOL[dtype]
    s = 1.0 + count ** 0.5 / 16.0
    atol *= s
    if dtype == "f32":
        rtol *= s
    worst = 0.0
    for g, w in zip(got, want):
        w = w.to(g.dtype).float()
        err = (g.float() - w).abs()
        scale = min(1.0, w.abs().max().item())
        worst = max(worst, (err / (atol * scale + rtol * w.abs())).max().item())
    return worst


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--packages", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--dtypes", default="bf16,f32")
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--ops", default=",".join(o[0] for o in OPS), help="comma-separated; default: all four")
    args = ap.parse_args()
    unknown = set(args.ops.split(",")) - {o[0] for o in OPS}
    if unknown:
        ap.error("unknown --ops %s; the ops are %s" % (",".join(sorted(unknown)), ",".join(o[0] for o in OPS)))
    torch.manual_seed(0)
    results, failed = [], 0
    for op, fn, domain, shapes, count in [o for o in OPS if o[0] in args.ops.split(",")]:
        path = os.path.join(args.packages, op)
        if not os.path.exists(os.path.join(path, "lib", "libfusekit_kernels.so")):
            print("%s: no package at %s" % (op, path), file=sys.stderr)
            failed += 1
            continue
        pkg = peers.Fusekit(path)
        for dt in args.dtypes.split(","):
            dtype = DTYPES[dt]
            inputs = [(torch.rand(s, device="cuda") * 6 - 3).to(dtype) for s in shapes]
            want = fn(*[t.float() for t in inputs])
            outs = [torch.empty(w.shape, device="cuda", dtype=dtype) for w in want]
            call = pkg.caller(op, dt, inputs, outs, [], domain, follow_stream=True)
            row = {"op": op, "dtype": dt, "shape": "x".join(map(str, domain))}
            try:
                call()
                torch.cuda.synchronize()
                row["max_error_ratio"] = check(outs, want, dt, count)
                row["verified"] = row["max_error_ratio"] <= 1.0
                row["fusekit_us"] = median_us(call, args.iters)
            except RuntimeError as e:
                row["error"] = str(e)
                row["verified"] = False
            eager = lambda: fn(*inputs)  # noqa: E731
            compiled_fn = torch.compile(fn, dynamic=False)
            compiled = lambda: compiled_fn(*inputs)  # noqa: E731
            row["eager_us"] = median_us(eager, args.iters)
            row["torch_compile_us"] = median_us(compiled, args.iters)
            if "fusekit_us" in row:
                row["speedup_vs_compile"] = row["torch_compile_us"] / row["fusekit_us"]
            failed += not row["verified"]
            print(json.dumps(row), flush=True)
            results.append(row)
    with open(args.out, "w") as f:
        json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "results": results}, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
