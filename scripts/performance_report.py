#!/usr/bin/env python3
"""Writes docs/performance.md (and a JSON summary) from GPU runs' exported
records and the copy bandwidth measured in the same runs.

  scripts/performance_report.py SUMMARY.json DOC.md --run LABEL RECORDS.jsonl COPY.jsonl [--run ...] --command "..."

Each (pattern, dtype, shape) is reported from the last run that measured it,
against that run's own copy bandwidth.
"""
import argparse
import collections
import json
import statistics


def shape_key(r):
    return [int(x) for x in r["shape"].split("x")]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("summary")
    ap.add_argument("doc")
    ap.add_argument("--run", nargs=3, action="append", metavar=("LABEL", "RECORDS", "COPY"), required=True)
    ap.add_argument("--command", required=True)
    ap.add_argument("--memcheck", default="", help="memcheck logs, comma-separated, one per run")
    ap.add_argument("--gpu-test", default="", help="gtest JSON files, comma-separated, one per run")
    ap.add_argument("--notes", default="", help="hand-written analysis appended after the tables")
    a = ap.parse_args()

    runs = []
    for label, rec_path, copy_path in a.run:
        recs = [json.loads(l) for l in open(rec_path) if l.strip()]
        copies = [json.loads(l) for l in open(copy_path) if l.strip()]
        runs.append({"label": label, "records": recs, "copies": copies,
                     "copy_gbps": statistics.median(c["copy_gbps_median"] for c in copies)})
    # Later runs replace earlier ones key by key.
    by_key = {}
    for run in runs:
        keys = collections.defaultdict(list)
        for r in run["records"]:
            if r["shape"] != "any":
                keys[(r["pattern"], r["dtype"], r["shape"])].append(r)
        for k, rs in keys.items():
            by_key[k] = (run, rs)
    records = [r for run in runs for r in run["records"]]
    last = runs[-1]
    statuses = collections.Counter((r["backend"], r["dtype"], r["status"]) for r in last["records"])

    order = []
    for r in records:
        if r["pattern"] not in order:
            order.append(r["pattern"])
    rows = []
    for (pattern, dtype, shape), (run, rs) in by_key.items():
        copy_gbps = run["copy_gbps"]
        ok = [r for r in rs if r["status"] == "ok"]
        if not ok:
            continue
        best = min(ok, key=lambda r: r["median_us"])
        per_backend = {}
        for b in ("nvrtc", "halide"):
            bs = [r for r in ok if r["backend"] == b]
            per_backend[b] = min(r["median_us"] for r in bs) if bs else None
        elements = 1
        for x in shape_key(best):
            elements *= x
        rows.append({
            "pattern": pattern, "dtype": dtype, "shape": shape, "elements": elements,
            "backend": best["backend"], "params": best["params"], "median_us": best["median_us"],
            "p20_us": best["p20_us"], "p80_us": best["p80_us"], "samples": best["samples"],
            "gbps": best["bandwidth_gbps"], "fraction_of_copy": best["bandwidth_gbps"] / copy_gbps,
            "best_nvrtc_us": per_backend["nvrtc"], "best_halide_us": per_backend["halide"],
            "verify_ratio": best["verify_error"], "candidates_measured": len(ok),
            "run": run["label"], "copy_gbps": copy_gbps,
        })
    rows.sort(key=lambda r: (order.index(r["pattern"]), r["dtype"] != "f32", r["elements"]))
    gpu = records[0]["gpu_name"] if records else "?"
    summary = {"gpu": gpu, "arch": records[0]["arch"] if records else "?",
               "runs": [{"label": r["label"], "copy_gbps": r["copy_gbps"], "copy_measurements": r["copies"],
                         "records": len(r["records"])} for r in runs],
               "command": a.command, "winners": rows,
               "record_counts_last_run": {"/".join(k): v for k, v in sorted(statuses.items())}}
    with open(a.summary, "w") as f:
        json.dump(summary, f, indent=1)

    largest = [r for r in rows if r["elements"] >= 1 << 26]
    passing = [r for r in largest if r["fraction_of_copy"] >= 0.95]
    out = []
    w = out.append
    w("# fusekit performance\n")
    w("Measured by `fusekit tune` on one %s (%s), %s. Every figure below comes from the"
      % (gpu, summary["arch"], records[0]["timestamp"][:10] if records else "?"))
    w("records committed in `bench/results/`; regenerate this page with `scripts/performance_report.py`.\n")
    w("## How it was measured\n")
    w("```\n%s\n```\n" % a.command)
    w("- Every candidate was verified against the Halide pipeline JIT-compiled for the host CPU, on random")
    w("  inputs in [-3, 3), at an odd shape (no extent a multiple of 2, 4 or 8) and at each timed size, with")
    w("  |got - ref| <= atol + rtol |ref| (f32: 1e-5 + 1e-5; bf16: 1e-4 + 2 bf16 ulps).")
    w("- Kernel time: CUDA events around each launch after warm-up, 30-300 samples per candidate; input sets")
    w("  rotated so that sizes fitting in L2 are still read from DRAM. Median shown, p20-p80 beside it.")
    w("- Bandwidth counts each input read once and each output written once. The copy limit is a 1 GiB")
    w("  device-to-device `cuMemcpyDtoDAsync` (bytes read + written), measured before and after tuning in the")
    w("  same run; each row is compared with its own run's copy figure:\n")
    w("| run | records | copy GB/s (before, after) | used |")
    w("|---|---:|---|---:|")
    for r in runs:
        w("| %s | %d | %s | %.0f |" % (r["label"], len(r["records"]),
                                      ", ".join("%.0f" % c["copy_gbps_median"] for c in r["copies"]), r["copy_gbps"]))
    w("")
    w("## Large sizes against the copy limit (64 M elements)\n")
    w("%d of %d pattern/dtype pairs reach 0.95 of copy bandwidth.\n" % (len(passing), len(largest)))
    w("| pattern | dtype | shape | run | backend | params | median µs | GB/s | × copy |")
    w("|---|---|---|---|---|---|---:|---:|---:|")
    for r in largest:
        w("| %s | %s | %s | %s | %s | `%s` | %.1f | %.0f | %s%.3f%s |" % (
            r["pattern"], r["dtype"], r["shape"], r["run"], r["backend"], r["params"], r["median_us"], r["gbps"],
            "" if r["fraction_of_copy"] >= 0.95 else "**", r["fraction_of_copy"],
            "" if r["fraction_of_copy"] >= 0.95 else "**"))
    if a.notes:
        w("")
        w(open(a.notes).read().rstrip())
    w("\n## Every winner\n")
    w("Best measured candidate per pattern, dtype and size, and the best of each backend (µs).\n")
    w("| pattern | dtype | shape | run | backend | params | median µs | p20-p80 µs | GB/s | × copy | best nvrtc | best halide |")
    w("|---|---|---|---|---|---|---:|---:|---:|---:|---:|---:|")
    fmt = lambda v: "-" if v is None else "%.2f" % v
    for r in rows:
        w("| %s | %s | %s | %s | %s | `%s` | %.2f | %.2f-%.2f | %.0f | %.3f | %s | %s |" % (
            r["pattern"], r["dtype"], r["shape"], r["run"], r["backend"], r["params"], r["median_us"], r["p20_us"],
            r["p80_us"], r["gbps"], r["fraction_of_copy"], fmt(r["best_nvrtc_us"]), fmt(r["best_halide_us"])))
    w("\n## Records of run %s\n" % last["label"])
    w("| backend | dtype | status | records |")
    w("|---|---|---|---:|")
    for (b, d, s), n in sorted(statuses.items()):
        w("| %s | %s | %s | %d |" % (b, d, s, n))
    w("\nHalide 14's NVPTX back end aborts inside LLVM on every bf16 kernel (\"Copy one register into another")
    w("with a different width\"); fusekit builds Halide kernels in a child process, so each becomes a")
    w("`compile_error` record. Halide 14 also leaves `erff` an unresolved extern in PTX, so `bias_gelu` has no")
    w("Halide kernels.")
    if a.memcheck:
        w("\n## compute-sanitizer\n")
        w("`compute-sanitizer --tool memcheck fusekit verify --arch sm_90 --dtype f32,bf16 --sizes 4096,65536`")
        w("rebuilt every winner of the run's database and checked it at the odd shape and both sizes:\n")
        for label, path in zip([r["label"] for r in runs], a.memcheck.split(",")):
            lines = [l.strip() for l in open(path) if "checks," in l or "ERROR SUMMARY" in l]
            w("- %s: `%s`" % (label, "`, `".join(lines)))
    if a.gpu_test:
        w("\n## GPU tests\n")
        for label, path in zip([r["label"] for r in runs], a.gpu_test.split(",")):
            j = json.load(open(path))
            w("- %s: `gpu_test` (ctest label `gpu`), %d tests, %d failures." % (label, j["tests"], j["failures"]))
    w("")
    with open(a.doc, "w") as f:
        f.write("\n".join(out))


if __name__ == "__main__":
    main()
