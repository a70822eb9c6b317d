"""Top-1 regret of several `fusekit model eval` reports side by side.

    eval_summary.py EVAL.json...

Per report, held out by op (workload) and by shape: the learned model's top-1
regret median / p90 in % over the groups of each kind (pointwise or rows, f32
or bf16, both backends), and in brackets how many groups are over 8 % (the
bar's p90). Prints one line per report.
"""
import json
import sys

KINDS = ("pointwise f32", "pointwise bf16", "rows f32", "rows bf16")
HOLDOUTS = ("workload", "shape")


def quantile(xs, q):
    """The nearest rank, as `fusekit model eval`'s summary takes it."""
    xs = sorted(xs)
    return xs[int(q * (len(xs) - 1) + 0.5)] if xs else float("nan")


def cells(groups):
    for holdout in HOLDOUTS:
        for kind in KINDS:
            xs = [100 * g["learned_top1"] for g in groups if g["holdout"] == holdout and g["kind"].startswith(kind + " ")]
            yield f"{quantile(xs, 0.5):5.1f} /{quantile(xs, 0.9):5.1f} ({sum(x > 8 for x in xs):2d})"


def main():
    width = max(len(p.split("/")[-1]) for p in sys.argv[1:])
    print(" " * width + "".join(f"  {h[:5]} {k:16s}" for h in HOLDOUTS for k in KINDS))
    for path in sys.argv[1:]:
        with open(path) as f:
            groups = json.load(f)["groups"]
        print(path.split("/")[-1].ljust(width) + "".join(f"  {c:22s}" for c in cells(groups)))


if __name__ == "__main__":
    main()
