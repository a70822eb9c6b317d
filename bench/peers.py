#!/usr/bin/env python3
"""fusekit against PyTorch eager, TorchScript and torch.compile, one protocol.

  python3 bench/peers.py --package /tmp/pkg --out bench/results/DATE-h200-peers.json [--quick]

fusekit is called through the emitted library's C ABI (`fusekit_launch`) with
ctypes, on PyTorch's current stream, so the kernels timed are the packaged
ones. Every fusekit result is checked against eager's before it is timed: eager
run on the inputs widened to f32 and rounded once to the storage dtype (what
fusekit computes: f32 math, one rounding), with fusekit's own tolerances
(search/host_tensor.cpp: f32 1e-5 + 1e-5|ref|, bf16 1e-4 + 2 ulps; row
reductions widen them by 1 + sqrt(cols)/16). Eager's own bf16 result rounds
every intermediate and is not a sharper reference.

Ops: the pointwise catalog at 4096, 65536, 1048576 and 67108864 elements, and
the row reductions (softmax, log_softmax, layernorm, rmsnorm, add_layernorm,
add_rmsnorm, bias_add_softmax) at 256x1024, 32768x1024, 8192x4096, 4096x16384
and 1024x65536.

Compilation: torch.compile's static-shape graphs (one per op, dtype, size and
mode) are compiled first by --precompile-workers processes in parallel into a
fresh Inductor cache; the timed process then loads them from that cache (its
FX-graph-cache hits and misses are reported). The autotuning choices the
workers made under each other's load are deleted first, so the timed process
benchmarks Inductor's kernel configs itself, alone on the GPU.

Timing: kernel time by CUDA events around each call after warm-up, median and
p20/p80 of many calls, inputs rotated over enough copies to exceed L2. The
calls are taken in --rounds interleaved rounds: each round times a block of
every implementation in turn, starting one further along each round, so a
drift in clocks or memory state during a row falls on all of them alike; each
round's median is kept, and the summary gives the range of fusekit's ratio to
Inductor over the rounds beside the ratio of the medians. Before each timed
call a spin kernel of --spacer-us (torch.cuda._sleep) is queued: the host
enqueues the call while it spins, so the event pair times the kernels alone
even where the caller's host path is slower than its kernel (torch.compile's
took 35-98 us per call on the H200 machines' hosts, as long as a 70 us bf16
kernel: without the spacer the GPU waits for it between calls, and in run
abbeed6 that put 100-170 us rounds into Inductor's bf16 times). Per-call
time for small sizes as 10 000 back-to-back calls and one synchronize; the
small sizes captured in a CUDA graph too. A device-to-device copy of the same
bytes is the bandwidth limit.
"""
import argparse
import ctypes
import glob
import json
import math
import multiprocessing
import os
import statistics
import sys
import tempfile
import time

import torch
import torch.nn.functional as F

DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16}
# Where inputs live. Only the torch.compile precompile path runs elsewhere
# (FUSEKIT_PEERS_DEVICE=cpu, a check of the cache mechanics without a GPU).
DEVICE = os.environ.get("FUSEKIT_PEERS_DEVICE", "cuda")
ATOL_RTOL = {"f32": (1e-5, 1e-5), "bf16": (1e-4, 2 * 2.0 ** -8)}


# Each op: layout, input names (with broadcast axes), scalar parameters (the
# catalog's values), the eager function (returns a tensor or a tuple).
def relu_add(x, y):
    return torch.relu(x) + y


def sigmoid_mul_tanh_add(x, y, z):
    return torch.tanh(torch.sigmoid(x) * y) + z


def bias_gelu(x, b):
    return F.gelu(x + b)


def bias_gelu_tanh(x, b):
    return F.gelu(x + b, approximate="tanh")


def bn_relu(x, scale, shift):
    return torch.relu(x * scale[None, :, None] + shift[None, :, None])


def residual_add_relu(x, r):
    return torch.relu(x + r)


def silu_mul(a, b):
    return F.silu(a) * b


def softmax(x):
    return torch.softmax(x, -1)


def log_softmax(x):
    return torch.log_softmax(x, -1)


def layernorm(x, w, b):
    return F.layer_norm(x, [x.size(-1)], w, b, 1e-5)


def rmsnorm(x, w):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w


def add_layernorm(x, residual, w, b):
    s = x + residual
    return F.layer_norm(s, [s.size(-1)], w, b, 1e-5), s


