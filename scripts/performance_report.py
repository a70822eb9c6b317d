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
import os
import statistics

from winners_jsonl import open_text, pick


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
    ap.add_argument("--package-run", nargs=3, action="append", default=[], metavar=("LABEL", "PREFIX", "COMMENT"),
                    help="runtime run: PREFIX-dispatch_bench.json, -verify_package.txt, -memcheck.txt")
    ap.add_argument("--rows-exclude", nargs=2, action="append", default=[], metavar=("RUN", "PARAM"),
                    help="leave out RUN's records whose schedule has PARAM (e.g. onepass=1): kernels a later commit "
                         "prints differently")
    ap.add_argument("--rows-run", nargs=3, action="append", default=[], metavar=("LABEL", "RECORDS", "COPY"),
                    help="row-reduction runs; later runs replace earlier ones per (op, dtype, shape)")
    ap.add_argument("--rows-command", default="")
    ap.add_argument("--rows-gpu-test", default="", help="gtest JSON files of the row runs, comma-separated")
    ap.add_argument("--rows-memcheck", default="")
    ap.add_argument("--rows-notes", default="")
    ap.add_argument("--peers", nargs=2, default=None, metavar=("LABEL", "PEERS_JSON"))
    ap.add_argument("--peers-command", default="")
    ap.add_argument("--peers-notes", default="", help="hand-written analysis appended to the peers section")
    ap.add_argument("--plots", default="", help="folder for the peers plots (PNG), relative to the doc")
    ap.add_argument("--profile", default="", help="bench/profile_kernels.py merge output")
    ap.add_argument("--profile-command", default="")
    a = ap.parse_args()

    runs = []
    for label, rec_path, copy_path in a.run:
        recs = [json.loads(l) for l in open_text(rec_path) if l.strip()]
        copies = [json.loads(l) for l in open_text(copy_path) if l.strip()]
        largest = max(c["bytes"] for c in copies)
        runs.append({"label": label, "records": recs, "copies": copies,
                     "copy_gbps": statistics.median(c["copy_gbps_median"] for c in copies if c["bytes"] == largest),
                     "copy_bytes": largest})
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
        # A copy of the same traffic (bytes read + written) measured in the
        # same run, when there is one within 5 %.
        traffic = best["bandwidth_gbps"] * best["median_us"] * 1e3
        same = [c["copy_gbps_median"] for c in run["copies"] if abs(2 * c["bytes"] - traffic) <= 0.05 * traffic]
        same_gbps = statistics.median(same) if same else None
        rows.append({
            "pattern": pattern, "dtype": dtype, "shape": shape, "elements": elements,
            "backend": best["backend"], "params": best["params"], "median_us": best["median_us"],
            "p20_us": best["p20_us"], "p80_us": best["p80_us"], "samples": best["samples"],
            "gbps": best["bandwidth_gbps"], "fraction_of_copy": best["bandwidth_gbps"] / copy_gbps,
            "best_nvrtc_us": per_backend["nvrtc"], "best_halide_us": per_backend["halide"],
            "verify_ratio": best["verify_error"], "candidates_measured": len(ok),
            "run": run["label"], "copy_gbps": copy_gbps, "traffic_bytes": traffic,
            "copy_same_bytes_gbps": same_gbps,
            "fraction_of_copy_same_bytes": best["bandwidth_gbps"] / same_gbps if same_gbps else None,
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
    passing_same = [r for r in largest if (r["fraction_of_copy_same_bytes"] or 0) >= 0.95]
    out = []
    w = out.append
    w("# fusekit performance\n")
    w("Measured by `fusekit tune` on one %s (%s), %s. Every figure below comes from the"
      % (gpu, summary["arch"], records[0]["timestamp"][:10] if records else "?"))
    w("records committed in `bench/results/`; regenerate this page with `scripts/performance_report.py`.")
    w("To look at the search rather than read it, [docs/report.md](report.md) shows `fusekit report`'s page of the")
    w("newest package's records (every schedule timed, the winners, the failures, the package's dispatch).\n")
    w("## How it was measured\n")
    w("```\n%s\n```\n" % a.command)
    w("- Every candidate was verified against the Halide pipeline JIT-compiled for the host CPU, on random")
    w("  inputs in [-3, 3), at an odd shape (no extent a multiple of 2, 4 or 8) and at each timed size, with")
    w("  |got - ref| <= atol + rtol |ref| (f32: 1e-5 + 1e-5; bf16: 1e-4 + 2 bf16 ulps).")
    w("- Kernel time: CUDA events around each launch after warm-up, 30-300 samples per candidate; input sets")
    w("  rotated so that sizes fitting in L2 are still read from DRAM. Median shown, p20-p80 beside it.")
    w("- Bandwidth counts each input read once and each output written once. The copy limit is a")
    w("  device-to-device `cuMemcpyDtoDAsync` (bytes read + written, median of 50), measured in the same run:")
    w("  a 1 GiB copy, and (run `a2a0ff6-64m`) copies of exactly the traffic of the 64 M-element kernels.\n")
    w("| run | records | copy GB/s, 1 GiB | copy GB/s at other sizes (MB copied: GB/s) |")
    w("|---|---:|---:|---|")
    for r in runs:
        others = ", ".join("%d: %.0f" % (c["bytes"] // 2 ** 20, c["copy_gbps_median"]) for c in r["copies"]
                           if c["bytes"] != r["copy_bytes"])
        w("| %s | %d | %.0f | %s |" % (r["label"], len(r["records"]), r["copy_gbps"], others or "-"))
    w("")
    w("## Large sizes against the copy limit (64 M elements)\n")
    w("Against a copy of the same number of bytes, %d of %d pattern/dtype pairs reach 0.95; against the"
      % (len(passing_same), len(largest)))
    w("1 GiB copy, %d of %d. A copy's own rate depends on its size on this GPU (see the table above: the" %
      (len(passing), len(largest)))
    w("fixed start-up and tail of a transfer weigh more on 268 MB than on 2 GiB), so the same-bytes copy is")
    w("the like-for-like limit; both columns are shown. Bold: below 0.95.\n")
    w("| pattern | dtype | shape | run | backend | params | median µs | GB/s | × copy, same bytes | × copy, 1 GiB |")
    w("|---|---|---|---|---|---|---:|---:|---:|---:|")
    bold = lambda v: "-" if v is None else ("%.3f" % v if v >= 0.95 else "**%.3f**" % v)
    for r in largest:
        w("| %s | %s | %s | %s | %s | `%s` | %.1f | %.0f | %s | %s |" % (
            r["pattern"], r["dtype"], r["shape"], r["run"], r["backend"], r["params"], r["median_us"], r["gbps"],
            bold(r["fraction_of_copy_same_bytes"]), bold(r["fraction_of_copy"])))
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
    if a.rows_run:
        rows_section(w, a)
    if a.package_run:
        runtime_section(w, a.package_run)
    if a.profile:
        profile_section(w, a.profile, a.profile_command)
    if a.peers:
        peers_section(w, a.peers[0], a.peers[1], a.peers_command, a.doc, a.plots, a.peers_notes)
    w("")
    with open(a.doc, "w") as f:
        f.write("\n".join(out))


def rows_section(w, a):
    """Row reductions: winners per op, dtype and shape against copies of the
    same traffic (copies of all row runs pooled, medians per size). Runs given
    under one label pool their records, as one tuning database holds them:
    per shape, the schedule whose records have the lowest median wins (the
    rule of TuneDb::best, scripts/winners_jsonl.py), whichever runs measured it."""
    by_key, copies = {}, collections.defaultdict(list)
    # Halide schedules, from every run: a later NVRTC-only run replaces the
    # NVRTC winners, not the Halide column.
    halide_all = collections.defaultdict(list)
    labels = []
    seen = set()
    pooled = collections.OrderedDict()
    for label, rec_path, copy_path in a.rows_run:
        if label not in pooled:
            pooled[label] = collections.defaultdict(list)
            labels.append(label)
        run = os.path.basename(rec_path).split("-")[4] if rec_path.count("-") >= 4 else label
        for l in open_text(rec_path):
            if l.strip():
                r = json.loads(l)
                if any(run == x and p in r["params"].split() for x, p in a.rows_exclude):
                    continue
                if r["pattern"] not in ROW_OPS:  # a pointwise op tuned in the same call
                    continue
                if r["shape"] != "any" and r["id"] not in seen:  # ids dedupe, as in a database
                    seen.add(r["id"])
                    r["run"] = run
                    pooled[label][(r["pattern"], r["dtype"], r["shape"])].append(r)
                    if r["backend"] == "halide" and r["status"] == "ok":
                        halide_all[(r["pattern"], r["dtype"], r["shape"])].append(r["median_us"])
        for l in (open_text(copy_path) if copy_path != "-" else []):  # "-": the call measured no copies
            if l.strip():
                c = json.loads(l)
                copies[c["bytes"]].append(c["copy_gbps_median"])
    for label, keys in pooled.items():
        for k, rs in keys.items():
            by_key[k] = (label, rs)
    one_gib = statistics.median(copies[1 << 30])
    rows = []
    for (op, dt, shape), (label, rs) in by_key.items():
        ok = [r for r in rs if r["status"] == "ok"]
        if not ok:
            continue
        b = pick(ok)  # as `fusekit build` chooses: a schedule by the median of its records
        halide = halide_all[(op, dt, shape)]
        traffic = b["bandwidth_gbps"] * b["median_us"] * 1e3
        near = [n for n in copies if abs(2 * n - traffic) <= 0.06 * traffic]
        same = statistics.median(copies[near[0]]) if near else None
        rows.append({"op": op, "dtype": dt, "shape": shape, "run": b["run"], "params": b["params"],
                     "us": b["median_us"], "p20": b["p20_us"], "p80": b["p80_us"], "gbps": b["bandwidth_gbps"],
                     "same": b["bandwidth_gbps"] / same if same else None, "gib": b["bandwidth_gbps"] / one_gib,
                     "halide": min(halide) if halide else None, "failed": len(rs) - len(ok), "measured": len(ok)})
    order = ["256x1024", "32768x1024", "8192x4096", "4096x16384", "1024x65536", "3000x3001"]
    ops = []
    for r in rows:
        if r["op"] not in ops:
            ops.append(r["op"])
    rows.sort(key=lambda r: (ops.index(r["op"]), r["dtype"] != "f32",
                             order.index(r["shape"]) if r["shape"] in order else 99))
    large = [r for r in rows if r["shape"] in order[1:5]]
    passing = [r for r in large if (r["same"] or 0) >= 0.90]
    w("\n## Row reductions and normalizations\n")
    w("```\n%s\n```\n" % a.rows_command)
    w("Every candidate verified against the Halide pipeline evaluated in double on the CPU (inputs in [-3, 3),")
    w("the odd shape 97x1001 and every timed shape), with f32 tolerances widened by 1 + sqrt(cols)/16. Times are")
    w("the best measured schedule per op, dtype and shape of the last run listed that measured it (NVRTC")
    w("schedules; the Halide column is the best Halide schedule of any run, f32 only: Halide 14 cannot build")
    w("bf16 kernels);")
    w("fractions are of a device copy of the same traffic (copies of runs %s pooled) and of a 1 GiB copy"
      % ", ".join(labels))
    w("(%.0f GB/s).\n" % one_gib)
    w("At the four large shapes, **%d of %d** op/dtype/shape triples reach 0.90 of the same-bytes copy."
      % (len(passing), len(large)))
    for dt in ("f32", "bf16"):
        these = [r for r in large if r["dtype"] == dt]
        by_shape = collections.OrderedDict((sh, []) for sh in order[1:5])
        for r in these:
            by_shape[r["shape"]].append(r)
        parts = []
        for sh, rs in by_shape.items():
            good = sum((r["same"] or 0) >= 0.90 for r in rs)
            parts.append("%s %d/%d (%.2f-%.2f)" % (sh, good, len(rs), min(r["same"] or 0 for r in rs),
                                                   max(r["same"] or 0 for r in rs)) if rs else sh + " -")
        w("- %s: %d of %d; per shape, at 0.90 / all (range of × same-bytes copy): %s." % (
            dt, sum((r["same"] or 0) >= 0.90 for r in these), len(these), "; ".join(parts)))
    w("\nBold: below 0.90 at the four large shapes.\n")
    w("| op | dtype | shape | run | params | median µs | p20-p80 µs | GB/s | × copy, same bytes | × copy, 1 GiB | best Halide µs |")
    w("|---|---|---|---|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        same = "-" if r["same"] is None else ("%.3f" % r["same"] if r["same"] >= 0.90 or r["shape"] not in order[1:5]
                                              else "**%.3f**" % r["same"])
        w("| %s | %s | %s | %s | `%s` | %.1f | %.1f-%.1f | %.0f | %s | %.3f | %s |" % (
            r["op"], r["dtype"], r["shape"], r["run"], r["params"], r["us"], r["p20"], r["p80"], r["gbps"], same,
            r["gib"], "-" if r["halide"] is None else "%.1f" % r["halide"]))
    if a.rows_gpu_test:
        w("")
        for path in a.rows_gpu_test.split(","):
            j = json.load(open(path))
            w("- GPU tests, `%s`: %d tests, %d failures." % (os.path.basename(path), j["tests"], j["failures"]))
    for path in filter(None, a.rows_memcheck.split(",")):
        lines = [l.strip() for l in open(path) if "checks," in l or "ERROR SUMMARY" in l]
        w("- memcheck of every winner (`fusekit verify` under compute-sanitizer), `%s`: `%s`" % (
            os.path.basename(path), "`, `".join(lines)))
    if a.rows_notes:
        w("")
        w(open(a.rows_notes).read().rstrip())


def runtime_section(w, package_runs):
    w("\n## Runtime: the emitted package on the H200\n")
    w("```\nscripts/prepare_device.sh build && SKIP_TUNE=1 RECORDS=bench/results/2026-11-30-h200-a11723e-records.jsonl.gz \\")
    w("  bash scripts/gpu_package_session.sh")
    w("# on the H200: fusekit build --arch sm_90 (from run a11723e's records); fusekit verify --package, then with")
    w("# FUSEKIT_PTX_ONLY=1; the example app; compute-sanitizer memcheck of the example and of verify --package")
    w("# (problems up to 1.1 M elements, cubins and PTX); dispatch_bench --benchmark_repetitions=5\n```\n")
    w("`fusekit verify --package` loads the package's shared library as an application does and calls")
    w("`fusekit_launch`, so the package's own selection and launch code runs: per op and dtype, one odd-sized")
    w("problem inside every tuned shape bucket and one with pointers offset by one element, each against the")
    w("Halide CPU reference. \"not taken\" lists generic variants that no call reaches: where a tuned")
    w("variant needs only element alignment (vec=1), misaligned pointers select it instead.\n")
    for label, prefix, comment in package_runs:
        w("### Run %s (%s)\n" % (label, comment))
        for line in open(prefix + "-verify_package.txt"):
            if "checks," in line or line.startswith("not taken"):
                w("- verify: `%s`" % line.strip())
        mem = [l.strip() for l in open(prefix + "-memcheck.txt") if "ERROR SUMMARY" in l or "rc=" in l]
        w("- memcheck: `%s`" % "`, `".join(mem))
        bench = json.load(open(prefix + "-dispatch_bench.json"))
        agg = {}
        for b in bench["benchmarks"]:
            if b.get("run_type") == "aggregate":
                agg[(b["run_name"], b["aggregate_name"])] = b
        def get(name, stat="median", key="real_time"):
            for (n, st), b in agg.items():
                if n.startswith(name) and st == stat:
                    return b.get(key)
            return None
        raw, pkg = get("BM_RawLaunch"), get("BM_PackageLaunch/")
        w("")
        w("| what (median of 5 repetitions) | ns | stddev ns | bar |")
        w("|---|---:|---:|---|")
        w("| selection alone (`BM_SelectVariant`) | %.0f | %.0f | <= 200 |" % (get("BM_SelectVariant"),
                                                                         get("BM_SelectVariant", "stddev")))
        w("| package host work, fake driver, same shape (`BM_PackageLaunchHostOnly/0`) | %.0f | %.0f | |" % (
            get("BM_PackageLaunchHostOnly/0"), get("BM_PackageLaunchHostOnly/0", "stddev")))
        w("| raw `cuLaunchKernel`, sigmoid_mul_tanh_add f32 4096, 10 000 per sync | %.0f | %.0f | |" % (
            raw, get("BM_RawLaunch", "stddev")))
        w("| the same through `Package::launch` | %.0f | %.0f | |" % (pkg, get("BM_PackageLaunch/", "stddev")))
        w("| **package − raw** | **%.0f** | | <= 300 |" % (pkg - raw))
        w("| per kernel inside a CUDA graph (100 calls captured) | %.0f | %.0f | <= 1500 |" % (
            get("BM_GraphLaunch", key="us_per_kernel") * 1e9, get("BM_GraphLaunch", "stddev", "us_per_kernel") * 1e9))
        w("")


ROW_OPS = {"softmax", "log_softmax", "layernorm", "rmsnorm", "add_layernorm", "add_rmsnorm", "bias_add_softmax"}


def profile_section(w, path, command):
    """Per fusekit kernel of the package: Nsight Compute and wall-time figures
    (bench/profile_kernels.py)."""
    data = json.load(open(path))
    cases = data["cases"]
    w("\n## Profile of every packaged kernel (Nsight Compute)\n")
    w("```\n%s\n```\n" % command)
    w("Per op and dtype at its largest sizes and its smallest, the package's own kernel as an application")
    w("calls it. Kernel µs: `gpu__time_duration` (ncu, clocks not locked). Wall µs: host time per call over")
    w("2000 back-to-back calls with one synchronize. Launch share: 1 − kernel / wall, the part of a call the")
    w("GPU is not running the kernel (target < 5 %). Bandwidth: DRAM bytes read + written (ncu) / kernel time;")
    w("× copy: CUDA-event time of a device copy of the same bytes / kernel time (target > 0.80; the copy's")
    w("event time includes its launch, so small sizes exceed 1). Occupancy: achieved")
    w("(`sm__warps_active.avg.pct_of_peak_sustained_active`, target > 60 %) and theoretical.\n")
    big = [c for c in cases if c["kernel_us"] > 20]
    ok = lambda c: c["launch_overhead_share"] < 0.05 and c["fraction_of_copy"] > 0.80 and c["achieved_occupancy_pct"] > 60
    w("Kernels over 20 µs: %d; launch share under 5 %%: %d; over 0.80 of copy: %d; occupancy over 60 %%: %d;"
      % (len(big), sum(c["launch_overhead_share"] < 0.05 for c in big), sum(c["fraction_of_copy"] > 0.80 for c in big),
         sum(c["achieved_occupancy_pct"] > 60 for c in big)))
    w("all three: %d. Kernels under 20 µs (the smallest sizes) are launch-bound by nature: there the per-call" %
      sum(ok(c) for c in big))
    w("comparison against PyTorch below is the figure that matters.\n")
    w("| op | dtype | shape | kernel µs | wall µs | launch share | DRAM GB/s | × copy | occupancy % | theoretical % |")
    w("|---|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for c in cases:
        flag = lambda good, text: text if good or c["kernel_us"] <= 20 else "**%s**" % text
        w("| %s | %s | %s | %.1f | %.1f | %s | %.0f | %s | %s | %.1f |" % (
            c["op"], c["dtype"], c["shape"], c["kernel_us"], c["wall_us_per_call"],
            flag(c["launch_overhead_share"] < 0.05, "%.1f %%" % (100 * c["launch_overhead_share"])),
            c["achieved_gbps"], flag(c["fraction_of_copy"] > 0.80, "%.3f" % c["fraction_of_copy"]),
            flag(c["achieved_occupancy_pct"] > 60, "%.1f" % c["achieved_occupancy_pct"]),
            c["theoretical_occupancy_pct"]))
    w("")


def peers_section(w, label, path, command, doc, plots, notes=""):
    import math
    parts = [json.load(open(p)) for p in path.split(",")]
    data = parts[0]
    # A later call's result replaces an earlier call's for the same op, dtype and shape.
    merged = collections.OrderedDict()
    replaced = collections.OrderedDict()
    for i, d in enumerate(parts):
        for r in d["results"]:
            key = (r["op"], r["dtype"], r["shape"])
            if key in merged:
                replaced[(r["op"], i)] = True
            merged[key] = r
    res = list(merged.values())
    impls = ["fusekit", "eager", "torchscript", "inductor", "inductor_max_autotune", "copy"]
    w("\n## Against PyTorch (run %s)\n" % label)
    w("%s, PyTorch %s; %s:\n" % (data["gpu"], data["torch"], "one process, one call" if len(parts) == 1 else
                                 "%d calls of %s s" % (len(parts), " + ".join("%.0f" % d.get("seconds", 0)
                                                                              for d in parts))))
    w("```\n%s\n```\n" % command)
    if replaced:
        w("The later calls' rows replace the first call's for: %s.\n" % ", ".join(
            "%s (call %d)" % (op, i + 1) for op, i in replaced))
    for d in parts:
        pc = d.get("precompile")
        if pc and pc.get("workers"):
            tp = pc.get("timed_process", {})
            w("torch.compile: %d static-shape graphs compiled by %d processes in %.0f s before timing (%d "
              "autotuning results they cached deleted); the timed process then had %s FX-graph-cache hits and %s "
              "misses. Whole suite: %.0f s.\n" % (pc["graphs"], pc["workers"], pc["seconds"],
                                                 pc.get("autotune_results_discarded", 0),
                                                 tp.get("fxgraph_cache_hit", "?"), tp.get("fxgraph_cache_miss", "?"),
                                                 d.get("seconds", 0)))
    w("fusekit runs through the emitted package's C ABI (`fusekit_launch` via ctypes) on PyTorch's stream.")
    w("Every fusekit output was checked against eager run on the inputs widened to f32 and rounded once to the")
    w("storage dtype, with fusekit's tolerances: %d of %d checks passed. Kernel time: CUDA events around each"
      % (sum(r["fusekit_verified"] for r in res), len(res)))
    # Rounds as recorded by the first row fusekit was timed in (none before peers.py had them).
    rounds = next((len(r["impls"]["fusekit"].get("round_medians_us", [])) for r in res if "fusekit" in r["impls"]), 0)
    if rounds:
        w("call after warm-up, median of 100 taken in %d interleaved rounds (each round times a block of every" % rounds)
        w("implementation in turn, the order rotated per round; \"rounds\" is the range of the per-round ratio to")
        w("Inductor), inputs rotated past L2. Below 1 M elements these event times are")
    else:
        w("call after warm-up, median of 100, inputs rotated past L2. Below 1 M elements these event times are")
    w("bounded by the host (Python) path, so the per-call table is the meaningful one there. Speedups are")
    w("peer time / fusekit time (> 1: fusekit faster); × copy is copy time of the same bytes / fusekit time.")
    spaced = [(i + 1, d["spacer_us"]) for i, d in enumerate(parts) if d.get("spacer_us")]
    if spaced:
        w("In %s a spin kernel of %s µs was queued before each timed call, so that the host enqueues the call while"
          % (", ".join("call %d" % i for i, _ in spaced), "/".join("%.0f" % u for _, u in spaced)))
        w("the GPU spins and the event pair times the kernel alone%s." % (
            "" if len(spaced) == len(parts) else "; the other calls' times include host waits wherever a caller's "
            "host path per call is longer than its kernel"))
    w("")
    w("### Largest size of every op (kernel time)\n")
    w("| op | dtype | shape | fusekit µs | eager µs | TorchScript µs | Inductor µs | Inductor max-autotune µs | vs Inductor |"
      + (" rounds |" if rounds else "") + " vs eager | × copy |")
    w("|---|---|---|---:|---:|---:|---:|---:|---:|" + ("---:|" if rounds else "") + "---:|---:|")
    ri, re_, losses_best = [], [], []
    for r in res:
        if r["elements"] != max(x["elements"] for x in res if x["op"] == r["op"]) or "fusekit" not in r["impls"]:
            continue
        t = {k: r["impls"][k]["median_us"] for k in impls if k in r["impls"]}
        si, se = t["inductor"] / t["fusekit"], t["eager"] / t["fusekit"]
        ri.append(si)
        re_.append(se)
        best = min(t["inductor"], t["inductor_max_autotune"]) / t["fusekit"]
        if best < 1.0:
            losses_best.append("%s %s %s %.3fx" % (r["op"], r["dtype"], r["shape"], best))
        span = ""
        if rounds:
            per = [i / f for f, i in zip(r["impls"]["fusekit"]["round_medians_us"],
                                         r["impls"]["inductor"]["round_medians_us"])]
            span = " %.3f-%.3f |" % (min(per), max(per))
        w("| %s | %s | %s | %.1f | %.1f | %.1f | %.1f | %.1f | %s |%s %.2fx | %.3f |" % (
            r["op"], r["dtype"], r["shape"], t["fusekit"], t["eager"], t["torchscript"], t["inductor"],
            t["inductor_max_autotune"], ("%.3fx" % si) if si >= 1.0 else "**%.3fx**" % si, span, se,
            t["copy"] / t["fusekit"]))
    gm = lambda xs: math.exp(sum(math.log(x) for x in xs) / len(xs))
    w("\nGeometric mean speedup at the largest sizes: **%.2fx over Inductor, %.2fx over eager**." % (gm(ri), gm(re_)))
    w("At or above 1.00x Inductor (default mode): **%d of %d**. Against the faster of Inductor's two modes"
      % (sum(x >= 1.0 for x in ri), len(ri)))
    w("(default or max-autotune-no-cudagraphs), fusekit is slower in %d of %d: %s.\n"
      % (len(losses_best), len(ri), "; ".join(losses_best) if losses_best else "none"))
    w("### Small sizes: host time per call (10 000 back-to-back calls, one synchronize)\n")
    w("| op | dtype | shape | fusekit µs | eager µs | TorchScript µs | Inductor µs | fusekit in a CUDA graph µs | eager in a graph µs |")
    w("|---|---|---|---:|---:|---:|---:|---:|---:|")
    wins = total = 0
    for r in res:
        if r["elements"] > 1048576 or "fusekit" not in r["impls"]:
            continue
        pc = {k: r["impls"][k].get("per_call_us") for k in impls if k in r["impls"]}
        gr = {k: r["impls"][k].get("graph_us_per_call") for k in impls if k in r["impls"]}
        total += 1
        wins += pc["fusekit"] < min(pc["eager"], pc["torchscript"])
        f = lambda v: "-" if v is None else "%.1f" % v
        w("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (r["op"], r["dtype"], r["shape"], f(pc["fusekit"]),
                                                         f(pc["eager"]), f(pc["torchscript"]), f(pc["inductor"]),
                                                         f(gr["fusekit"]), f(gr["eager"])))
    w("\nfusekit's per-call time is below both eager's and TorchScript's in %d of %d small-size cases." % (wins, total))
    w("The Python side converts fusekit's arguments once and caches the stream, as a framework binding's C++")
    w("side would (an earlier run, `fc2b3b4`, looked the stream up through `torch.cuda.current_stream()` on")
    w("every call and lost to TorchScript in several cases). The C++ call itself adds about 0.1 µs to a raw")
    w("launch (runtime section).\n")
    if notes:
        w(open(notes).read().rstrip() + "\n")
    if plots:
        try:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            w("(plots not drawn: matplotlib missing)")
            return
        folder = os.path.join(os.path.dirname(doc), plots)
        os.makedirs(folder, exist_ok=True)
        for op in dict.fromkeys(r["op"] for r in res):
            fig, axes = plt.subplots(1, 2, figsize=(10, 3.6), sharey=True)
            for ax, dt in zip(axes, ("f32", "bf16")):
                rows = [r for r in res if r["op"] == op and r["dtype"] == dt]
                # Row ops: one point per [rows, cols] shape in run order (two
                # shapes can hold the same element count); others by size.
                by_shape = "x" in rows[0]["shape"] and rows[0]["shape"].count("x") == 1 and op in ROW_OPS
                if not by_shape:
                    rows.sort(key=lambda r: r["elements"])
                for k in impls:
                    pts = [(i if by_shape else r["elements"], r["impls"][k]["gbps"])
                           for i, r in enumerate(rows) if k in r["impls"]]
                    if pts:
                        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=k,
                                linestyle="--" if k == "copy" else "-")
                if by_shape:
                    ax.set_xticks(range(len(rows)))
                    ax.set_xticklabels([r["shape"] for r in rows], rotation=30, fontsize=7)
                    ax.set_xlabel("rows x cols")
                else:
                    ax.set_xscale("log", base=2)
                    ax.set_xlabel("elements")
                ax.set_title("%s %s" % (op, dt))
                ax.grid(alpha=0.3)
            axes[0].set_ylabel("GB/s (kernel time by events)")
            axes[1].legend(fontsize=7)
            fig.tight_layout()
            name = "peers-%s.png" % op
            fig.savefig(os.path.join(folder, name), dpi=80)
            plt.close(fig)
            w("![%s](%s/%s)" % (op, plots, name))


if __name__ == "__main__":
    main()
