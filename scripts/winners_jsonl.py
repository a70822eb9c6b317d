#!/usr/bin/env python3
"""Keeps, of tuning records in JSON lines, those a package build reads: per
(pipeline, dtype, shape bucket, arch), the fastest verified record and, where
that one is compiled for one row length (`len=`), the fastest generic one
(TuneDb::best and best_generic). Records pooled from several runs shrink to
what `fusekit build` would take from their union, e.g. to carry them to a GPU
machine.

  scripts/winners_jsonl.py OUT.jsonl IN.jsonl... [--exclude FILE_PART PARAM]

--exclude drops the records of input files whose name contains FILE_PART and
whose params contain the token PARAM (e.g. `--exclude d66b27f onepass=1`).
"""
import argparse
import json
import sys


def rank(r):
    # As SqliteStore::best: measured before modeled, then the median.
    return (r["status"] != "ok", r["median_us"])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("inputs", nargs="+")
    ap.add_argument("--exclude", nargs=2, action="append", default=[], metavar=("FILE_PART", "PARAM"))
    a = ap.parse_args()
    best, generic = {}, {}
    read = 0
    for path in a.inputs:
        with open(path) as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    r = json.loads(line)
                except json.JSONDecodeError as e:
                    sys.exit(f"{path}:{n}: not JSON ({e}); pass the JSON lines of `fusekit db export`")
                read += 1
                tokens = r["params"].split()
                if any(part in path and param in tokens for part, param in a.exclude):
                    continue
                if r["status"] not in ("ok", "modeled"):
                    continue
                key = (r["pipeline_hash"], r["dtype"], r["shape_bucket"], r["arch"])
                if key not in best or rank(r) < rank(best[key]):
                    best[key] = r
                if not any(t.startswith("len=") for t in tokens):
                    if key not in generic or rank(r) < rank(generic[key]):
                        generic[key] = r
    kept = {}
    for key, r in best.items():
        kept[r["id"]] = r
        if key in generic:
            kept[generic[key]["id"]] = generic[key]
    with open(a.out, "w") as f:
        for r in kept.values():
            f.write(json.dumps(r) + "\n")
    print(f"{len(kept)} of {read} records kept ({len(best)} keys) in {a.out}")


if __name__ == "__main__":
    main()
