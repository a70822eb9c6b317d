"""The guided search beside the full-budget one (scripts/gpu/steps/guided.sh).

    guided_compare.py FULL.jsonl GUIDED.jsonl WALLS.txt OUT.json

Per op, dtype and shape: the verified ("ok") records each run timed there
and its fastest time; the guided winner's time over the full one's, and
whether it is within 3 %; how many schedules the guided run had timed there
when it first came within 3 % of the full run's best (records in the
export's order, which is the order the search proposed them, twins and
specializations last); each run's wall time (WALLS.txt: "MODE wall_s S").
A shape also counts as a tie when the guided winner is within the full
winner's own run-to-run spread (p20 to p80 over its median) where that is
wider than 3 %: at a few microseconds the best of 30 noisy timings sits
lower than the best of 15 whatever the schedules. How far one schedule's
times in the two runs differ, under and over 20 us, is printed last.
"""
import json
import sys
from collections import defaultdict


WITHIN = 1.03
MAX_TIMED = 8  # the bar: within 3 % after at most this many timed schedules
SPLIT_US = 20.0  # kernels shorter than this are noisy between runs (timed_twice)


def verified(path):
    """The export's verified ("ok") records, in file order."""
    with open(path) as f:
        return [r for r in map(json.loads, f) if r["status"] == "ok"]


def runs(records):
    """Per (op, dtype, shape): the records' times in order, and the fastest record."""
    times = defaultdict(list)
    best = {}
    for r in records:
        key = (r["pattern"], r["dtype"], r["shape"])
        times[key].append(r["median_us"])
        if key not in best or r["median_us"] < best[key]["median_us"]:
            best[key] = r
    return times, best


def timed_until(times, target_us, within=WITHIN):
    """1-based count of schedules timed when one first came within `within` of target_us; None if none did."""
    for k, us in enumerate(times, 1):
        if us <= within * target_us:
            return k
    return None


def timed_twice(full_records, guided_records, split_us=SPLIT_US):
    """The same schedule at the same shape in both runs: its guided time over its full one, p10 / median / p90,
    for kernels under and over split_us (by the full run's time). How far two runs' times of one kernel
    differ bounds what a comparison of their recorded bests can tell."""
    def times(records):
        return {(r["pattern"], r["dtype"], r["shape"], r["params"]): r["median_us"] for r in records}
    full, guided = times(full_records), times(guided_records)
    groups = {"under": [], "over": []}
    for key, us in guided.items():
        if key in full:
            groups["under" if full[key] < split_us else "over"].append(us / full[key])
    def quantiles(v):
        v = sorted(v)
        return {"n": len(v), **({q: v[int(f * (len(v) - 1))] for q, f in (("p10", .1), ("median", .5), ("p90", .9))}
                                if v else {})}
    return {"split_us": split_us, **{k: quantiles(v) for k, v in groups.items()}}


def spread(record):
    return (record["p80_us"] - record["p20_us"]) / record["median_us"]


def main(full_path, guided_path, walls_path, out_path):
    full_records, guided_records = verified(full_path), verified(guided_path)
    full_times, full_best = runs(full_records)
    guided_times, guided_best = runs(guided_records)
    walls = {}
    with open(walls_path) as f:
        for line in f:
            mode, _, seconds = line.split()
            walls[mode] = float(seconds)
    rows = []
    for key in sorted(full_best):
        g = guided_best.get(key)
        full_us = full_best[key]["median_us"]
        ratio = g["median_us"] / full_us if g else None
        until = timed_until(guided_times.get(key, []), full_us)
        tie = max(WITHIN, 1 + spread(full_best[key]))
        until_tie = timed_until(guided_times.get(key, []), full_us, tie)
        rows.append({"pattern": key[0], "dtype": key[1], "shape": key[2],
                     "full_timed": len(full_times[key]), "full_us": full_us,
                     "full_params": full_best[key]["params"],
                     "guided_timed": len(guided_times.get(key, [])), "guided_us": g["median_us"] if g else None,
                     "guided_params": g["params"] if g else None, "guided_over_full": ratio,
                     "within_3pct": ratio is not None and ratio <= WITHIN,
                     "guided_timed_to_3pct": until,
                     "within_3pct_in_8": until is not None and until <= MAX_TIMED,
                     "full_spread": spread(full_best[key]),
                     "guided_timed_to_tie": until_tie,
                     "tie_in_8": until_tie is not None and until_tie <= MAX_TIMED})
    within = sum(r["within_3pct"] for r in rows)
    in_8 = sum(r["within_3pct_in_8"] for r in rows)
    tie_8 = sum(r["tie_in_8"] for r in rows)
    summary = {"shapes": len(rows), "within_3pct": within, "within_3pct_in_8": in_8, "tie_in_8": tie_8,
               "full_timed": sum(r["full_timed"] for r in rows),
               "guided_timed": sum(r["guided_timed"] for r in rows),
               "wall_s": walls, "timed_twice": timed_twice(full_records, guided_records)}
    with open(out_path, "w") as f:
        json.dump({"summary": summary, "shapes": rows}, f, indent=1)
    print(f"{'op':20} {'dtype':5} {'shape':12} {'full n':>6} {'full us':>9} {'guided n':>8} {'guided us':>9} "
          f"{'ratio':>6} {'n to 3%':>7} {'spread':>6} {'n to tie':>8}")
    for r in rows:
        ratio = f"{r['guided_over_full']:.3f}" if r["guided_over_full"] else "-"
        gus = f"{r['guided_us']:9.2f}" if r["guided_us"] else "        -"
        until = r["guided_timed_to_3pct"] or "-"
        until_tie = r["guided_timed_to_tie"] or "-"
        print(f"{r['pattern']:20} {r['dtype']:5} {r['shape']:12} {r['full_timed']:6} {r['full_us']:9.2f} "
              f"{r['guided_timed']:8} {gus} {ratio:>6} {until:>7} {r['full_spread']:6.3f} {until_tie:>8}")
    print(f"within 3 %: {within}/{len(rows)}; within 3 % after at most {MAX_TIMED} timed: {in_8}/{len(rows)} "
          f"(or tied within the full winner's spread: {tie_8}/{len(rows)}); "
          f"timed {summary['guided_timed']} guided vs {summary['full_timed']} full; wall {walls}")
    twice = summary["timed_twice"]
    for group in ("under", "over"):
        g = twice[group]
        if g["n"]:
            print(f"one schedule timed in both runs, {group} {SPLIT_US:g} us: guided over full p10 {g['p10']:.3f}, "
                  f"median {g['median']:.3f}, p90 {g['p90']:.3f} ({g['n']} schedules)")


if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    main(*sys.argv[1:])