def add_rmsnorm(x, residual, w):
    s = x + residual
    return s * torch.rsqrt(s.pow(2).mean(-1, keepdim=True) + 1e-6) * w, s


def bias_add_softmax(x, mask):
    return torch.softmax(0.125 * x + mask, -1)


OPS = {
    "relu_add": ("flat", ["x", "y"], [], relu_add),
    "sigmoid_mul_tanh_add": ("flat", ["x", "y", "z"], [], sigmoid_mul_tanh_add),
    "bias_gelu": ("rowcol", ["x", "b[col]"], [], bias_gelu),
    "bias_gelu_tanh": ("rowcol", ["x", "b[col]"], [], bias_gelu_tanh),
    "bn_relu": ("nchw", ["x", "scale[c]", "shift[c]"], [], bn_relu),
    "residual_add_relu": ("flat", ["x", "r"], [], residual_add_relu),
    "silu_mul": ("flat", ["a", "b"], [], silu_mul),
    "softmax": ("rows", ["x"], [], softmax),
    "log_softmax": ("rows", ["x"], [], log_softmax),
    "layernorm": ("rows", ["x", "w[col]", "b[col]"], [1e-5], layernorm),
    "rmsnorm": ("rows", ["x", "w[col]"], [1e-6], rmsnorm),
    "add_layernorm": ("rows", ["x", "residual", "w[col]", "b[col]"], [1e-5], add_layernorm),
    "add_rmsnorm": ("rows", ["x", "residual", "w[col]"], [1e-6], add_rmsnorm),
    "bias_add_softmax": ("rows", ["x", "mask"], [0.125], bias_add_softmax),
}

# The spine's element counts and the reduction issue's [rows, cols] shapes.
POINTWISE_SIZES = [4096, 65536, 1048576, 67108864]
ROW_SHAPES = [[256, 1024], [32768, 1024], [8192, 4096], [4096, 16384], [1024, 65536]]


def shape_for(layout, n):
    """The catalog's shapes for an element count (fusion_candidate.cpp)."""
    if layout == "flat":
        return [n]
    if layout == "rowcol":
        return [1, n] if n < 1024 else [(n + 1023) // 1024, 1024]
    return [1, 1, n] if n < 64 else [1, 64, (n + 63) // 64]


def shapes_for(layout, quick):
    if layout == "rows":
        return [ROW_SHAPES[0], ROW_SHAPES[2]] if quick else ROW_SHAPES
    return [shape_for(layout, n) for n in ([4096, 67108864] if quick else POINTWISE_SIZES)]


def tolerance(dt_name, layout, shape):
    """fusekit's own (search/host_tensor.cpp, candidate_workload.cpp): row
    reductions widen f32 tolerances by 1 + sqrt(cols) / 16."""
    atol, rtol = ATOL_RTOL[dt_name]
    if layout == "rows":
        s = 1.0 + shape[-1] ** 0.5 / 16.0
        atol *= s
        if dt_name == "f32":
            rtol *= s
    return atol, rtol


def make_inputs(layout, names, shape, dtype, gen):
    tensors = []
    for name in names:
        if "[col]" in name:
            s = [shape[-1]]
        elif "[c]" in name:
            s = [shape[1]]
        else:
            s = shape
        tensors.append((torch.rand(s, generator=gen, device=DEVICE) * 6 - 3).to(dtype))
    return tensors


def as_tuple(v):
    return v if isinstance(v, tuple) else (v,)


class Fusekit:
    def __init__(self, package):
        self.lib = ctypes.CDLL(package + "/lib/libfusekit_kernels.so")
        f = self.lib.fusekit_launch
        f.restype = ctypes.c_int
        f.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_int,
                      ctypes.POINTER(ctypes.c_void_p), ctypes.c_int, ctypes.POINTER(ctypes.c_float), ctypes.c_int,
                      ctypes.POINTER(ctypes.c_int64), ctypes.c_int, ctypes.c_void_p]
        self.lib.fusekit_last_error.restype = ctypes.c_char_p

    def caller(self, op, dtype, inputs, outs, params, shape, follow_stream=False):
        """A zero-argument callable launching the op. On the stream current
        now, its arguments converted once (what a framework binding caching
        its stream does); with follow_stream, on the stream current at each
        call (needed under CUDA graph capture)."""
        ins = (ctypes.c_void_p * len(inputs))(*[t.data_ptr() for t in inputs])
        out_ptrs = (ctypes.c_void_p * len(outs))(*[t.data_ptr() for t in outs])
        dom = (ctypes.c_int64 * len(shape))(*shape)
        prm = (ctypes.c_float * max(1, len(params)))(*(params or [0.0]))
        launch, err = self.lib.fusekit_launch, self.lib.fusekit_last_error
        head = (ctypes.c_char_p(op.encode()), ctypes.c_char_p(dtype.encode()), ins, ctypes.c_int(len(inputs)), out_ptrs,
                ctypes.c_int(len(outs)), prm, ctypes.c_int(len(params)), dom, ctypes.c_int(len(shape)))

        def fail():
            raise RuntimeError("fusekit_launch(%s, %s): %s" % (op, dtype, err().decode()))

        if follow_stream:
            def call():
                if launch(*head, ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)):
                    fail()
            return call
        args = head + (ctypes.c_void_p(torch.cuda.current_stream().cuda_stream),)

        def call():
            if launch(*args):
                fail()
        return call


