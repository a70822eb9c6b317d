"""What a guided row search's final specialization adds, replayed from its records.

    guided_final_specialization.py GUIDED.jsonl [GUIDED.jsonl ...]

Each file is one guided tune's export (scripts/gpu/steps/guided.sh writes
guided.jsonl), in the order the search timed its schedules. Per row op,
dtype and shape: the best time before the final specialization (the
records with `len=` after the task's last generic one), the winner with it,
and the winner had the final phase specialized only the row length's
leader (the fastest generic schedule before it) and its load-hint twin, as
the guided search now does; then how many final-phase schedules each timed.
"""
import json
import sys


def generic(params):
    """The schedule without its row length and load hint: a leader's twins share it."""
    return " ".join(kv for kv in params.split() if not kv.startswith(("len=", "hint=")))


def tasks(path):
    """Per (op, dtype, backend): its records in file order."""
    out = {}
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            out.setdefault((r["pattern"], r["dtype"], r["backend"]), []).append(r)
    return out


def replay(records):
    """Per shape: (before, final winner, leaders only) times, and the final phase's size and leaders' share."""
    last_generic = max((i for i, r in enumerate(records) if "len=" not in r["params"]), default=-1)
    before, final = records[: last_generic + 1], records[last_generic + 1 :]
    rows, kept = [], 0
    for shape in sorted({r["shape"] for r in records}):
        ok = [r for r in before if r["status"] == "ok" and r["shape"] == shape]
        if not ok:
            continue
        a = min(r["median_us"] for r in ok)
        b = min(r["median_us"] for r in records if r["status"] == "ok" and r["shape"] == shape)
        leaders = [r for r in ok if "len=" not in r["params"]]
        leader = generic(min(leaders, key=lambda r: r["median_us"])["params"]) if leaders else None
        mine = [r for r in final if r["shape"] == shape and generic(r["params"]) == leader]
        kept += len(mine)
        c = min([a] + [r["median_us"] for r in mine if r["status"] == "ok"])
        rows.append((shape, a, b, c, sum(r["shape"] == shape for r in final)))
    return rows, len(final), kept


def main(paths):
    total = kept_total = 0
    worst = 1.0
    print("op        dtype shape        before_us  final_us  leaders_us  leaders/final  final_timed")
    for path in paths:
        for (op, dtype, _), records in tasks(path).items():
            if not any("len=" in r["params"] for r in records):
                continue  # not a row op
            rows, n, kept = replay(records)
            total += n
            kept_total += kept
            for shape, a, b, c, timed in rows:
                worst = max(worst, c / b)
                print(f"{op:9s} {dtype:5s} {shape:11s} {a:10.2f} {b:9.2f} {c:11.2f} {c / b:14.3f} {timed:12d}")
    print(f"final-phase schedules timed: {total}; the leaders' alone: {kept_total}; "
          f"worst leaders-only winner over the final winner: {worst:.3f}")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
