"""The plot of bench/models.py results: forward ms per case and method.

    python3 bench/models_plot.py A.json [B.json ...] --out models.png
"""

import argparse
import json


def plot(args):
    """Forward ms per case and method, one group of bars per case (log scale)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    rows = [r for path in args.results for r in json.load(open(path))["rows"] if "ms" in r]
    case_names = list(dict.fromkeys(r["case"] for r in rows))
    methods = [m for m in ("eager", "torchscript", "compile", "compile_ro", "fusekit", "fusekit_graph")
               if any(r["method"] == m for r in rows)]
    fig, ax = plt.subplots(figsize=(1.6 + 1.9 * len(case_names), 3.6))
    width = 0.8 / len(methods)
    for k, m in enumerate(methods):
        ms = {r["case"]: r["ms"] for r in rows if r["method"] == m}
        xs = [i + k * width for i, c in enumerate(case_names) if c in ms]
        ax.bar(xs, [ms[c] for c in case_names if c in ms], width, label=m)
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(case_names))], case_names)
    ax.set_yscale("log")
    ax.set_ylabel("forward (ms, median)")
    ax.legend(fontsize=7, ncol=3)
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("results", nargs="+", help="models.json files of bench/models.py bench")
    p.add_argument("--out", required=True, help="a PNG file")
    plot(p.parse_args())


if __name__ == "__main__":
    main()