SPACER_CYCLES = 0  # set by calibrate_spacer


def calibrate_spacer(us):
    """The torch.cuda._sleep cycles that spin for about `us` microseconds."""
    global SPACER_CYCLES
    if us <= 0:
        return 0.0
    cycles = 1000000
    torch.cuda._sleep(cycles)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    torch.cuda._sleep(cycles)
    end.record()
    torch.cuda.synchronize()
    per_us = cycles / (start.elapsed_time(end) * 1000.0)
    SPACER_CYCLES = int(us * per_us)
    return per_us


def kernel_times(fn_per_set, reps):
    """CUDA-event time of single calls (µs), rotating over input sets; each
    call's event pair queued behind a spacer (SPACER_CYCLES of spin)."""
    for i in range(5):
        fn_per_set[i % len(fn_per_set)]()
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for i in range(reps):
        if SPACER_CYCLES:
            torch.cuda._sleep(SPACER_CYCLES)
        starts[i].record()
        fn_per_set[(i + 1) % len(fn_per_set)]()
        ends[i].record()
    torch.cuda.synchronize()
    return [s.elapsed_time(e) * 1000.0 for s, e in zip(starts, ends)]


def interleaved_times(impls, reps, rounds):
    """{name: (samples, per-round medians)}: `rounds` rounds of reps/rounds
    calls of each implementation in turn, the order rotated by one per round."""
    names = list(impls)
    per = max(1, reps // rounds)
    out = {n: ([], []) for n in names}
    for r in range(rounds):
        for k in range(len(names)):
            name = names[(r + k) % len(names)]
            t = kernel_times(impls[name], per)
            out[name][0].extend(t)
            out[name][1].append(statistics.median(t))
    return out


def per_call_us(fn, calls=10000):
    for _ in range(50):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / calls * 1e6


def graph_us(fn, per_graph=100, replays=200):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(per_graph):
            fn()
    g.replay()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(replays):
        g.replay()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) * 1000.0 / (replays * per_graph)


COMPILE_MODES = [None, "max-autotune-no-cudagraphs"]  # None: torch.compile's default


def set_torch_state():
    """What the timed process and the precompile workers both set: the FX
    graph cache's key includes global state such as the matmul precision."""
    torch.backends.cuda.matmul.allow_tf32 = False
    # One static-shape compilation per op, dtype and size, as a model with
    # fixed shapes gets.
    torch._dynamo.config.cache_size_limit = 256


def compile_jobs(ops, quick):
    """Every static-shape torch.compile graph the suite times: (op, dtype,
    shape, mode), the most expensive (max-autotune, largest) first."""
    jobs = []
    for op, (layout, _, _, _) in OPS.items():
        if ops and op not in ops:
            continue
        for dt_name in DTYPES:
            for shape in shapes_for(layout, quick):
                for mode in COMPILE_MODES:
                    jobs.append((op, dt_name, shape, mode))
    jobs.sort(key=lambda j: (j[3] is None, -math.prod(j[2])))
    return jobs


