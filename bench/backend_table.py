#!/usr/bin/env python3
"""Where the Halide backend wins, ties or loses against NVRTC, from one tune's records.

  python3 bench/backend_table.py records.jsonl [--md table.md]

Per pattern, dtype and shape: each backend's fastest verified record (status
ok). A tie when either best median lies inside the other's p20-p80 spread
(the run's own noise), else a win or a loss for Halide by the ratio of the
medians. Both backends must come from the same tune (one device call).
"""
import argparse
import collections
import json
import sys


def best_per_backend(lines):
    best = collections.defaultdict(dict)
    for line in lines:
        r = json.loads(line)
        if r.get("status") != "ok":
            continue
        key = (r["pattern"], r["dtype"], r["shape"])
        old = best[key].get(r["backend"])
        if old is None or r["median_us"] < old["median_us"]:
            best[key][r["backend"]] = r
    return best


def verdict(h, n):
    if n["p20_us"] <= h["median_us"] <= n["p80_us"] or h["p20_us"] <= n["median_us"] <= h["p80_us"]:
        return "tie"
    return "win" if h["median_us"] < n["median_us"] else "lose"


def table(best):
    rows, tally = [], collections.Counter()
    for key in sorted(best):
        b = best[key]
        if "halide" not in b or "nvrtc" not in b:
            rows.append((*key, b.get("nvrtc"), b.get("halide"), "-", "only " + ",".join(sorted(b))))
            continue
        v = verdict(b["halide"], b["nvrtc"])
        tally[v] += 1
        rows.append((*key, b["nvrtc"], b["halide"], b["nvrtc"]["median_us"] / b["halide"]["median_us"], v))
    return rows, tally


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("records")
    ap.add_argument("--md")
    args = ap.parse_args()
    with open(args.records) as f:
        rows, tally = table(best_per_backend(f))
    fmt = lambda r: "-" if r is None else "%.2f" % r["median_us"]  # noqa: E731
    out = ["| pattern | dtype | shape | NVRTC (us) | Halide (us) | NVRTC / Halide | Halide |",
           "|---|---|---|---|---|---|---|"]
    for p, dt, shape, n, h, ratio, v in rows:
        out.append(f"| {p} | {dt} | {shape} | {fmt(n)} | {fmt(h)} | "
                   f"{ratio if isinstance(ratio, str) else '%.3f' % ratio} | {v} |")
    out.append("")
    out.append("Halide wins %d, ties %d, loses %d of %d." % (tally["win"], tally["tie"], tally["lose"],
                                                           sum(tally.values())))
    text = "\n".join(out) + "\n"
    if args.md:
        with open(args.md, "w") as f:
            f.write(text)
    sys.stdout.write(text)
    return 0 if sum(tally.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
