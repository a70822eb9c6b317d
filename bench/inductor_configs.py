"""What torch.compile (Inductor, default mode) picks for fusekit's row ops, and
how much that moves between compilations.

For each op, dtype and [rows, cols] shape given, in COMPILES separate fresh
processes (each with an empty Inductor cache, as bench/peers.py's precompile
has on a fresh machine): compile the op exactly as bench/peers.py defines it,
time it with CUDA events (median of 100 after warm-up; each call is
synchronized, so the time includes the compiled wrapper's host path and is
no kernel time: bench/peers.py measures those), and record each
generated Triton kernel's autotuned launch config (block sizes, warps,
stages) and the heuristic that made it. One JSON object per compilation on
stdout.

    python3 bench/inductor_configs.py --ops layernorm,rmsnorm --dtypes bf16,f32 \
        --shapes 4096x16384 --compiles 3 > inductor_configs.jsonl
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def one(op, dtype_name, shape):
    import torch
    sys.path.insert(0, HERE)
    import peers

    peers.set_torch_state()
    dtype = {"f32": torch.float32, "bf16": torch.bfloat16}[dtype_name]
    layout, names, _, fn = peers.OPS[op]
    gen = torch.Generator(device="cuda").manual_seed(1)
    inputs = peers.make_inputs(layout, names, shape, dtype, gen)
    compiled = torch.compile(fn)
    for _ in range(3):
        compiled(*inputs)
    torch.cuda.synchronize()
    times = []
    for _ in range(100):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        compiled(*inputs)
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1000.0)
    kernels = []
    from torch._inductor.codecache import PyCodeCache
    for module in list(PyCodeCache.modules) if isinstance(PyCodeCache.modules, list) else \
            list(PyCodeCache.modules.values()):
        for name, value in vars(module).items():
            launchers = getattr(value, "launchers", None)
            if not launchers:
                continue
            cfg = launchers[0].config
            kernels.append({
                "kernel": name,
                "heuristic": type(value).__name__ + ":" + str(getattr(value, "heuristic_type", "")),
                "candidates": len(getattr(value, "configs", []) or []),
                "config": {k: int(v) for k, v in cfg.kwargs.items()},
                "num_warps": cfg.num_warps,
                "num_stages": cfg.num_stages,
            })
    return {"op": op, "dtype": dtype_name, "shape": "%dx%d" % tuple(shape), "median_us": statistics.median(times),
            "p20_us": sorted(times)[20], "p80_us": sorted(times)[80], "kernels": kernels,
            "torch": torch.__version__, "gpu": torch.cuda.get_device_name()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ops", default="layernorm")
    ap.add_argument("--dtypes", default="bf16")
    ap.add_argument("--shapes", default="4096x16384")
    ap.add_argument("--compiles", type=int, default=3)
    ap.add_argument("--one", help=argparse.SUPPRESS)  # op:dtype:shape, in a child process
    args = ap.parse_args()
    if args.one:
        op, dt, shape = args.one.split(":")
        print(json.dumps(one(op, dt, [int(s) for s in shape.split("x")])), flush=True)
        return
    for op in args.ops.split(","):
        for dt in args.dtypes.split(","):
            for shape in args.shapes.split(","):
                for k in range(args.compiles):
                    with tempfile.TemporaryDirectory() as cache:
                        env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=cache,
                                   TRITON_CACHE_DIR=os.path.join(cache, "triton"))
                        r = subprocess.run([sys.executable, __file__, "--one", "%s:%s:%s" % (op, dt, shape)],
                                           env=env, capture_output=True, text=True)
                        if r.returncode != 0:
                            print(json.dumps({"op": op, "dtype": dt, "shape": shape, "compile": k,
                                              "error": r.stderr[-2000:]}), flush=True)
                            continue
                        rec = json.loads(r.stdout.strip().splitlines()[-1])
                        rec["compile"] = k
                        print(json.dumps(rec), flush=True)


if __name__ == "__main__":
    main()
