"""End-to-end PyTorch models: eager, TorchScript, torch.compile and fusekit.

    python bench/models.py capture --work DIR     # graph + plan per case (DIR/<case>/)
    (fusekit tune --plan / build --plan per case: scripts/gpu/steps/torch.sh)
    python bench/models.py bench --work DIR --out models.json
    python bench/models.py forward --work DIR     # one forward against eager (under memcheck)
    python bench/models.py regions --work DIR --out regions.json   # each region's kernel against torch.compile
    python bench/models.py table models.json      # the markdown table
    python bench/models_plot.py A.json B.json --out models.png   # the plot (matplotlib, no torch)

Per case (model, size, dtype) and method: forward latency (median of CUDA
event pairs), kernels per forward (profiler), setup time, largest error
against eager relative to eager's largest magnitude; per case the share of
eager GPU time outside GEMM/conv/attention kernels and what fusekit leaves
of it; once, the host time of one fusekit op call against one torch.add.
"""

import argparse
import json
import os
import re
import statistics
import sys
import time
import traceback

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "..", "python")]
import torch_models  # noqa: E402

# Kernels fusion cannot address: GEMMs, convolutions, attention.
ANCHOR = re.compile(r"gemm|nvjet|cutlass|xmma|cublas|sm\d+_.*(?:h|s|bf)\d*gemm|conv|implicit|winograd|fmha|flash|attention"
                    r"|cudnn|nchwToNhwc|nhwcToNchw|splitKreduce|dgrad|wgrad", re.I)
# The bars compare large batches with torch.compile default, batch 1 and the decode step with reduce-overhead.
METHODS = ["eager", "torchscript", "compile", "compile_ro", "fusekit", "fusekit_graph"]
DEFAULT_DTYPE = {"bert": "float16", "gpt2": "float16", "resnet50": "float16", "llama": "bfloat16"}


def cases(models, dtypes, sizes=None):
    for name in models:
        for size in torch_models.SIZES[name]:
            if sizes and size not in sizes:
                continue
            for dt in (dtypes or [DEFAULT_DTYPE[name]]):
                yield name, size, getattr(torch, dt)


def label(name, size, dtype):
    return f"{name}-{size}-{str(dtype).replace('torch.', '')}"


# ----------------------------------------------------------------- capture

def cmd_capture(args):
    from fusekit.torch import capture
    os.makedirs(args.work, exist_ok=True)
    for name, size, dtype in cases(args.models, args.dtypes, args.sizes):
        d = os.path.join(args.work, label(name, size, dtype))
        os.makedirs(d, exist_ok=True)
        c = torch_models.case(name, size, dtype, args.device, tiny=args.tiny)
        t = time.perf_counter()
        capture(c.module, c.inputs, os.path.join(d, "graph.fkgraph.json"), name=name.replace("50", ""),
                plan_path=os.path.join(d, "plan.json"), run_plan=not args.no_plan)
        with open(os.path.join(d, "case.json"), "w") as f:
            json.dump({"model": name, "size": size, "dtype": str(dtype), "capture_s": time.perf_counter() - t}, f)
        print(f"captured {c.label} in {time.perf_counter() - t:.1f} s", flush=True)


# ------------------------------------------------------------------ timing

def median_ms(fn, iters, warmup=5):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


def kernels(fn):
    """(kernel launches, total GPU us, GPU us outside anchors, the kernels
    taking most time as [name, launches, us]) of one call."""
    from torch.profiler import ProfilerActivity, profile
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    count, total, fusable, by_name = 0, 0.0, 0.0, {}
    for e in prof.events():
        if e.device_type != torch.autograd.DeviceType.CUDA or "memcpy" in e.name.lower() or "memset" in e.name.lower():
            continue
        us = e.time_range.elapsed_us()  # a device event's own span
        count += 1
        total += us
        if not ANCHOR.search(e.name):
            fusable += us
        n, t = by_name.get(e.name[:80], (0, 0.0))
        by_name[e.name[:80]] = (n + 1, t + us)
    top = sorted(([k, n, round(t, 1)] for k, (n, t) in by_name.items()), key=lambda x: -x[2])[:10]
    return count, total, fusable, top


