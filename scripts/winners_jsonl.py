#!/usr/bin/env python3
"""Keeps, of tuning records in JSON lines, those a package build reads: per
(pipeline, dtype, shape bucket, arch), the fastest verified record and, where
that one is compiled for one row length (`len=`), the fastest generic one
(TuneDb::best and best_generic; a schedule timed in several runs ranks by the
median of its records, and that record is kept; old row records get the row
length in their bucket, as `fusekit db import` gives them). Records pooled from several runs shrink to
what `fusekit build` would take from their union, e.g. to carry them to a GPU
machine.

  scripts/winners_jsonl.py OUT.jsonl IN.jsonl... [--exclude FILE_PART PARAM] [--supersede FILE_PART]

Any of the files may be .jsonl.gz (gzip).

--exclude drops the records of input files whose name contains FILE_PART and
whose params contain the token PARAM (e.g. `--exclude d66b27f onepass=1`).

--supersede keeps, for each (pipeline, dtype, shape bucket, arch) that input
files whose name contains FILE_PART have records of, only theirs: a retune
replaces what earlier runs measured there (e.g. records timed before a
measurement fix), and every other key keeps its records from all files.
"""
import argparse
import gzip
import json
import sys


def open_text(path, mode="r"):
    """A JSON-lines file to read or write ("w"), gzip-compressed where the
    name ends in .gz (committed runs are kept so, as `fusekit db export
    FILE.jsonl.gz` writes and `fusekit db import` reads)."""
    return gzip.open(path, mode + "t") if path.endswith(".gz") else open(path, mode)


def bucket_log2(n):
    """runtime/shape_bucket.cpp's shape_bucket_log2: the smallest k with 2^k >= n (at most 62)."""
    return 0 if n <= 1 else min((n - 1).bit_length(), 62)


def upgrade(r):
    """As tunedb's upgrade_record (what `fusekit db import` does): a row
    reduction's record bucketed by element count alone gets the row length
    added from its shape ("8192x4096" -> "n<=2^25 cols<=2^12")."""
    if not r["pipeline_text"].startswith("layout rows;") or " cols<=" in r["shape_bucket"]:
        return
    parts = r["shape"].split("x")
    if len(parts) < 2 or not all(p.isdigit() and int(p) > 0 for p in parts):
        return
    elements = 1
    for p in parts:
        elements *= int(p)
    r["shape_bucket"] = "n<=2^%d cols<=2^%d" % (bucket_log2(elements), bucket_log2(int(parts[-1])))


def row_length(r):
    """As tunedb's records: the length a schedule was compiled for (0: generic);
    an export from before the field has it only as a row schedule's len=."""
    if "row_length" in r:
        return r["row_length"]
    if r["backend"].startswith("cublaslt"):
        return 0
    return next((int(t[4:]) for t in r["params"].split() if t.startswith("len=")), 0)


def pick(records):
    """As SqliteStore::best: measured before modeled; a measured schedule
    (backend, shape, params) ranks by the median of its records of its newest
    kernel (the lower middle), ties to the one measured more often, then to
    the older record; its median record is returned."""
    order = sorted(records, key=lambda r: (r["status"] != "ok", r["median_us"], r["timestamp"]))
    if order[0]["status"] != "ok":
        return order[0]
    # Each schedule's newest kernel: its records of another kernel are left
    # out, those of an unknown one ("", or no field) stay.
    newest = {}
    for r in order:
        if r["status"] == "ok" and r.get("kernel_hash"):
            name = (r["backend"], r["shape"], r["params"])
            if name not in newest or r["timestamp"] > newest[name]["timestamp"]:
                newest[name] = r
    schedules = {}
    for r in order:
        name = (r["backend"], r["shape"], r["params"])
        if r["status"] == "ok" and (not r.get("kernel_hash") or name not in newest
                                    or r["kernel_hash"] == newest[name]["kernel_hash"]):
            schedules.setdefault(name, []).append(r)
    position = {id(r): i for i, r in enumerate(order)}
    medians = [(rs[(len(rs) - 1) // 2], len(rs)) for rs in schedules.values()]
    return min(medians, key=lambda m: (m[0]["median_us"], -m[1], position[id(m[0])]))[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("inputs", nargs="+")
    ap.add_argument("--exclude", nargs=2, action="append", default=[], metavar=("FILE_PART", "PARAM"))
    ap.add_argument("--supersede", action="append", default=[], metavar="FILE_PART")
    a = ap.parse_args()
    pools, generic_pools = {}, {}
    read, seen, superseding = 0, set(), set()
    for path in a.inputs:
        with open_text(path) as f:
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
                # A database holds a record once (ids dedupe imports).
                if r["status"] not in ("ok", "modeled") or r["id"] in seen:
                    continue
                seen.add(r["id"])
                upgrade(r)
                key = (r["pipeline_hash"], r["dtype"], r["shape_bucket"], r["arch"])
                if any(part in path for part in a.supersede):
                    superseding.add(r["id"])
                pools.setdefault(key, []).append(r)
                if row_length(r) == 0:
                    generic_pools.setdefault(key, []).append(r)
    superseded = 0
    for p in (pools, generic_pools):
        for key, records in p.items():
            kept_new = [r for r in records if r["id"] in superseding]
            if kept_new:
                if p is pools:
                    superseded += len(records) - len(kept_new)
                p[key] = kept_new
    kept = {}
    for key, records in pools.items():
        best = pick(records)
        kept[best["id"]] = best
        if key in generic_pools and row_length(best) > 0:
            generic = pick(generic_pools[key])
            kept[generic["id"]] = generic
    with open_text(a.out, "w") as f:
        for r in kept.values():
            f.write(json.dumps(r) + "\n")
    print(f"{len(kept)} of {read} records kept ({len(pools)} keys; {superseded} superseded) in {a.out}")


if __name__ == "__main__":
    main()
