"""The guided search beside the full-budget one (scripts/gpu/steps/guided.sh).

    guided_compare.py FULL.jsonl GUIDED.jsonl WALLS.txt OUT.json

Per op, dtype and shape: the verified ("ok") records each run timed there
and its fastest time; the guided winner's time over the full one's, and
whether it is within 3 %; each run's wall time (WALLS.txt: "MODE wall_s S").
"""
import json
import sys
from collections import defaultdict


def runs(path):
    timed = defaultdict(int)
    best = {}
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            if r["status"] != "ok":
                continue
            key = (r["pattern"], r["dtype"], r["shape"])
            timed[key] += 1
            if key not in best or r["median_us"] < best[key]["median_us"]:
                best[key] = r
    return timed, best


def main(full_path, guided_path, walls_path, out_path):
    full_timed, full_best = runs(full_path)
    guided_timed, guided_best = runs(guided_path)
    walls = {}
    with open(walls_path) as f:
        for line in f:
            mode, _, seconds = line.split()
            walls[mode] = float(seconds)
    rows = []
    for key in sorted(full_best):
        g = guided_best.get(key)
        ratio = g["median_us"] / full_best[key]["median_us"] if g else None
        rows.append({"pattern": key[0], "dtype": key[1], "shape": key[2],
                     "full_timed": full_timed[key], "full_us": full_best[key]["median_us"],
                     "full_params": full_best[key]["params"],
                     "guided_timed": guided_timed.get(key, 0), "guided_us": g["median_us"] if g else None,
                     "guided_params": g["params"] if g else None, "guided_over_full": ratio,
                     "within_3pct": ratio is not None and ratio <= 1.03})
    within = sum(r["within_3pct"] for r in rows)
    summary = {"shapes": len(rows), "within_3pct": within,
               "full_timed": sum(r["full_timed"] for r in rows),
               "guided_timed": sum(r["guided_timed"] for r in rows),
               "wall_s": walls}
    with open(out_path, "w") as f:
        json.dump({"summary": summary, "shapes": rows}, f, indent=1)
    print(f"{'op':20} {'dtype':5} {'shape':12} {'full n':>6} {'full us':>9} {'guided n':>8} {'guided us':>9} {'ratio':>6}")
    for r in rows:
        ratio = f"{r['guided_over_full']:.3f}" if r["guided_over_full"] else "-"
        gus = f"{r['guided_us']:9.2f}" if r["guided_us"] else "        -"
        print(f"{r['pattern']:20} {r['dtype']:5} {r['shape']:12} {r['full_timed']:6} {r['full_us']:9.2f} "
              f"{r['guided_timed']:8} {gus} {ratio:>6}")
    print(f"within 3 %: {within}/{len(rows)}; timed {summary['guided_timed']} guided vs {summary['full_timed']} full; "
          f"wall {walls}")


if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    main(*sys.argv[1:])
