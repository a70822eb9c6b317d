#!/usr/bin/env python3
"""How a small kernel's time and the SM clock move after the GPU sat idle
(scripts/gpu/steps/ramp.sh).

    python3 bench/idle_ramp.py --out ramp.json [--idles 0,0.2,1,3] [--prespin-ms 0,50] [--trials 5]

A guided tune times a few candidates per batch with the model's work and the
next batch's builds in between; a full tune times 24 per batch. Under 20 us
the guided batches read the same schedule about 3 % slower
(docs/architecture.md), so this asks whether the GPU is slower just after an
idle gap. Per idle gap (seconds of time.sleep after a synchronize) and
pre-spin (a kernel on every SM spinning that long first, 0 for none), each
trial runs WINDOWS windows back to back as one CUDA graph; a window is one
launch of a probe that reads the SM clock over 20 us (clock64 cycles over
%globaltimer nanoseconds) and REPS launches of a small pointwise kernel,
timed from the probe's end to the next probe's start. Per window: its start (ms after the first window began),
the clock (GHz) and the small kernel's mean time (us). Writes the windows
averaged over trials, binned by start time, to --out and prints the bins,
each kernel time over the last bin's.
"""
import argparse
import json
import statistics
import time

import cupy as cp

SOURCE = r"""
__device__ unsigned long long now_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
extern "C" __global__ void add(const float* x, const float* y, float* z, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) z[i] = fmaxf(x[i], 0.0f) + y[i];
}
extern "C" __global__ void clock_probe(unsigned long long* ns, double* ghz, int slot) {
  unsigned long long t0 = now_ns(), c0 = clock64(), t1 = t0;
  while (t1 - t0 < 20000) t1 = now_ns();
  unsigned long long c1 = clock64();
  ns[2 * slot] = t0;
  ns[2 * slot + 1] = t1;
  ghz[slot] = double(c1 - c0) / double(t1 - t0);
}
extern "C" __global__ void spin(unsigned long long ns) {
  unsigned long long t0 = now_ns();
  while (now_ns() - t0 < ns) {}
}
"""
BINS_MS = (0, 2, 5, 10, 20, 50, 100, 200, 500, 1e9)


def capture(k, bufs, windows, reps):
    """The windows as one CUDA graph, so that Python's launch rate does not open gaps between kernels."""
    x, y, z, n = bufs
    ns = cp.zeros(2 * (windows + 1), dtype=cp.uint64)
    ghz = cp.zeros(windows + 1, dtype=cp.float64)
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        stream.begin_capture()
        for w in range(windows + 1):
            k["clock_probe"]((1,), (1,), (ns, ghz, cp.int32(w)))
            for _ in range(reps if w < windows else 0):
                k["add"](((n + 255) // 256,), (256,), (x, y, z, cp.int32(n)))
        graph = stream.end_capture()
    return stream, graph, ns, ghz


def trial(k, captured, idle_s, prespin_ms, reps, sms):
    """One idle gap, the optional pre-spin, then the windows: per window (start ms, GHz, us)."""
    stream, graph, ns, ghz = captured
    cp.cuda.Device().synchronize()
    time.sleep(idle_s)
    if prespin_ms > 0:
        k["spin"]((sms * 4,), (128,), (cp.uint64(int(prespin_ms * 1e6)),), stream=stream)
    graph.launch(stream)
    stream.synchronize()
    t, clocks = [int(v) for v in ns.get()], ghz.get()
    # A window's small kernels run from its probe's end to the next probe's start.
    return [((t[2 * w] - t[0]) / 1e6, float(clocks[w]), (t[2 * w + 2] - t[2 * w + 1]) / 1e3 / reps)
            for w in range(len(clocks) - 1)]


def binned(rows):
    """Median GHz and us per start-time bin, over every trial's windows."""
    out = []
    for lo, hi in zip(BINS_MS, BINS_MS[1:]):
        inside = [r for r in rows if lo <= r[0] < hi]
        if inside:
            out.append({"from_ms": lo, "windows": len(inside), "ghz": statistics.median(r[1] for r in inside),
                        "us": statistics.median(r[2] for r in inside)})
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--idles", default="0,0.2,1,3", help="idle gaps in seconds")
    ap.add_argument("--prespin-ms", default="0,50")
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--windows", type=int, default=200)
    ap.add_argument("--reps", type=int, default=500)
    ap.add_argument("--elements", type=int, default=65536)
    a = ap.parse_args()
    mod = cp.RawModule(code=SOURCE, options=("-std=c++17",))
    k = {name: mod.get_function(name) for name in ("add", "clock_probe", "spin")}
    n = a.elements
    bufs = (cp.random.rand(n, dtype=cp.float32), cp.random.rand(n, dtype=cp.float32), cp.empty(n, cp.float32), n)
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    captured = capture(k, bufs, a.windows, a.reps)
    trial(k, captured, 0.0, 0, a.reps, sms)  # loads everything once
    cases = []
    for idle in (float(s) for s in a.idles.split(",")):
        for prespin in (float(s) for s in a.prespin_ms.split(",")):
            rows = [r for _ in range(a.trials) for r in trial(k, captured, idle, prespin, a.reps, sms)]
            cases.append({"idle_s": idle, "prespin_ms": prespin, "bins": binned(rows)})
    name = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    with open(a.out, "w") as f:
        json.dump({"gpu": name, "elements": n, "reps": a.reps, "windows": a.windows, "trials": a.trials,
                   "cases": cases}, f, indent=1)
    print(f"{name}: relu_add f32 of {n} elements, {a.reps} launches a window; us over the last bin's")
    for c in cases:
        last = c["bins"][-1]["us"]
        cells = "  ".join(f"{b['from_ms']:g}ms {b['ghz']:.2f}GHz {b['us'] / last:.3f}" for b in c["bins"])
        print(f"idle {c['idle_s']:g} s, pre-spin {c['prespin_ms']:g} ms: {cells}")


if __name__ == "__main__":
    main()
