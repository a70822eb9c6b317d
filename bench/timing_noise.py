"""Run-to-run agreement of two tunes per timing (scripts/gpu/steps/noise.sh).

    timing_noise.py DIR

DIR holds TIMING-REP.jsonl exports (issued-1, issued-2, queued-1, queued-2).
Per timing, for kernels under 10 us, 10-20 us and over 20 us (by the first
run's time): the same schedule's median in run 2 over run 1 (p10 / median /
p90, and the p90 of how far from 1), the records' own spread ((p80 - p20) /
median), and per op, dtype and shape whether each run's winner, as the other
run timed it, is within 3 % of the other run's best. Last, queued over
issued for the same schedule (first runs and second runs). Writes
DIR/noise.json and prints the tables.
"""
import json
import os
import sys
from collections import defaultdict

BUCKETS = ((0.0, 10.0, "<10us"), (10.0, 20.0, "10-20us"), (20.0, float("inf"), ">=20us"))
WITHIN = 1.03


def load(path):
    """Per schedule (op, dtype, shape, backend, params): its fastest verified record."""
    best = {}
    with open(path) as f:
        for r in map(json.loads, f):
            if r["status"] != "ok":
                continue
            key = (r["pattern"], r["dtype"], r["shape"], r["backend"], r["params"])
            if key not in best or r["median_us"] < best[key]["median_us"]:
                best[key] = r
    return best


def bucket(us):
    return next(name for lo, hi, name in BUCKETS if lo <= us < hi)


def quantile(xs, q):
    xs = sorted(xs)
    if not xs:
        return None
    pos = q * (len(xs) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def ratios(a, b):
    """b's time over a's for each schedule in both, bucketed by a's time."""
    out = defaultdict(list)
    for key, ra in a.items():
        if key in b:
            out[bucket(ra["median_us"])].append(b[key]["median_us"] / ra["median_us"])
    return out


def ratio_row(xs):
    if not xs:
        return {"n": 0}
    return {"n": len(xs), "p10": quantile(xs, 0.1), "median": quantile(xs, 0.5), "p90": quantile(xs, 0.9),
            "p90_off": quantile([abs(x - 1) for x in xs], 0.9)}


def spreads(run):
    out = defaultdict(list)
    for r in run.values():
        if r["median_us"] > 0:
            out[bucket(r["median_us"])].append((r["p80_us"] - r["p20_us"]) / r["median_us"])
    return out


def winners_agree(a, b):
    """Per (op, dtype, shape) timed in both: is a's winner, as b timed it, within 3 % of b's best (and the
    other way round)? Returns per bucket (by the best time) [agreeing, compared]."""
    def groups(run):
        g = defaultdict(dict)
        for key, r in run.items():
            g[key[:3]][key] = r["median_us"]
        return g
    ga, gb = groups(a), groups(b)
    out = defaultdict(lambda: [0, 0])
    for shape in ga.keys() & gb.keys():
        for x, y in ((ga[shape], gb[shape]), (gb[shape], ga[shape])):
            win = min(x, key=x.get)
            if win not in y:
                continue
            best = min(y.values())
            cell = out[bucket(best)]
            cell[0] += y[win] <= WITHIN * best
            cell[1] += 1
    return out


def fmt(row):
    if not row.get("n"):
        return "      -"
    return f"{row['n']:4d} {row['p10']:.3f} {row['median']:.3f} {row['p90']:.3f}  off p90 {row['p90_off']:.3f}"


def main():
    folder = sys.argv[1]
    runs = {}
    for timing in ("issued", "queued"):
        for rep in (1, 2):
            path = os.path.join(folder, f"{timing}-{rep}.jsonl")
            if os.path.exists(path):
                runs[(timing, rep)] = load(path)
    report = {}
    for timing in ("issued", "queued"):
        if (timing, 1) not in runs or (timing, 2) not in runs:
            continue
        a, b = runs[(timing, 1)], runs[(timing, 2)]
        rr, sp, wa = ratios(a, b), spreads(a), winners_agree(a, b)
        report[timing] = {
            name: {"run2_over_run1": ratio_row(rr[name]),
                   "spread_median": quantile(sp[name], 0.5), "spread_p90": quantile(sp[name], 0.9),
                   "winner_within_3pct": wa[name][0], "winners_compared": wa[name][1]}
            for _, _, name in BUCKETS}
        print(f"timing {timing}: run 2 over run 1 (n p10 median p90), record spread (median, p90), "
              "winner within 3 % of the other run's best")
        for _, _, name in BUCKETS:
            row = report[timing][name]
            spread = "-" if row["spread_median"] is None else f"{row['spread_median']:.3f} {row['spread_p90']:.3f}"
            print(f"  {name:8s} {fmt(row['run2_over_run1'])}   spread {spread}   winners "
                  f"{row['winner_within_3pct']}/{row['winners_compared']}")
    for rep in (1, 2):
        if ("issued", rep) in runs and ("queued", rep) in runs:
            rr = ratios(runs[("issued", rep)], runs[("queued", rep)])
            report[f"queued_over_issued_{rep}"] = {name: ratio_row(rr[name]) for _, _, name in BUCKETS}
            print(f"queued over issued, run {rep}")
            for _, _, name in BUCKETS:
                print(f"  {name:8s} {fmt(report[f'queued_over_issued_{rep}'][name])}")
    with open(os.path.join(folder, "noise.json"), "w") as f:
        json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