def precompile_job(job):
    """In a worker process: compile and run one graph once, which fills the
    shared Inductor cache. Returns (job, seconds, error or None)."""
    op, dt_name, shape, mode = job
    t0 = time.monotonic()
    try:
        import torch._inductor.config as inductor_config
        inductor_config.compile_threads = 1  # the workers are the parallelism
        set_torch_state()
        layout, names, _, eager = OPS[op]
        gen = torch.Generator(device=DEVICE)
        gen.manual_seed(1)
        ins = make_inputs(layout, names, shape, DTYPES[dt_name], gen)
        torch.compile(eager, mode=mode, dynamic=False)(*ins)
        if DEVICE == "cuda":
            torch.cuda.synchronize()
        return job, time.monotonic() - t0, None
    except Exception as e:  # reported; the timed process compiles it again
        return job, time.monotonic() - t0, "%s: %s" % (type(e).__name__, e)


def precompile(jobs, workers):
    """Compiles `jobs` in `workers` processes; then deletes the autotuning
    results they cached (*.best_config) so the timed process re-benchmarks
    Inductor's configs on a quiet GPU. Returns a summary for the JSON."""
    t0 = time.monotonic()
    errors = []
    with multiprocessing.get_context("spawn").Pool(workers) as pool:
        for job, _, err in pool.imap_unordered(precompile_job, jobs):
            if err:
                errors.append("%s %s %s %s: %s" % (job[0], job[1], "x".join(map(str, job[2])), job[3], err))
    stale = glob.glob(os.path.join(os.environ["TORCHINDUCTOR_CACHE_DIR"], "**", "*.best_config"), recursive=True)
    for f in stale:
        os.remove(f)
    took = time.monotonic() - t0
    print("precompiled %d torch.compile graphs in %.0f s with %d processes (%d failed); %d autotuning results "
          "discarded" % (len(jobs), took, workers, len(errors), len(stale)), flush=True)
    for e in errors:
        print("  precompile failed: " + e, file=sys.stderr)
    return {"graphs": len(jobs), "workers": workers, "seconds": took, "errors": errors,
            "autotune_results_discarded": len(stale)}


def inductor_cache_counters():
    from torch._dynamo.utils import counters
    c = counters["inductor"]
    return {"fxgraph_cache_hit": c["fxgraph_cache_hit"], "fxgraph_cache_miss": c["fxgraph_cache_miss"]}


def round_ratio_range(row):
    """Lowest and highest of Inductor's time over fusekit's, round by round."""
    fk = row["impls"]["fusekit"].get("round_medians_us", [])
    ind = row["impls"]["inductor"].get("round_medians_us", [])
    ratios = [i / f for f, i in zip(fk, ind)] or [float("nan")]
    return min(ratios), max(ratios)


def summarize(samples):
    s = sorted(samples)
    pick = lambda q: s[int(q * (len(s) - 1) + 0.5)]
    return {"median_us": pick(0.5), "p20_us": pick(0.2), "p80_us": pick(0.8), "samples": len(s)}


def parse_args():
    """The command line: the package, the output, what to run and how to time it."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--package", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--quick", action="store_true", help="two sizes, fewer repetitions")
    ap.add_argument("--ops", default="", help="comma-separated subset of the ops")
    ap.add_argument("--deadline", type=float, default=0.0,
                    help="seconds: start no new op after this (the rest are listed as skipped); 0 = none")
    ap.add_argument("--package-ready", default="",
                    help="a file another process writes once --package is built (its text: 'ok' or why not); "
                         "compiling torch.compile's graphs overlaps the build")
    ap.add_argument("--rounds", type=int, default=5,
                    help="interleaved rounds the kernel-time calls of each row are split into")
    ap.add_argument("--spacer-us", type=float, default=300.0,
                    help="spin queued before each timed call so the host is ahead of the GPU (0: none)")
    ap.add_argument("--precompile-workers", type=int, default=8,
                    help="processes compiling torch.compile's graphs before timing; 0 = compile while timing")
    return ap.parse_args()


def wait_for_package(path, t_start):
    """Waits for --package-ready's file (600 s from the start at most); exits unless it reads 'ok'."""
    while not os.path.exists(path):
        if time.monotonic() - t_start > 600:
            sys.exit("no %s after 600 s: the package build did not finish" % path)
        time.sleep(1)
    with open(path) as f:
        state = f.read().strip()
    if state != "ok":
        sys.exit("the package build failed: " + state)
    print("package ready after %.0f s" % (time.monotonic() - t_start), flush=True)


def op_rows(a, fk, gen, l2, op):
    """One op's rows (each dtype and shape), each measured when asked for; its compiled peers made once."""
    layout, names, params, eager = OPS[op]
    scripted = torch.jit.script(eager)
    compiled = torch.compile(eager, dynamic=False)
    autotuned = torch.compile(eager, mode="max-autotune-no-cudagraphs", dynamic=False)
    for dt_name, dt in DTYPES.items():
        for shape in shapes_for(layout, a.quick):
            yield measure_row(a, fk, gen, l2, op, dt_name, shape, (eager, scripted, compiled, autotuned))


