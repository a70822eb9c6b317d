#!/usr/bin/env python3
"""Times row kernels that `fusekit source` printed (any schedule, specialized
or not, including ones the tuner never measured) next to torch.compile and a
device copy, in one process: a probe of the schedule space beyond a tune.

  python3 bench/variant_probe.py --dir DIR --out probe.json

DIR comes from scripts/probe_variants.py (e.g. from bench/probe-59e1ecc.txt)
and holds `variants.json`, a list of {"file", "entry", "op", "dtype",
"shape": "ROWSxCOLS", "threads", "rows", "fast"} (row ops without a shared
memory stage or cluster split: the launch is a grid of ceil(rows / rows per
block) blocks of threads x rows), and the .cu files. Each kernel is compiled
with CuPy's NVRTC (with --use_fast_math -DFK_FAST where fast), checked against
eager PyTorch on the inputs widened to f32 with peers.py's tolerance, and timed
by peers.py's protocol (an event pair around each call, median of 200).
"""
import argparse
import json
import os
import statistics
import sys

import cupy
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peers  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    peers.set_torch_state()
    variants = json.load(open(os.path.join(a.dir, "variants.json")))
    gen = torch.Generator(device="cuda")
    gen.manual_seed(1)
    stream = cupy.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream)
    cases, results = {}, []
    for v in variants:
        key = (v["op"], v["dtype"], v["shape"])
        shape = [int(s) for s in v["shape"].split("x")]
        layout, names, params, eager = peers.OPS[v["op"]]
        dt = peers.DTYPES[v["dtype"]]
        if key not in cases:
            ins = peers.make_inputs(layout, names, shape, dt, gen)
            outs = [torch.empty(list(t.shape), dtype=dt, device="cuda") for t in peers.as_tuple(eager(*ins))]
            refs = [r.to(dt) for r in peers.as_tuple(eager(*[t.float() for t in ins]))]
            nbytes = (sum(t.numel() for t in ins) + sum(o.numel() for o in outs)) * outs[0].element_size()
            compiled = torch.compile(eager, dynamic=False)
            src = torch.empty(nbytes // 2, dtype=torch.uint8, device="cuda")
            dst = torch.empty_like(src)
            peer = {"inductor": statistics.median(peers.kernel_times([lambda: compiled(*ins)], 200)),
                    "copy": statistics.median(peers.kernel_times([lambda: dst.copy_(src)], 200))}
            cases[key] = (ins, outs, refs, peer)
            results.append({"op": v["op"], "dtype": v["dtype"], "shape": v["shape"], "bytes": nbytes, **peer})
            print("%s %s %s inductor=%.2f copy=%.2f" % (key + (peer["inductor"], peer["copy"])), flush=True)
        ins, outs, refs, peer = cases[key]
        src_text = open(os.path.join(a.dir, v["file"])).read()
        options = ("--std=c++17",) + (("--use_fast_math", "-DFK_FAST") if v["fast"] else ())
        row = {"variant": v["file"], "op": v["op"], "dtype": v["dtype"], "shape": v["shape"]}
        try:
            fn = cupy.RawModule(code=src_text, options=options).get_function(v["entry"])
        except Exception as e:  # a variant that does not compile is a result too
            row["error"] = str(e)[:500]
            results.append(row)
            print(v["file"], "compile error", flush=True)
            continue
        args = tuple(cupy.uint64(t.data_ptr()) for t in ins + outs) + tuple(cupy.float32(p) for p in params) + (
            cupy.int64(shape[0]), cupy.int32(shape[1]))
        grid = ((shape[0] + v["rows"] - 1) // v["rows"], 1, 1)
        block = (v["threads"], v["rows"], 1)

        def call():
            with stream:
                fn(grid, block, args)

        for o in outs:
            o.zero_()
        call()
        torch.cuda.synchronize()
        atol, rtol = peers.tolerance(v["dtype"], layout, shape)
        ok = all(bool(((g.float() - w.float()).abs() <= atol + rtol * w.float().abs()).all())
                 for g, w in zip(outs, refs))
        row["verified"] = ok
        row["regs"] = fn.num_regs
        if ok:
            row["median_us"] = statistics.median(peers.kernel_times([call], 200))
            row["vs_inductor"] = peer["inductor"] / row["median_us"]
        results.append(row)
        print("%-60s regs=%3d ok=%d %s" % (v["file"], fn.num_regs, ok,
                                           "%.2f us (%.3fx inductor)" % (row["median_us"], row["vs_inductor"])
                                           if ok else ""), flush=True)
    with open(a.out, "w") as f:
        json.dump({"gpu": torch.cuda.get_device_name(0), "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
