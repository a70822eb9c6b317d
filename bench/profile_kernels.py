#!/usr/bin/env python3
"""The profiling figures of every packaged fusekit kernel at its op's largest
sizes (and the smallest, where launch overhead shows).

  python3 bench/profile_kernels.py calls  --package DIR --out calls.json
  ncu --clock-control none --nvtx --nvtx-include "fk/" --csv --page raw \\
      --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,\\
sm__warps_active.avg.pct_of_peak_sustained_active,sm__maximum_warps_per_active_cycle_pct \\
      python3 bench/profile_kernels.py ncu --package DIR > ncu.csv
  python3 bench/profile_kernels.py merge --calls calls.json --ncu ncu.csv --out profile.json

`calls` times, without a profiler, each (op, dtype, shape) two ways: CUDA
events around one call after warm-up (median of 200), and the host's wall
time per call over 2000 back-to-back calls with one synchronize. `ncu` runs
each kernel once inside an NVTX range "fk" (after a warm-up call outside it),
so Nsight Compute profiles only fusekit's kernels. `merge` joins them:

  launch-overhead share  1 - kernel duration (ncu) / wall time per call,
                         at least 0: the part of a call the GPU is not busy
                         with the kernel (what back-to-back calls pay)
  achieved bandwidth     DRAM bytes read + written (ncu) / kernel duration,
                         and as a fraction of the same-bytes copy
  achieved occupancy     sm__warps_active.avg.pct_of_peak_sustained_active,
                         next to the theoretical occupancy
"""
import argparse
import csv
import io
import json
import math
import os
import statistics
import sys

# `calls` and `ncu` need PyTorch and bench/peers.py (OPS, shapes, inputs and
# the ctypes caller); `merge` runs anywhere.
torch = peers = None


def load_torch():
    global torch, peers
    import torch as t
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import peers as p
    torch, peers = t, p


def cases():
    """(op, dtype, shape): each op's largest sizes and its smallest."""
    for op, (layout, names, params, eager) in peers.OPS.items():
        shapes = peers.shapes_for(layout, False)
        largest = max(math.prod(s) for s in shapes)
        picked = [s for s in shapes if math.prod(s) == largest] + [min(shapes, key=math.prod)]
        for dt_name in peers.DTYPES:
            for shape in picked:
                yield op, dt_name, shape


def prepared(fk, op, dt_name, shape, gen):
    layout, names, params, eager = peers.OPS[op]
    dt = peers.DTYPES[dt_name]
    ins = peers.make_inputs(layout, names, shape, dt, gen)
    outs = [torch.empty(list(t.shape), dtype=dt, device="cuda") for t in peers.as_tuple(eager(*ins))]
    bytes_moved = (sum(t.numel() for t in ins) + sum(o.numel() for o in outs)) * outs[0].element_size()
    return fk.caller(op, dt_name, ins, outs, params, shape), bytes_moved


def key(op, dt_name, shape):
    return "%s %s %s" % (op, dt_name, "x".join(map(str, shape)))


