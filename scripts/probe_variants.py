#!/usr/bin/env python3
"""Prints the kernels that bench/variant_probe.py and bench/gap_probe.py time:
one line per kernel in LIST ("op dtype SHAPE schedule", `#` comments), each
printed by `fusekit source` into DIR, with DIR/variants.json describing their
launches. A row kernel (SHAPE ROWSxCOLS) is compiled for rows of COLS
(len=COLS appended); a pointwise one (a schedule with `ept`) as it is.

  scripts/probe_variants.py LIST DIR [--fusekit build/cli/fusekit]

e.g. scripts/probe_variants.py bench/probe-59e1ecc.txt probe (the probe of
run 59e1ecc). Schedules with a shared-memory stage (smem=1) or a cluster split
(split>1) are refused: the probe launches plain grids.
"""
import argparse
import json
import os
import re
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("list")
    ap.add_argument("dir")
    ap.add_argument("--fusekit", default="build/cli/fusekit")
    a = ap.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    variants = []
    for n, line in enumerate(open(a.list), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        op, dtype, shape, *schedule = line.split()
        try:
            cfg = dict(t.split("=") for t in schedule)
            pointwise = "ept" in cfg
            cols = None if pointwise else int(shape.split("x")[1])
        except (IndexError, ValueError):
            sys.exit(f"{a.list}:{n}: expected 'op dtype SHAPE key=value...' (SHAPE ROWSxCOLS for a row kernel), "
                     f"got '{line}'")
        if cfg.get("smem", "0") != "0" or cfg.get("split", "1") != "1":
            sys.exit(f"{a.list}:{n}: smem=1 and split>1 need launches the probe does not make; leave them out")
        params = " ".join(schedule + ([] if pointwise else [f"len={cols}"]))
        src = subprocess.run([a.fusekit, "source", "--pattern", op, "--arch", "sm_90", "--dtype", dtype,
                              "--params", params], capture_output=True, text=True)
        if src.returncode:
            sys.exit(f"{a.list}:{n}: fusekit source failed: {src.stderr.strip()}")
        entry = re.search(r"__global__ void __launch_bounds__\((?:[^()]|\([^()]*\))*\) (\w+)\(", src.stdout).group(1)
        name = "%s_%s_%s.cu" % (op, dtype, "_".join(t.replace("=", "") for t in schedule))
        with open(os.path.join(a.dir, name), "w") as f:
            f.write(src.stdout)
        v = {"file": name, "entry": entry, "op": op, "dtype": dtype, "shape": shape,
             "threads": int(cfg["threads"]), "rows": int(cfg.get("rows", 1)), "fast": int(cfg.get("fast", 0))}
        if pointwise:
            v.update(pointwise=True, tile=int(cfg["threads"]) * int(cfg["vec"]) * int(cfg["ept"]),
                     grid=int(cfg.get("grid", 0)), plane=int(cfg.get("plane", 0)))
        variants.append(v)
    with open(os.path.join(a.dir, "variants.json"), "w") as f:
        json.dump(variants, f, indent=1)
    print(f"{len(variants)} kernels in {a.dir}")


if __name__ == "__main__":
    main()
