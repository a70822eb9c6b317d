"""The learned model's held-out picks timed again beside each group's fastest schedule.

    modeled_rematch.py split EVAL.json OUTDIR RECORDS.jsonl.gz...
    modeled_rematch.py summary EVAL.json GPU[,GPU...] OUT.json REMATCH.json...

`fusekit model eval` scores a pick by its recorded time over the group's
fastest recorded time, and the fastest of tens of noisy timings sits low by
luck at a few microseconds, so part of a recorded regret is the records'
noise. `split` writes, per GPU and backend, two `fusekit db export`-shaped
files of the op holdout's groups whose pick is not the fastest schedule:
best-GPU-BACKEND.jsonl.gz (the fastest) and picks-GPU-BACKEND.jsonl.gz (the
pick), each record a real record of the group with its params and time
replaced, for `bench/guided_rematch BEST PICKS OUT 1` (the `rematch` step)
on a GPU of that name. `summary` reads those rematches and gives, per kind
(pointwise or rows, f32 or bf16) over the held-out groups of the GPUs named
(h100, h200, or h100,h200 for both), the top-1 regret median / p90 recorded
and side by side (a group whose pick is its fastest schedule is 0 in both; a
pick faster side by side is 0).
"""
import gzip
import json
import os
import sys
from collections import defaultdict

KINDS = ("pointwise f32", "pointwise bf16", "rows f32", "rows bf16")


def quantile(xs, q):
    """The nearest rank, as `fusekit model eval`'s summary takes it."""
    xs = sorted(xs)
    return xs[int(q * (len(xs) - 1) + 0.5)] if xs else float("nan")


def parse_group(name):
    """'op dtype shape backend arch GPU NAME' -> its fields."""
    op, dtype, shape, backend, arch, gpu = name.split(" ", 5)
    return {"pattern": op, "dtype": dtype, "shape": shape, "backend": backend, "arch": arch, "gpu_name": gpu}


def gpu_slug(gpu_name):
    return "h200" if "H200" in gpu_name else "h100" if "H100" in gpu_name else gpu_name.replace(" ", "_").lower()


def held_out_by_op(eval_path):
    with open(eval_path) as f:
        return [g for g in json.load(f)["groups"] if g["holdout"] == "workload"]


def templates(record_paths):
    """One real record per (op, dtype, shape, backend, arch, GPU)."""
    out = {}
    for path in record_paths:
        with gzip.open(path, "rt") if path.endswith(".gz") else open(path) as f:
            for r in map(json.loads, f):
                if r.get("status") == "ok":
                    out.setdefault((r["pattern"], r["dtype"], r["shape"], r["backend"], r["arch"], r["gpu_name"]), r)
    return out


def split(eval_path, out_dir, record_paths):
    found = templates(record_paths)
    files = defaultdict(lambda: {"best": [], "picks": []})
    for g in held_out_by_op(eval_path):
        if g["learned_pick"] == g["best"]:
            continue
        fields = parse_group(g["group"])
        template = found.get(tuple(fields[k] for k in ("pattern", "dtype", "shape", "backend", "arch", "gpu_name")))
        if template is None:
            sys.exit(f"modeled_rematch.py: no record of group '{g['group']}' in the records given")
        name = f"{gpu_slug(fields['gpu_name'])}-{fields['backend']}"
        # The recorded times as the eval saw them, relative: the fastest at 1.
        files[name]["best"].append(dict(template, params=g["best"], median_us=1.0))
        files[name]["picks"].append(dict(template, params=g["learned_pick"], median_us=1.0 + g["learned_top1"]))
    os.makedirs(out_dir, exist_ok=True)
    for name, pair in sorted(files.items()):
        for which, records in pair.items():
            with gzip.open(os.path.join(out_dir, f"{which}-{name}.jsonl.gz"), "wt") as f:
                f.writelines(json.dumps(r) + "\n" for r in records)
        print(f"{name}: {len(pair['best'])} groups whose pick is not the fastest")


def rematched_regrets(rematch_paths):
    """(GPU, op, dtype, shape, backend) -> the pick's side-by-side time over the fastest's, minus one (None: failed).

    A rematch file's GPU and backend are read from its name (modeled-h200-halide.json)."""
    out = {}
    for path in rematch_paths:
        name = os.path.basename(path)
        backend = "halide" if "halide" in name else "nvrtc"
        gpu = next((slug for slug in ("h200", "h100") if slug in name), None)
        if gpu is None:
            sys.exit(f"modeled_rematch.py: '{path}': name the GPU (h100 or h200) in the rematch file's name")
        with open(path) as f:
            for row in json.load(f)["rows"]:
                key = (gpu, row["pattern"], row["dtype"], row["shape"], backend)
                out[key] = max(0.0, row["ratio"] - 1.0) if "ratio" in row else None
    return out


def summary(eval_path, gpus, out_path, rematch_paths):
    """The regret per kind over the held-out groups of every GPU in the comma list `gpus`."""
    gpus = gpus.split(",")
    rematched = rematched_regrets(rematch_paths)
    by_kind = defaultdict(lambda: {"recorded": [], "side_by_side": [], "missing": []})
    for g in held_out_by_op(eval_path):
        fields = parse_group(g["group"])
        kind = " ".join(g["kind"].split()[:2])
        gpu = gpu_slug(fields["gpu_name"])
        if gpu not in gpus or kind not in KINDS:
            continue
        cell = by_kind[kind]
        cell["recorded"].append(g["learned_top1"])
        if g["learned_pick"] == g["best"]:
            cell["side_by_side"].append(0.0)
            continue
        regret = rematched.get((gpu, fields["pattern"], fields["dtype"], fields["shape"], fields["backend"]))
        if regret is None:
            cell["missing"].append(g["group"])
        else:
            cell["side_by_side"].append(regret)
    report = {}
    print(f"{'kind':16s} {'groups':>6s}  recorded med / p90 (>8 %)   side by side med / p90 (>8 %)  not rematched")
    for kind in KINDS:
        cell = by_kind.get(kind)
        if not cell:
            continue
        rec, sbs = cell["recorded"], cell["side_by_side"]
        report[kind] = {"groups": len(rec), "recorded": [quantile(rec, 0.5), quantile(rec, 0.9)],
                        "side_by_side": [quantile(sbs, 0.5), quantile(sbs, 0.9)],
                        "side_by_side_over_8pct": sum(x > 0.08 for x in sbs), "not_rematched": cell["missing"]}
        print(f"{kind:16s} {len(rec):6d}  {100 * quantile(rec, 0.5):8.1f} / {100 * quantile(rec, 0.9):5.1f} "
              f"({sum(x > 0.08 for x in rec):3d})       {100 * quantile(sbs, 0.5):8.1f} / {100 * quantile(sbs, 0.9):5.1f} "
              f"({sum(x > 0.08 for x in sbs):3d})      {len(cell['missing'])}")
    with open(out_path, "w") as f:
        json.dump({"gpu": ",".join(gpus), "eval": eval_path, "kinds": report}, f, indent=1)


def main():
    if len(sys.argv) >= 5 and sys.argv[1] == "split":
        split(sys.argv[2], sys.argv[3], sys.argv[4:])
    elif len(sys.argv) >= 6 and sys.argv[1] == "summary":
        summary(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