def measure_row(a, fk, gen, l2, op, dt_name, shape, peer_fns):
    """One op at one dtype and shape: fusekit checked against eager, then every implementation timed."""
    layout, names, params, eager = OPS[op]
    elements = 1
    for d in shape:
        elements *= d
    sets, bytes_moved = input_sets(layout, names, shape, DTYPES[dt_name], gen, l2, eager)
    ok, err = check_fusekit(fk, op, dt_name, shape, sets)
    impls, graph_fns = implementations(fk, op, dt_name, shape, sets, peer_fns, bytes_moved)
    row = {"op": op, "dtype": dt_name, "shape": "x".join(map(str, shape)), "elements": elements,
           "bytes": bytes_moved, "fusekit_verified": bool(ok), "fusekit_max_abs_err": err, "impls": {}}
    if not ok:
        print("fusekit disagrees with eager on %s %s %s (max err %g): not timed" % (
            op, dt_name, row["shape"], err), file=sys.stderr)
        del impls["fusekit"]
    row["impls"] = time_impls(a, impls, graph_fns, bytes_moved, elements)
    return row


def input_sets(layout, names, shape, dt, gen, l2, eager):
    """The (inputs, outputs) sets the timed calls rotate over, and the bytes one call reads and writes."""
    # Outputs: the eager result's shapes, one tensor per output.
    probe = make_inputs(layout, names, shape, dt, gen)
    out_shapes = [list(t.shape) for t in as_tuple(eager(*probe))]
    # Enough input sets that rotating through them never hits L2,
    # and at least two: lines a kernel reads at evict_last outlast
    # other traffic (gap probe 4517801-rmsbf16-after), so a call
    # on the tensors of the call before could find some of them.
    sets = []
    while True:
        ins = make_inputs(layout, names, shape, dt, gen)
        outs = [torch.empty(s, dtype=dt, device="cuda") for s in out_shapes]
        sets.append((ins, outs))
        bytes_moved = (sum(t.numel() for t in ins) + sum(o.numel() for o in outs)) * outs[0].element_size()
        if (bytes_moved * len(sets) >= 2.5 * l2 and len(sets) >= 2) or len(sets) >= 64:
            break
    return sets, bytes_moved


def check_fusekit(fk, op, dt_name, shape, sets):
    """fusekit on the first set against eager's f32 result rounded once: (within tolerance, max abs error)."""
    layout, _, params, eager = OPS[op]
    refs = [r.to(DTYPES[dt_name]) for r in as_tuple(eager(*[t.float() for t in sets[0][0]]))]
    call0 = fk.caller(op, dt_name, sets[0][0], sets[0][1], params, shape)
    call0()
    torch.cuda.synchronize()
    atol, rtol = tolerance(dt_name, layout, shape)
    ok, err = True, 0.0
    for got, want in zip(sets[0][1], refs):
        got, want = got.float(), want.float()
        excess = (got - want).abs() / (atol + rtol * want.abs())
        ok = ok and bool(excess.max().item() <= 1.0)
        err = max(err, (got - want).abs().max().item())
    return ok, err