def rel_error(out, ref):
    out = out[0] if isinstance(out, (tuple, list)) else out
    ref = ref[0] if isinstance(ref, (tuple, list)) else ref
    return ((out.float() - ref.float()).abs().max() / ref.float().abs().max().clamp_min(1e-30)).item()


def cuda_graph(fn):
    """fn captured once into a CUDA graph; returns its replay."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = fn()
    return lambda: (graph.replay(), out)[1]


def fusekit_module(module, inputs, work_dir):
    """(the module exported and rewritten onto the case's package, export s, rewrite s)."""
    from fusekit.plan_file import load_plan
    from fusekit.torch import export
    from fusekit.torch.optimize import rewrite_module
    t = time.perf_counter()
    gm, symbols = export(module, inputs)
    exported = time.perf_counter()
    gm = rewrite_module(gm, os.path.join(work_dir, "pkg"), load_plan(os.path.join(work_dir, "plan.json")),
                        symbols=symbols)
    return gm, exported - t, time.perf_counter() - exported


# --------------------------------------------------------------- methods

def build_methods(c, work_dir, selected):
    """(name, setup seconds or None, callable) per method, built lazily."""
    m, inputs = c.module, c.inputs

    def eager():
        return 0.0, lambda: m(*inputs)

    def torchscript():
        t = time.perf_counter()
        ts = torch.jit.trace(m, inputs, strict=False, check_trace=False)
        ts = torch.jit.optimize_for_inference(torch.jit.freeze(ts.eval()))
        ts(*inputs)
        torch.cuda.synchronize()
        return time.perf_counter() - t, lambda: ts(*inputs)

    def compiled(mode):
        def make():
            torch._dynamo.reset()
            fn = torch.compile(m, mode=mode)
            t = time.perf_counter()
            fn(*inputs)
            torch.cuda.synchronize()
            return time.perf_counter() - t, lambda: fn(*inputs)
        return make

    state = {}

    def fusekit():
        gm, state["export_s"], state["rewrite_s"] = fusekit_module(m, inputs, work_dir)
        setup = state["export_s"] + state["rewrite_s"]
        gm(*inputs)
        torch.cuda.synchronize()
        state["gm"] = gm
        return setup, lambda: gm(*inputs)

    def fusekit_graph():
        if "gm" not in state:
            fusekit()
        gm = state["gm"]
        return None, cuda_graph(lambda: gm(*inputs))

    table = {"eager": eager, "torchscript": torchscript, "compile": compiled("default"),
             "compile_ro": compiled("reduce-overhead"), "fusekit": fusekit, "fusekit_graph": fusekit_graph}
    return [(k, table[k]) for k in selected], state


def host_overhead(gm, ref_gm, values):
    """Host time per call of one fusekit op against torch.add, on the
    kernel's own inputs (no sync inside the loop): the operator the rewritten
    graph calls for the region (fusekit_op_us, the bar), the same call as a
    node of an FX graph (graph_op_us), and the generic launch(op, [inputs])
    the rewrite emitted before the fixed-arity family (generic_op_us); and
    where the op's time goes: the same call on meta copies of the inputs
    (meta_op_us: Python binding, dispatcher, the checks and the outputs'
    allocation on meta, no CUDA) and the CUDA allocation of its outputs
    alone (alloc_us); the rest is the stream and guard lookups and the
    package's launch."""
    from fusekit.torch import ops, verify
    region = next((r for r in gm.fusekit_regions if r.replaced), None)
    if region is None:
        return None
    ins = verify._inputs(region, ref_gm, values, gm)
    a, b = torch.randn(1024, device="cuda"), torch.randn(1024, device="cuda")
    target = next(n.target for n in gm.graph.nodes if ops.is_launch(n.target) and n.args[0] == region.op_id)
    args = ops.call_args(target, region.op_id, ins)
    generic = torch.ops.fusekit.launch.default
    g = torch.fx.Graph()
    feeds = [g.placeholder(f"i{k}") for k in range(len(ins))]
    g.output(g.call_function(target, ops.call_args(target, region.op_id, feeds)))
    one = torch.fx.GraphModule(torch.nn.Module(), g)

    def per_call(fn, n=2000):
        for _ in range(50):
            fn()
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(n):
            fn()
        us = (time.perf_counter() - t) / n * 1e6
        torch.cuda.synchronize()
        return us
    meta_args = ops.call_args(target, region.op_id, [t.to("meta") for t in ins])
    full = max(ins, key=lambda t: t.numel())
    with torch.no_grad():
        add_us = per_call(lambda: torch.add(a, b))
        op_us = per_call(lambda: target(*args))
        meta_us = per_call(lambda: target(*meta_args))
        alloc_us = per_call(lambda: [torch.empty_strided(full.shape, full.stride(), dtype=full.dtype, device=full.device)
                                     for _ in region.outputs])
        graph_us = per_call(lambda: one(*ins))
        generic_us = per_call(lambda: generic(region.op_id, ins))
        add_again_us = per_call(lambda: torch.add(a, b))
    return {"torch_add_us": add_us, "fusekit_op_us": op_us, "ratio": op_us / add_us, "op": region.entry,
            "operator": str(target), "inputs": len(ins), "outputs": len(region.outputs), "graph_op_us": graph_us,
            "generic_op_us": generic_us, "meta_op_us": meta_us, "alloc_us": alloc_us,
            "torch_add_again_us": add_again_us, "bar": "<= 1.2x"}


def bench_case(name, size, dtype, args):
    lab = label(name, size, dtype)
    work_dir = os.path.join(args.work, lab)
    c = torch_models.case(name, size, dtype, "cuda")
    rows, info = [], {"case": lab, "model": name, "size": size, "dtype": str(dtype)}
    with torch.inference_mode():
        ref = c.module(*c.inputs)
    selected, state = build_methods(c, work_dir, args.methods or METHODS)
    eager_profile = None
    for method, make in selected:
        row = {"case": lab, "method": method}
        try:
            with torch.no_grad():
                setup, fn = make()
                row["setup_s"] = setup
                row["ms"] = median_ms(fn, args.iters)
                n, total, fusable, top = kernels(fn)
                row.update(kernels=n, gpu_us=total, fusable_us=fusable, top_kernels=top)
                row["max_rel_error"] = rel_error(fn(), ref)
            if method == "eager":
                eager_profile = (total, fusable)
        except Exception as e:  # a method that fails is a row with its error, not the end of the run
            row["error"] = f"{type(e).__name__}: {str(e)[:400]}"
            traceback.print_exc()
        rows.append(row)
        print(json.dumps(row), flush=True)
    gm = state.get("gm")
    if gm is not None:
        from fusekit.torch import verify
        regions = gm.fusekit_regions
        info["regions"] = len(regions)
        info["replaced"] = sum(r.replaced for r in regions)
        info["fallbacks"] = [r.line() for r in regions if not r.replaced][:20]
        info["export_s"], info["rewrite_s"] = state.get("export_s"), state.get("rewrite_s")
        try:
            state["reference"] = verify.eager_values(c.module, c.inputs)
            checks = verify.check_regions(c.module, c.inputs, gm, reference=state["reference"])
            info["regions_ok"] = sum(x["ok"] for x in checks)
            info["worst_region_error"] = max((x["max_rel_error"] for x in checks), default=0.0)
        except Exception as e:
            info["region_check_error"] = f"{type(e).__name__}: {e}"
    if eager_profile:
        info["eager_fusable_share"] = eager_profile[1] / max(eager_profile[0], 1e-9)
        fk = next((r for r in rows if r["method"] == "fusekit" and "fusable_us" in r), None)
        if fk:
            info["fusable_removed_share"] = 1 - fk["fusable_us"] / max(eager_profile[1], 1e-9)
    return rows, info, state


def cmd_bench(args):
    results = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": [], "cases": []}
    overhead_done = False
    for name, size, dtype in cases(args.models, args.dtypes, args.sizes):
        if not os.path.isdir(os.path.join(args.work, label(name, size, dtype), "pkg")):
            results["cases"].append({"case": label(name, size, dtype), "error": "no package built"})
            continue
        rows, info, state = bench_case(name, size, dtype, args)
        results["rows"] += rows
        if not overhead_done and "reference" in state:
            try:
                results["host_overhead"] = host_overhead(state["gm"], *state["reference"])
                overhead_done = results["host_overhead"] is not None
            except Exception as e:
                results["host_overhead_error"] = f"{type(e).__name__}: {e}"
        results["cases"].append(info)
        torch._dynamo.reset()
        torch.cuda.empty_cache()
        with open(args.out, "w") as f:
            json.dump(results, f, indent=1)
    print(table(results))


# ------------------------------------------------------------------- table

def table(results):
    by = {}
    for r in results["rows"]:
        by.setdefault(r["case"], {})[r["method"]] = r
    out = [f"Device: {results.get('device')}, torch {results.get('torch')}. Median forward ms (kernels per forward); "
           "setup s for fusekit (torch.export + package load and rewrite; the rewrite alone in models.json) and torch.compile (first call).", "",
           "| case | " + " | ".join(METHODS) + " | fusable share of eager GPU time | removed by fusekit | regions "
           "(kernel/all) | setup fusekit / compile | bar |",
           "|---" * (len(METHODS) + 6) + "|"]
    for info in results["cases"]:
        rows = by.get(info["case"], {})
        cells = []
        for m in METHODS:
            r = rows.get(m)
            cells.append("" if r is None else ("error" if "error" in r else f"{r['ms']:.3f} ({r['kernels']})"))
        comp = rows.get("compile") or rows.get("compile_ro") or {}
        fk, fkg = rows.get("fusekit", {}), rows.get("fusekit_graph", {})
        if info.get("size") == "large":
            bar = "ok" if "ms" in fk and "ms" in comp and fk["ms"] <= comp["ms"] else "missed"
        else:
            bar = "ok" if "ms" in fkg and "ms" in comp and fkg["ms"] <= comp["ms"] else "missed"
        setup = f"{fk.get('setup_s', float('nan')):.2f} / {comp.get('setup_s', float('nan')):.1f}"
        out.append(f"| {info['case']} | " + " | ".join(cells) +
                   f" | {info.get('eager_fusable_share', float('nan')):.1%} | "
                   f"{info.get('fusable_removed_share', float('nan')):.1%} | "
                   f"{info.get('replaced', 0)}/{info.get('regions', 0)} | {setup} | {bar} |")
    h = results.get("host_overhead")
    if h:
        out += ["", f"Host time per call: fusekit op `{h['op']}` {h['fusekit_op_us']:.2f} us, torch.add "
                    f"{h['torch_add_us']:.2f} us ({h['ratio']:.2f}x; bar 1.2x)."]
        if "operator" in h:
            out[-1] += (f" Through `{h['operator']}`; as a graph node {h['graph_op_us']:.2f} us; the generic "
                        f"launch(op, [inputs]) {h['generic_op_us']:.2f} us; torch.add again "
                        f"{h['torch_add_again_us']:.2f} us.")
    return "\n".join(out)


def cmd_forward(args):
    """One forward of each case's rewritten model against eager (what the
    torch step runs under compute-sanitizer); exit 1 on a wrong output."""
    bad = 0
    for name, size, dtype in cases(args.models, args.dtypes, args.sizes):
        work_dir = os.path.join(args.work, label(name, size, dtype))
        c = torch_models.case(name, size, dtype, "cuda")
        with torch.no_grad():
            ref = c.module(*c.inputs)
            gm = fusekit_module(c.module, c.inputs, work_dir)[0]
            err = rel_error(gm(*c.inputs), ref)
            torch.cuda.synchronize()
        replaced = sum(r.replaced for r in gm.fusekit_regions)
        ok = err <= args.tolerance
        bad += not ok
        print(f"{label(name, size, dtype)}: {replaced}/{len(gm.fusekit_regions)} regions replaced, "
              f"largest error {err:.2e} relative to eager's largest output ({'ok' if ok else 'WRONG'})", flush=True)
    sys.exit(1 if bad else 0)


def gpu_us_per_call(fn, calls=20):
    """GPU time of one call of fn (every kernel it launches), from the profiler over `calls` calls."""
    from torch.profiler import ProfilerActivity, profile
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    return sum(e.time_range.elapsed_us() for e in prof.events()
               if e.device_type == torch.autograd.DeviceType.CUDA) / calls


def region_rows(gm, reference, label_):
    """Per (entry, shape) of the replaced regions: the fusekit kernel's GPU
    time beside torch.compile's kernels for the same ops on the same values."""
    from fusekit.torch import ops, verify
    ref_gm, values = reference
    seen, rows = set(), []
    for r in gm.fusekit_regions:
        key = (r.entry, tuple(r.shape))
        if not r.replaced or key in seen:
            continue
        seen.add(key)
        ins = verify._inputs(r, ref_gm, values, gm)
        sub, feeds = verify.region_module(ref_gm, values, r)
        torch._dynamo.reset()
        compiled = torch.compile(sub)
        with torch.no_grad():
            fk_us = gpu_us_per_call(lambda: ops.launch(r.op_id, ins, len(r.outputs)))
            tc_us = gpu_us_per_call(lambda: compiled(*feeds))
        count = sum(1 for x in gm.fusekit_regions if (x.entry, tuple(x.shape)) == key)
        rows.append({"case": label_, "entry": r.entry, "shape": list(r.shape), "occurrences": count,
                     "ops": len(r.nodes), "fusekit_us": fk_us, "compile_us": tc_us, "speedup": tc_us / fk_us})
        print(json.dumps(rows[-1]), flush=True)
    return rows


def cmd_regions(args):
    """Every replaced region's kernel against torch.compile of its own ops."""
    from fusekit.torch import verify
    results = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "regions": []}
    for name, size, dtype in cases(args.models, args.dtypes, args.sizes):
        lab = label(name, size, dtype)
        work_dir = os.path.join(args.work, lab)
        if not os.path.isdir(os.path.join(work_dir, "pkg")):
            continue
        c = torch_models.case(name, size, dtype, "cuda")
        gm = fusekit_module(c.module, c.inputs, work_dir)[0]
        results["regions"] += region_rows(gm, verify.eager_values(c.module, c.inputs), lab)
        with open(args.out, "w") as f:
            json.dump(results, f, indent=1)
    print(regions_table(results))


