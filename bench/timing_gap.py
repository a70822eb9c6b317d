#!/usr/bin/env python3
"""Times packaged kernels several ways in one process, to locate the gap
between the tuner's times (C++ launches, CUDA events around each) and
bench/peers.py's (ctypes launches from Python, CUDA events around each):

  single    peers.py's protocol: an event pair around each call (200 calls)
  batched   an event pair around 20 back-to-back calls, divided (25 batches)
  idle      an event pair around each call after a synchronize: nothing queued
  again     `single` once more at the end (drift)

Each case's same-bytes device copy is timed the same ways. Writes JSON.

  python3 bench/timing_gap.py --package DIR --out gap.json [--cases op:dtype:ROWSxCOLS,...]
"""
import argparse
import json
import os
import statistics
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peers  # noqa: E402


def batched(fn, calls=20, batches=25):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(batches):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(calls):
            fn()
        e.record()
        e.synchronize()
        out.append(s.elapsed_time(e) * 1000.0 / calls)
    return out


def idle(fn, reps=50):
    out = []
    for _ in range(reps):
        torch.cuda.synchronize()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        out.append(s.elapsed_time(e) * 1000.0)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--package", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--cases", default="layernorm:bf16:4096x16384,layernorm:bf16:8192x4096,rmsnorm:f32:8192x4096,"
                                       "rmsnorm:f32:4096x16384,softmax:f32:4096x16384")
    a = ap.parse_args()
    peers.set_torch_state()
    fk = peers.Fusekit(a.package)
    gen = torch.Generator(device="cuda")
    gen.manual_seed(1)
    results = []
    for case in a.cases.split(","):
        op, dt_name, shape_text = case.split(":")
        shape = [int(v) for v in shape_text.split("x")]
        layout, names, params, eager = peers.OPS[op]
        dt = peers.DTYPES[dt_name]
        ins = peers.make_inputs(layout, names, shape, dt, gen)
        outs = [torch.empty(list(t.shape), dtype=dt, device="cuda") for t in peers.as_tuple(eager(*ins))]
        nbytes = (sum(t.numel() for t in ins) + sum(o.numel() for o in outs)) * outs[0].element_size()
        src = torch.empty(nbytes // 2, dtype=torch.uint8, device="cuda")
        dst = torch.empty_like(src)
        impls = {"fusekit": fk.caller(op, dt_name, ins, outs, params, shape), "copy": lambda: dst.copy_(src)}
        row = {"op": op, "dtype": dt_name, "shape": shape_text, "bytes": nbytes}
        for name, fn in impls.items():
            row[name] = {
                "single": statistics.median(peers.kernel_times([fn], 200)),
                "batched": statistics.median(batched(fn)),
                "idle": statistics.median(idle(fn)),
            }
        for name, fn in impls.items():
            row[name]["again"] = statistics.median(peers.kernel_times([fn], 200))
        results.append(row)
        print("%-10s %-4s %-11s " % (op, dt_name, shape_text) + "  ".join(
            "%s %s" % (name, " ".join("%s=%.2f" % kv for kv in row[name].items())) for name in impls), flush=True)
        del ins, outs, src, dst, impls
        torch.cuda.empty_cache()
    with open(a.out, "w") as f:
        json.dump({"gpu": torch.cuda.get_device_name(0), "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
