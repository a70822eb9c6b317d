#!/usr/bin/env python3
"""Asks where a gap between a fusekit kernel and Inductor's comes from, in one
process: the kernel, or what surrounds it (the output buffer, the launch).

  python3 bench/gap_probe.py --op rmsnorm --dtype f32 --shape 4096x16384 \
      --dir DIR --artifacts ART --out gap.json

DIR is a folder of scripts/probe_variants.py (variants.json and the .cu files
`fusekit source` printed); --hand adds hand-written kernels of the same
launch signature (bench/probes/). The script compiles the op with
torch.compile (default mode) into a fresh Inductor cache, finds the Triton
kernel(s) it built there, copies their PTX, metadata and source to ART, and
launches the compiled cubin itself (CuPy) on the same tensors as the fusekit
kernels. In ROUNDS interleaved rounds of REPS
calls each (peers.py's protocol: an event pair around each call, median), it
times: Inductor as torch.compile calls it; a device copy of the same bytes;
every kernel into a preallocated output, into an output allocated afresh
per call (as Inductor's own call allocates), into outputs at byte offsets in
later pools, and with its inputs and outputs laid out as the tuner lays
them out (one allocation). Every launch is checked against eager PyTorch
first.
"""
import os
import tempfile

os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", tempfile.mkdtemp(prefix="fusekit-gap-inductor-"))
os.environ.setdefault("TRITON_CACHE_DIR", os.path.join(os.environ["TORCHINDUCTOR_CACHE_DIR"], "triton-own"))

import argparse  # noqa: E402
import dataclasses  # noqa: E402
import glob  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import re  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402

import cupy  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peers  # noqa: E402


def triton_kernels(cache):
    """(name, cubin, metadata json, ptx) of every Triton kernel compiled under cache."""
    found = []
    for meta_path in glob.glob(os.path.join(cache, "**", "triton_*.json"), recursive=True):
        stem = meta_path[:-len(".json")]
        if not os.path.exists(stem + ".cubin") or not os.path.exists(stem + ".ptx"):
            continue
        try:
            meta = json.load(open(meta_path))
        except ValueError:
            continue
        found.append((meta.get("name", os.path.basename(stem)), stem + ".cubin", meta, stem + ".ptx"))
    return found


def entry_params(ptx, name):
    """The .param types of the entry `name`, in order (e.g. ['u64', 'u32'])."""
    m = re.search(r"\.entry\s+" + re.escape(name) + r"\s*\((.*?)\)", ptx, re.S)
    return re.findall(r"\.param\s+\.(\w+)", m.group(1)) if m else []


def kernel_source(cache, name):
    """Inductor's Python source holding `def name(`: its argument names."""
    for path in glob.glob(os.path.join(cache, "**", "*.py"), recursive=True):
        try:
            text = open(path).read()
        except (OSError, UnicodeDecodeError):
            continue
        m = re.search(r"def " + re.escape(name) + r"\((.*?)\)", text, re.S)
        if m:
            return path, text, [a.split(":")[0].strip() for a in m.group(1).split(",") if a.strip()]
    return None, "", []


def div_magic(d):
    """runtime/launch_expr.cpp's div_magic: (magic, shift) with
    (a * magic) >> shift == a // d for a < 2^31."""
    if d < 1 or d > 0x7fffffff:
        return 0, 0
    l = (d - 1).bit_length()
    s = 31 + l
    return ((1 << s) + d - 1) // d, s


def pointwise_launch(v, shape, names, sm_count):
    """Blocks and the shape arguments (n, then per axis but the outermost
    its extent and divmagic pair when an input broadcasts) of a pointwise
    kernel printed by fusekit (generator/nvrtc/pointwise_printer.cpp)."""
    n = math.prod(shape)
    inner = shape[::-1]  # innermost first, as the kernel's d0, d1, ...
    sizes = [n]
    if any("[" in name for name in names):
        for d in inner[:-1]:
            sizes += [d, *div_magic(d)]
    tile = v["tile"]
    blocks = n // inner[0] * -(-inner[0] // tile) if v["plane"] else -(-n // tile)
    blocks = max(1, blocks)
    if v["grid"]:
        blocks = min(blocks, v["grid"] * sm_count)
    return blocks, sizes