def regions_table(results):
    out = ["| case | region | shape | occurrences | fusekit (us) | torch.compile (us) | vs torch.compile |",
           "|---|---|---|---|---|---|---|"]
    for r in results["regions"]:
        out.append(f"| {r['case']} | {r['entry']} | {'x'.join(map(str, r['shape']))} | {r['occurrences']} | "
                   f"{r['fusekit_us']:.1f} | {r['compile_us']:.1f} | {r['speedup']:.2f}x |")
    return "\n".join(out)


def cmd_table(args):
    with open(args.results) as f:
        print(table(json.load(f)))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    for name in ("capture", "bench", "forward", "regions"):
        s = sub.add_parser(name)
        s.add_argument("--work", required=True, help="one folder per case: graph, plan, pkg/")
        s.add_argument("--models", nargs="+", default=list(torch_models.MODELS), choices=torch_models.MODELS)
        s.add_argument("--dtypes", nargs="+", choices=["float16", "bfloat16"],
                       help="default: f16 for BERT, GPT-2 and ResNet-50, bf16 for Llama")
        s.add_argument("--sizes", nargs="+", choices=sorted({z for v in torch_models.SIZES.values() for z in v}),
                       help="only these sizes (default: every size of each model)")
    cap = sub.choices["capture"]
    cap.add_argument("--device", default="cuda")
    cap.add_argument("--tiny", action="store_true", help="small configs with the same ops (smoke test)")
    cap.add_argument("--no-plan", action="store_true", help="write the graphs only")
    b = sub.choices["bench"]
    b.add_argument("--out", required=True)
    b.add_argument("--iters", type=int, default=50)
    b.add_argument("--methods", nargs="+", choices=METHODS, help="default: all of them")
    sub.choices["forward"].add_argument("--tolerance", type=float, default=2e-2)
    sub.choices["regions"].add_argument("--out", required=True)
    t = sub.add_parser("table")
    t.add_argument("results")

    args = p.parse_args()
    {"capture": cmd_capture, "bench": cmd_bench, "forward": cmd_forward, "regions": cmd_regions,
     "table": cmd_table}[args.cmd](args)


if __name__ == "__main__":
    main()