def implementations(fk, op, dt_name, shape, sets, peer_fns, bytes_moved):
    """Each implementation's calls, one per set, with a copy of the same bytes; and fusekit's call for graph capture."""
    params = OPS[op][2]
    eager, scripted, compiled, autotuned = peer_fns
    impls = {
        "fusekit": [fk.caller(op, dt_name, i, o, params, shape) for i, o in sets],
        "eager": [lambda i=i: eager(*i) for i, _ in sets],
        "torchscript": [lambda i=i: scripted(*i) for i, _ in sets],
        "inductor": [lambda i=i: compiled(*i) for i, _ in sets],
        "inductor_max_autotune": [lambda i=i: autotuned(*i) for i, _ in sets],
    }
    graph_fns = {"fusekit": fk.caller(op, dt_name, sets[0][0], sets[0][1], params, shape,
                                      follow_stream=True)}
    src = torch.empty(bytes_moved // 2, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    impls["copy"] = [lambda: dst.copy_(src)]
    return impls, graph_fns


def time_impls(a, impls, graph_fns, bytes_moved, elements):
    """Each implementation's times, by name: kernel time over the rounds, and per call and in a graph when small."""
    times = interleaved_times(impls, 30 if a.quick else 100, a.rounds)
    entries = {}
    for name, fns in impls.items():
        entry = summarize(times[name][0])
        entry["round_medians_us"] = times[name][1]
        entry["gbps"] = bytes_moved / (entry["median_us"] * 1e-6) / 1e9
        if elements <= 1048576:
            entry["per_call_us"] = per_call_us(fns[0], 2000 if a.quick else 10000)
            try:
                entry["graph_us_per_call"] = graph_us(graph_fns.get(name, fns[0]))
            except Exception as e:  # a peer that cannot be captured
                entry["graph_error"] = str(e)
        entries[name] = entry
    return entries


def write_results(a, t_start, compile_summary, spin_rate, results, skipped=None):
    """Writes the JSON: the rows so far, and once the run is over (`skipped` given) the ops not run."""
    with open(a.out, "w") as f:
        doc = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__,
               "seconds": time.monotonic() - t_start, "precompile": compile_summary}
        if skipped is not None:
            doc["skipped_ops"] = skipped
        doc.update({"spacer_us": a.spacer_us, "spacer_cycles_per_us": spin_rate, "results": results})
        json.dump(doc, f, indent=1)


def print_summary(results):
    """Prints fusekit's ratios at each op's largest size and their geometric means."""
    print("\n%-22s %-4s %10s %15s %10s %10s" % ("op", "dtype", "fk/ind", "rounds", "fk/eager", "x copy"))
    ratios_ind, ratios_eager = [], []
    for r in results:
        if r["elements"] < max(x["elements"] for x in results if x["op"] == r["op"]) or "fusekit" not in r["impls"]:
            continue
        fk_t = r["impls"]["fusekit"]["median_us"]
        ri = r["impls"]["inductor"]["median_us"] / fk_t
        re = r["impls"]["eager"]["median_us"] / fk_t
        ratios_ind.append(ri)
        ratios_eager.append(re)
        lo, hi = round_ratio_range(r)
        print("%-22s %-4s %9.3fx %6.3f-%6.3fx %9.2fx %10.3f" % (r["op"], r["dtype"], ri, lo, hi, re,
                                                               r["impls"]["copy"]["median_us"] / fk_t))
    if ratios_ind:
        print("geometric mean speedup: %.2fx over Inductor, %.2fx over eager" % (
            statistics.geometric_mean(ratios_ind), statistics.geometric_mean(ratios_eager)))


def main():
    a = parse_args()
    t_start = time.monotonic()
    skipped = []
    selected = a.ops.split(",") if a.ops else []
    # A fresh Inductor cache: every graph is compiled in this run.
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", tempfile.mkdtemp(prefix="fusekit-peers-inductor-"))
    compile_summary = {"workers": 0}
    if a.precompile_workers > 0:
        compile_summary = precompile(compile_jobs(selected, a.quick), a.precompile_workers)
    set_torch_state()
    if a.package_ready:
        wait_for_package(a.package_ready, t_start)
    fk = Fusekit(a.package)
    spin_rate = calibrate_spacer(a.spacer_us)
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    results = []
    gen = torch.Generator(device="cuda")
    gen.manual_seed(1)
    for op in OPS:
        if selected and op not in selected:
            continue
        if a.deadline and time.monotonic() - t_start > a.deadline:
            skipped.append(op)
            continue
        for row in op_rows(a, fk, gen, l2, op):
            results.append(row)
            print("%-22s %-4s %-14s" % (op, row["dtype"], row["shape"]) + "".join(
                " %s=%.2fus" % (k, v["median_us"]) for k, v in row["impls"].items()), flush=True)
            # After every row, so a run cut short keeps what it measured.
            write_results(a, t_start, compile_summary, spin_rate, results)
    if skipped:
        print("deadline of %.0f s passed: not run: %s" % (a.deadline, " ".join(skipped)), flush=True)
    compile_summary["timed_process"] = inductor_cache_counters()
    print("Inductor FX graph cache in the timed process: %(fxgraph_cache_hit)d hits, %(fxgraph_cache_miss)d misses"
          % compile_summary["timed_process"], flush=True)
    write_results(a, t_start, compile_summary, spin_rate, results, skipped)
    print_summary(results)
    print("whole suite: %.0f s" % (time.monotonic() - t_start))


if __name__ == "__main__":
    main()