def triton_block(ptx):
    """XBLOCK of a Triton pointwise kernel: the shift applied to %ctaid.x
    (pid * XBLOCK); None if the PTX does not show it."""
    m = re.search(r"mov\.u32\s+(%r\d+),\s*%ctaid\.x;", ptx)
    if not m:
        return None
    shl = re.search(r"shl\.b32\s+%r\d+,\s*" + re.escape(m.group(1)) + r",\s*(\d+);", ptx)
    return 1 << int(shl.group(1)) if shl else None


PER_PAIR = 20  # launches between one event pair in the batched timing


@dataclasses.dataclass
class Probe:
    """What the phases share: the arguments, the tensors and eager's results, the report, what is timed."""
    a: argparse.Namespace
    shape: list
    layout: str
    names: list
    params: list
    eager: object
    dt: torch.dtype
    ins: list
    refs: list
    outs: list
    atol: float
    rtol: float
    nbytes: int
    stream: object
    sm_count: int
    report: dict
    peers_calls: dict = dataclasses.field(default_factory=dict)  # label -> call(), Inductor's and the copy
    placements: dict = dataclasses.field(default_factory=dict)  # name -> () -> (inputs, outputs)
    kernels: dict = dataclasses.field(default_factory=dict)  # label -> call((inputs, outputs)), each verified first
    calls: dict = dataclasses.field(default_factory=dict)  # label -> call(), every one timed


def parse_args():
    """The command line: the op, the variants and probes to launch, where the results go, how long to time."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--op", default="rmsnorm")
    ap.add_argument("--dtype", default="f32")
    ap.add_argument("--shape", default="4096x16384")
    ap.add_argument("--dir", required=True)
    ap.add_argument("--hand", nargs="*", default=[],
                    help="hand-written .cu probes: entry = the file's stem, threads = its __launch_bounds__")
    ap.add_argument("--artifacts", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=200)
    return ap.parse_args()


def setup(a):
    """The op's inputs, eager's reference outputs, the preallocated outputs and the report's header."""
    peers.set_torch_state()
    os.makedirs(a.artifacts, exist_ok=True)
    shape = [int(s) for s in a.shape.split("x")]
    layout, names, params, eager = peers.OPS[a.op]
    dt = peers.DTYPES[a.dtype]
    gen = torch.Generator(device="cuda")
    gen.manual_seed(1)
    ins = peers.make_inputs(layout, names, shape, dt, gen)
    refs = [r.to(dt) for r in peers.as_tuple(eager(*[t.float() for t in ins]))]
    outs = [torch.empty(list(r.shape), dtype=dt, device="cuda") for r in refs]
    atol, rtol = peers.tolerance(a.dtype, layout, shape)
    nbytes = (sum(t.numel() for t in ins) + sum(o.numel() for o in outs)) * outs[0].element_size()
    stream = cupy.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream)
    sm_count = torch.cuda.get_device_properties(0).multi_processor_count
    report = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "op": a.op, "dtype": a.dtype,
              "shape": a.shape, "bytes": nbytes, "notes": [], "timings": {}}
    return Probe(a, shape, layout, names, params, eager, dt, ins, refs, outs, atol, rtol, nbytes, stream, sm_count,
                 report)


def save(p):
    """Writes the report as it stands, so a run cut short keeps what it measured."""
    with open(p.a.out, "w") as f:
        json.dump(p.report, f, indent=1)


def agrees(p, got):
    """Whether every output in `got` is within peers.py's tolerance of eager's."""
    return all(bool(((g.float() - w.float()).abs() <= p.atol + p.rtol * w.float().abs()).all())
               for g, w in zip(got, p.refs))


