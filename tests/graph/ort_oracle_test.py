#!/usr/bin/env python3
"""ONNX Runtime as the oracle for every region of every committed test model.

For each model: `fusekit plan` at batch=2, seq=16; for every occurrence of
every entry, the occurrence's subgraph is cut out of the model
(onnx.utils.extract_model, from its input tensors to its output tensors),
run by ONNX Runtime on random inputs, and compared with fusekit's CPU
reference of the entry's expression (region_eval) on the same inputs. Some
kernel must use general broadcasting (the nd layouts: BERT's mask, GPT-2's
position table), and some must reduce over H and W (ResNet's global average
pool, a general nchw layout whose [N, C, 1, 1] output fusekit stores as
[n, c]), so that the oracle covers both.

    ort_oracle_test.py --fusekit BIN --eval BIN --models DIR
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnx.utils
import onnxruntime as ort

DIMS = {"batch": 2, "seq": 16}


def dim_value(d):
    if isinstance(d, int):
        return d
    return int(eval(d, {}, dict(DIMS)))  # symbols, or expressions of them ("seq + 1")


def value_shapes(model):
    shapes = {}
    for vi in list(model.graph.input) + list(model.graph.value_info) + list(model.graph.output):
        t = vi.type.tensor_type
        shapes[vi.name] = [d.dim_value if d.HasField("dim_value") else d.dim_param for d in t.shape.dim]
    for init in model.graph.initializer:
        shapes[init.name] = list(init.dims)
    return shapes


def check_model(path, args, tmp):
    plan_path = os.path.join(tmp, "plan.json")
    model = onnx.load(path)
    shapes = value_shapes(model)
    symbols = {d for s in shapes.values() for d in s if isinstance(d, str)}
    cmd = [args.fusekit, "plan", path, "--out", plan_path]
    for k, v in DIMS.items():
        if k in symbols:
            cmd += ["--dim", f"{k}={v}"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"fusekit plan {path} failed: {r.stdout}{r.stderr}")
    plan = json.load(open(plan_path))
    inits = {i.name: onnx.numpy_helper.to_array(i) for i in model.graph.initializer}
    rng = np.random.default_rng(0)
    checked = 0
    for entry in plan["entries"]:
        cases, expected = [], []
        for k, occ in enumerate(entry["occurrences"]):
            ins, outs = occ["inputs"], occ["outputs"]
            sub = os.path.join(tmp, f"sub{k}.onnx")
            onnx.utils.extract_model(path, sub, [t for t in ins.values() if t not in inits], list(outs.values()),
                                     check_model=False)
            sess = ort.InferenceSession(sub, providers=["CPUExecutionProvider"])
            # Signed inputs first; where they make ONNX Runtime's result NaN
            # (a variance drawn negative), positive ones.
            for low in (-2.0, 0.1):
                arrays, feeds = {}, {}
                for name, tensor in ins.items():
                    if tensor in inits:
                        arrays[name] = inits[tensor].astype(np.float32)
                    else:
                        arrays[name] = rng.uniform(low, 2, [dim_value(d) for d in shapes[tensor]]).astype(np.float32)
                        feeds[tensor] = arrays[name]
                want = sess.run(list(outs.values()), feeds)
                if not any(np.isnan(w).any() for w in want):
                    break
            files = {}
            for name, a in arrays.items():
                files[name] = os.path.join(tmp, f"{k}_{name}.bin")
                a.tofile(files[name])
            out_files = {o: os.path.join(tmp, f"{k}_{o}.out.bin") for o in outs}
            cases.append({"shape": [dim_value(d) for d in occ["shape"]], "inputs": files, "outputs": out_files})
            expected.append((k, out_files, dict(zip(outs.keys(), want))))
        req = os.path.join(tmp, "req.json")
        json.dump({"expr": entry["expr"], "cases": cases}, open(req, "w"))
        r = subprocess.run([args.eval, req], capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"{entry['name']}: region_eval failed: {r.stderr}")
        for k, out_files, want in expected:
            for o, f in out_files.items():
                got = np.fromfile(f, dtype=np.float32)
                ref = want[o].astype(np.float32).reshape(-1)
                ok = np.isclose(got, ref, rtol=2e-3, atol=2e-4, equal_nan=True) if got.shape == ref.shape else np.zeros(1, bool)
                if not ok.all():
                    bad = int(np.argmin(ok))
                    raise AssertionError(f"{path}: {entry['name']} occurrence {k} output {o}: fusekit "
                                         f"{got[bad] if got.shape == ref.shape else got.shape} vs ONNX Runtime "
                                         f"{ref[bad] if got.shape == ref.shape else ref.shape} at {bad}\n  {entry['expr']}")
            checked += 1
    general = sum(1 for e in plan["entries"] if e["layout"] in ("nd", "ndrows"))
    pooled = sum(1 for e in plan["entries"] if ", hw)" in e["expr"])
    return checked, len(plan["entries"]), general, pooled


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fusekit", required=True)
    ap.add_argument("--eval", required=True)
    ap.add_argument("--models", required=True)
    args = ap.parse_args()
    models = sorted(glob.glob(os.path.join(args.models, "*.onnx")))
    if not models:
        print(f"no models in {args.models}", file=sys.stderr)
        return 1
    total = general_total = pooled_total = 0
    for path in models:
        with tempfile.TemporaryDirectory() as tmp:
            n, entries, general, pooled = check_model(path, args, tmp)
        print(f"{os.path.basename(path)}: {n} regions of {entries} kernels agree with ONNX Runtime "
              f"({general} kernels with general broadcasting, nd/ndrows; {pooled} reducing over H and W)")
        general_total += general
        pooled_total += pooled
        if n == 0:
            print(f"{path}: no regions checked", file=sys.stderr)
            return 1
        total += n
    if general_total == 0:
        print("no kernel of any model uses general broadcasting (nd/ndrows): the oracle no longer covers it",
              file=sys.stderr)
        return 1
    if pooled_total == 0:
        print("no kernel of any model reduces over H and W (a global pool): the oracle no longer covers it",
              file=sys.stderr)
        return 1
    print(f"{total} regions agree")
    return 0


if __name__ == "__main__":
    sys.exit(main())