def cmd_calls(a):
    fk = peers.Fusekit(a.package)
    gen = torch.Generator(device="cuda")
    gen.manual_seed(1)
    out = {}
    for op, dt_name, shape in cases():
        call, bytes_moved = prepared(fk, op, dt_name, shape, gen)
        event = statistics.median(peers.kernel_times([call], 200))
        wall = peers.per_call_us(call, 2000)
        src = torch.empty(bytes_moved // 2, dtype=torch.uint8, device="cuda")
        dst = torch.empty_like(src)
        copy = statistics.median(peers.kernel_times([lambda: dst.copy_(src)], 100))
        out[key(op, dt_name, shape)] = {"op": op, "dtype": dt_name, "shape": "x".join(map(str, shape)),
                                        "bytes": bytes_moved, "event_us": event, "wall_us_per_call": wall,
                                        "copy_us": copy}
        print("%-40s event %9.2f us  wall/call %9.2f us  copy %9.2f us" % (key(op, dt_name, shape), event, wall, copy),
              flush=True)
        del call, src, dst
        torch.cuda.empty_cache()
    with open(a.out, "w") as f:
        json.dump(out, f, indent=1)


def cmd_ncu(a):
    fk = peers.Fusekit(a.package)
    gen = torch.Generator(device="cuda")
    gen.manual_seed(1)
    for op, dt_name, shape in cases():
        call, _ = prepared(fk, op, dt_name, shape, gen)
        call()  # module load and first launch, outside the profiled range
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_push("fk")
        call()
        torch.cuda.nvtx.range_pop()
        torch.cuda.synchronize()
        del call
        torch.cuda.empty_cache()


def read_ncu_csv(path):
    """Rows of `ncu --csv --page raw` (a units row follows the header)."""
    text = open(path).read()
    start = text.find('"ID"')
    if start < 0:
        raise SystemExit("%s holds no ncu table" % path)
    rows = list(csv.DictReader(io.StringIO(text[start:])))
    return [r for r in rows if r.get("ID", "").isdigit()]


def number(v):
    return float(str(v).replace(",", ""))


def cmd_merge(a):
    calls = json.load(open(a.calls))
    rows = read_ncu_csv(a.ncu)
    if len(rows) != len(calls):
        print("warning: %d profiled kernels for %d cases" % (len(rows), len(calls)), file=sys.stderr)
    # Kernels come in the order of cases(), one each; an NVRTC kernel's name
    # says its op and dtype, which checks the pairing.
    out = []
    for (k, c), r in zip(calls.items(), rows):
        name = r.get("Kernel Name", "")
        if name.startswith("fusekit_") and "_%s_%s_" % (c["op"], c["dtype"]) not in name:
            raise SystemExit("profiled kernel %s does not belong to %s: ncu rows and cases are out of step" % (name, k))
        dur_us = number(r["gpu__time_duration.sum"]) / 1e3  # ns
        dram = number(r["dram__bytes_read.sum"]) + number(r["dram__bytes_write.sum"])
        out.append(dict(c, kernel=r.get("Kernel Name", ""), kernel_us=dur_us,
                        launch_overhead_share=max(0.0, 1.0 - dur_us / c["wall_us_per_call"]),
                        dram_bytes=dram, achieved_gbps=dram / (dur_us * 1e-6) / 1e9,
                        fraction_of_copy=c["copy_us"] / dur_us,
                        achieved_occupancy_pct=number(r["sm__warps_active.avg.pct_of_peak_sustained_active"]),
                        theoretical_occupancy_pct=number(r["sm__maximum_warps_per_active_cycle_pct"])))
    with open(a.out, "w") as f:
        json.dump({"gpu": a.gpu, "cases": out}, f, indent=1)
    print("%-40s %9s %9s %8s %8s %6s %6s" % ("case", "kernel us", "wall us", "launch%", "x copy", "occ%", "theo%"))
    for c in out:
        print("%-40s %9.2f %9.2f %8.1f %8.3f %6.1f %6.1f" % (
            key(c["op"], c["dtype"], c["shape"].split("x")), c["kernel_us"], c["wall_us_per_call"],
            100 * c["launch_overhead_share"], c["fraction_of_copy"], c["achieved_occupancy_pct"],
            c["theoretical_occupancy_pct"]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["calls", "ncu", "merge"])
    ap.add_argument("--package")
    ap.add_argument("--out")
    ap.add_argument("--calls")
    ap.add_argument("--ncu")
    ap.add_argument("--gpu", default="")
    a = ap.parse_args()
    if a.mode in ("calls", "ncu") and not a.package:
        ap.error("--package is needed for " + a.mode)
    if a.mode != "merge":
        load_torch()
    {"calls": cmd_calls, "ncu": cmd_ncu, "merge": cmd_merge}[a.mode](a)


if __name__ == "__main__":
    main()