def add_peers(p):
    """Inductor as torch.compile calls it (checked first) and a device copy of the same bytes; returns the copy's."""
    ins = p.ins
    compiled = torch.compile(p.eager, dynamic=False)
    p.report["inductor_verified"] = agrees(p, peers.as_tuple(compiled(*ins)))
    src = torch.empty(p.nbytes // 2, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    p.peers_calls = {"inductor (torch.compile)": lambda: compiled(*ins), "copy": lambda: dst.copy_(src)}
    return src, dst


def add_placements(p):
    """Fills p.placements; returns the pools allocated for them and the allocator of fresh outputs."""
    ins, outs, refs, dt = p.ins, p.outs, p.refs, p.dt
    # Where a kernel reads and writes, (inputs, outputs): peers.py's tensors,
    # an output allocated afresh per call (as torch.compile's own call does),
    # outputs at byte offsets in pools allocated after everything else, and
    # the tuner's layout (search/gpu_measurer.cpp: one allocation, inputs then
    # outputs, each at a multiple of 256 bytes).
    placements = p.placements
    placements["outs"] = lambda: (ins, outs)

    def fresh_outs():
        return [torch.empty(list(r.shape), dtype=dt, device="cuda") for r in refs]
    placements["fresh per call"] = lambda: (ins, fresh_outs())
    pools = []
    for off in (0, (32 << 20) + 4096):
        pools.append(torch.empty(outs[0].numel() * outs[0].element_size() + off, dtype=torch.uint8, device="cuda"))
        o = [pools[-1][off:].view(dt).view(list(refs[0].shape))]
        placements["pool +%d B" % off] = lambda o=o: (ins, o)
    offsets, end = [], 0
    for t in ins + outs:
        offsets.append(end)
        end = (end + t.numel() * t.element_size() + 255) // 256 * 256
    pools.append(torch.empty(end, dtype=torch.uint8, device="cuda"))
    laid = [pools[-1][o:o + t.numel() * t.element_size()].view(dt).view(list(t.shape))
            for o, t in zip(offsets, ins + outs)]
    for t, src_t in zip(laid, ins):
        t.copy_(src_t)
    tuner_io = (laid[:len(ins)], laid[len(ins):])
    placements["tuner layout"] = lambda: tuner_io
    # Two sets of tensors taken in turn: no call follows one on its own
    # inputs, so what a kernel's evict_last loads leave in L2 cannot serve
    # its next call (peers.py rotates at least two sets).
    second = ([t.clone() for t in ins], [torch.empty_like(o) for o in outs])
    turn = [0]

    def alternating():
        turn[0] ^= 1
        return (ins, outs) if turn[0] else second
    placements["2 sets in turn"] = alternating
    return pools, fresh_outs


def launcher(stream, fn, grid, block, shared, args_for):
    """A call((inputs, outputs)) launching fn on `stream` with the arguments args_for gives."""
    def call(io):
        with stream:
            fn(grid, block, args_for(io), shared_mem=shared)
    return call


def admit(p, label, call, regs):
    """Launches `call` into peers.py's outputs, notes whether it agrees with eager, and keeps it if it does."""
    for o in p.outs:
        o.zero_()
    call((p.ins, p.outs))
    torch.cuda.synchronize()
    ok = agrees(p, p.outs)
    p.report["notes"].append("%s: regs %d, verified %s" % (label, regs, ok))
    if ok:
        p.kernels[label] = call
    save(p)


def load_variants(a):
    """fusekit's printed kernels (--dir's variants.json) and the hand-written probes, as variants.json gives them."""
    variants = [dict(v, file=os.path.join(a.dir, v["file"]))
                for v in json.load(open(os.path.join(a.dir, "variants.json")))]
    for path in a.hand:
        text = open(path).read()
        for inc in re.findall(r'#include "([^"]+)"', text):  # the launch bounds may sit in a header
            text += open(os.path.join(os.path.dirname(path), inc)).read()
        bounds = re.search(r"__launch_bounds__\((\d+)", text)
        if not bounds:
            sys.exit("%s: no __launch_bounds__(THREADS) to take the block size from" % path)
        threads = int(bounds.group(1))
        variants.append({"kind": "hand", "file": path, "entry": os.path.splitext(os.path.basename(path))[0],
                         "threads": threads, "rows": 1, "fast": 1})
    return variants


def admit_variants(p, variants):
    """Compiles each variant (a compile error is a note) and admits it with its launch shape."""
    shape, names, params, sm_count = p.shape, p.names, p.params, p.sm_count

    def ptrs(io):
        """A kernel's pointer and scalar arguments: inputs, outputs, params."""
        return tuple(cupy.uint64(t.data_ptr()) for t in io[0] + io[1]) + tuple(cupy.float32(x) for x in params)

    for v in variants:
        label = "%s %s" % (v.get("kind", "fusekit"), os.path.basename(v["file"]))
        options = ("--std=c++17", "-I" + os.path.dirname(os.path.abspath(v["file"]))) + (
            ("--use_fast_math", "-DFK_FAST") if v["fast"] else ())
        try:
            fn = cupy.RawModule(code=open(v["file"]).read(), options=options).get_function(v["entry"])
        except Exception as e:  # a variant that does not compile is a result too
            p.report["notes"].append("%s: compile error %s" % (label, str(e)[:300]))
            continue
        if v.get("pointwise"):
            grid, sizes = pointwise_launch(v, shape, names, sm_count)
            admit(p, label, launcher(p.stream, fn, (grid, 1, 1), (v["threads"], 1, 1), 0,
                                     lambda io, sizes=sizes: ptrs(io) + tuple(cupy.int64(x) for x in sizes)),
                  fn.num_regs)
            continue
        grid = ((shape[0] + v["rows"] - 1) // v["rows"], 1, 1)
        admit(p, label, launcher(p.stream, fn, grid, (v["threads"], v["rows"], 1), 0,
                                 lambda io: ptrs(io) + (cupy.int64(shape[0]), cupy.int32(shape[1]))),
              fn.num_regs)


def batched_times(fn, reps, before=None):
    """Per-launch time (µs) of `PER_PAIR` launches back to back between one
    event pair: the host queues them far ahead of the GPU, as the tuner's
    C++ loop does, where kernel_times queues one call at a time. With
    `before`, each pair follows 3 untimed calls of it (another kernel on
    the same tensors: what L2 state it leaves behind)."""
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    pairs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
             for _ in range(max(1, reps // PER_PAIR))]
    for start, end in pairs:
        for _ in range(3 if before else 0):
            before()
        start.record()
        for _ in range(PER_PAIR):
            fn()
        end.record()
    torch.cuda.synchronize()
    return [s.elapsed_time(e) * 1000.0 / PER_PAIR for s, e in pairs]


def calls_to_time(p, done):
    """What time_all times, by label: one call per event pair, PER_PAIR per pair, and PER_PAIR after 3 of another."""
    ins, outs, kernels, placements = p.ins, p.outs, p.kernels, p.placements
    todo = dict(p.peers_calls) if not done else {}
    for label, call in kernels.items():
        for where, outs_of in placements.items():
            key = "%s -> %s" % (label, where)
            if key not in done:
                todo[key] = lambda c=call, w=outs_of: c(w())
    # Each kernel into peers.py's outputs.
    on_outs = {label: (lambda c=call: c((ins, outs))) for label, call in kernels.items()}
    batched = {"%s -> %s, %d per event pair" % (label, where, PER_PAIR): (lambda c=call, w=placements[where]: c(w()))
               for where in ("outs", "2 sets in turn") for label, call in kernels.items()}
    batched = {k: f for k, f in batched.items() if k not in done}
    # Each fusekit kernel after 3 calls of each other one, and of the
    # copy, on the same tensors (the tuner times every candidate of a
    # problem on one buffer set).
    after = {}
    if not done:
        befores = dict(on_outs, copy=p.peers_calls["copy"])
        for label, fn in on_outs.items():
            for other, before in befores.items():
                if other != label:
                    after["%s -> outs, %d per event pair, after 3x %s" % (label, PER_PAIR, other)] = (fn, before)
    return todo, batched, after


def time_all(p, done):
    """Times, in ROUNDS interleaved rounds, every call not in `done`: each
    kernel into every placement one call per event pair, and into peers.py's
    outputs also `PER_PAIR` launches per pair."""
    a, timings = p.a, p.report["timings"]
    todo, batched, after = calls_to_time(p, done)
    for r in range(a.rounds):
        for label, fn in todo.items():
            timings.setdefault(label, []).append(statistics.median(peers.kernel_times([fn], a.reps)))
        for label, fn in batched.items():
            timings.setdefault(label, []).append(statistics.median(batched_times(fn, a.reps)))
        for label, (fn, before) in after.items():
            timings.setdefault(label, []).append(statistics.median(batched_times(fn, a.reps, before)))
        save(p)
    todo.update(batched)
    todo.update({k: f for k, (f, _) in after.items()})
    done.update(todo)
    p.calls.update(todo)


def save_artifacts(folder, name, cubin, meta, ptx_path, types, src_path, argnames):
    """Copies a Triton kernel's cubin, PTX and source to `folder` beside its metadata, one stem per config."""
    stem = os.path.join(folder, "%s-%dw" % (name, meta.get("num_warps", 0)))  # one per config
    shutil.copy(cubin, stem + ".cubin")
    shutil.copy(ptx_path, stem + ".ptx")
    with open(stem + ".meta.json", "w") as f:
        json.dump({"meta": meta, "params": types, "argnames": argnames, "source": src_path}, f, indent=1)
    if src_path:
        shutil.copy(src_path, stem + ".source.py")


def argument_order(src_text, argnames, names, pointwise, rows):
    """A Triton kernel's pointers as ("in", i), ("out", 0) or ("scratch", i), or None if not understood; its scratch."""
    # Pointer arguments by name. Row kernels: an in_ptr loaded at an
    # index with the row (x0) is a whole input, otherwise a [col] vector;
    # the out_ptr stored at an index along the row (r0) the output, any
    # other pointer a per-row intermediate (scratch). Pointwise kernels:
    # an in_ptr loaded at the variable that is xindex itself is a whole
    # input, otherwise a broadcast one; the out_ptr stored there the output.
    flat_var = re.search(r"\b(x\d+) = xindex\n", src_text)
    flat_var = flat_var.group(1) if flat_var else "xindex"
    ptr_names = [n for n in argnames if "ptr" in n]
    whole = [i for i, n in enumerate(names) if "[" not in n]
    vector = [i for i, n in enumerate(names) if "[" in n]
    order, scratch = [], []
    for n in ptr_names:
        index = re.search(re.escape(n) + r" \+ \(([^)]*)\)", src_text)
        index = index.group(1) if index else ""
        if n.startswith("out_ptr") and ("out", 0) not in order and (
                index == flat_var if pointwise else "r0" in index):
            order.append(("out", 0))
        elif n.startswith("in_ptr"):
            pool = whole if (index == flat_var if pointwise else "x0" in index) else vector
            if not pool:
                order = None
                break
            order.append(("in", pool.pop(0)))
        else:
            order.append(("scratch", len(scratch)))
            scratch.append(torch.empty(rows * 64, dtype=torch.float32, device="cuda"))
    if order is None or ("out", 0) not in order or whole or vector or ptr_names != argnames[:len(ptr_names)]:
        return None, scratch
    return order, scratch


def admit_triton(p, name, cubin, meta, ptx, types, src_text, argnames):
    """Launches one of Inductor's cubins on the probe's tensors, if its arguments are understood (else a note)."""
    shape, pointwise = p.shape, p.layout != "rows"
    order, scratch = argument_order(src_text, argnames, p.names, pointwise, shape[0])
    numels = [n for n in argnames if n.endswith("numel")]
    n_ptr_params = sum(1 for t in types if t in ("u64", "b64"))
    if order is None or n_ptr_params < len(order):
        p.report["notes"].append("%s: argument order not understood (%s / %s); not launched" % (
            name, argnames, types))
        return
    n_all = math.prod(shape)
    values = {"xnumel": n_all} if pointwise else {"xnumel": shape[0], "r0_numel": shape[1], "rnumel": shape[1]}
    xblock = triton_block(ptx) if pointwise else 1
    if xblock is None:
        p.report["notes"].append("%s: no XBLOCK in the PTX; not launched" % name)
        return
    n_int = sum(1 for t in types if t in ("u32", "b32", "s32"))
    if any(n not in values for n in numels) or n_int not in (0, len(numels)):
        p.report["notes"].append("%s: size arguments %s, %d in the PTX; not launched" % (name, numels, n_int))
        return
    ints = [values[n] for n in numels] if n_int else []
    fn = cupy.RawModule(path=cubin).get_function(name)

    def args_for(io, order=order, ints=ints, n_ptr_params=n_ptr_params, scratch=scratch):
        pick = {"out": lambda k: io[1][k], "in": lambda k: io[0][k], "scratch": lambda k: scratch[k]}
        ptrs = [cupy.uint64(pick[kind](k).data_ptr()) for kind, k in order]
        # Triton's scratch pointers (global, profile) come last, unused here (size 0).
        return tuple(ptrs) + tuple(cupy.int32(i) for i in ints) + tuple(
            cupy.uint64(0) for _ in range(n_ptr_params - len(ptrs)))
    block = (meta.get("num_warps", 4) * 32, 1, 1)
    grid = (-(-n_all // xblock) if pointwise else shape[0], 1, 1)
    admit(p, "inductor cubin %s (%d warps%s)" % (name, block[0] // 32,
                                                 ", XBLOCK %d" % xblock if pointwise else ""),
          launcher(p.stream, fn, grid, block, meta.get("shared", 0), args_for), fn.num_regs)


def admit_inductor(p):
    """Saves every Triton kernel Inductor compiled to --artifacts and admits each it can launch."""
    cache = os.environ["TORCHINDUCTOR_CACHE_DIR"]
    for name, cubin, meta, ptx_path in triton_kernels(cache):
        ptx = open(ptx_path).read()
        types = entry_params(ptx, name)
        src_path, src_text, argnames = kernel_source(cache, name)
        save_artifacts(p.a.artifacts, name, cubin, meta, ptx_path, types, src_path, argnames)
        admit_triton(p, name, cubin, meta, ptx, types, src_text, argnames)


def print_timings(p):
    """Prints every call's median over the rounds against Inductor's, then the notes."""
    width = max(len(k) for k in p.calls)
    base = statistics.median(p.report["timings"]["inductor (torch.compile)"])
    for label, meds in p.report["timings"].items():
        m = statistics.median(meds)
        print("%-*s %8.2f us  (rounds %s)  %.3fx inductor" % (
            width, label, m, " ".join("%.2f" % t for t in meds), base / m), flush=True)
    for n in p.report["notes"]:
        print(n, flush=True)


def main():
    a = parse_args()
    p = setup(a)
    copy_src, copy_dst = add_peers(p)
    pools, fresh_outs = add_placements(p)
    p.report["addresses"] = {"x": p.ins[0].data_ptr(), "refs": p.refs[0].data_ptr(), "outs": p.outs[0].data_ptr(),
                             "fresh": fresh_outs()[0].data_ptr(), "pools": [t.data_ptr() for t in pools],
                             "copy src": copy_src.data_ptr(), "copy dst": copy_dst.data_ptr()}
    # fusekit's printed kernels and the hand-written probes.
    admit_variants(p, load_variants(a))
    # fusekit's kernels first: a hand launch of Inductor's cubin with its
    # arguments misread would end the process, and these stay.
    timed = set()
    time_all(p, timed)
    # Inductor's own cubin, launched here on the same tensors.
    admit_inductor(p)
    time_all(p, timed)
    print_timings(p)


if __name__ == "__main__":
    main()
