"""The host cost of calling a custom operator from Python, against torch.add.

Two do-nothing C++ operators (each allocates its output, nothing else): one
with fusekit::launch's schema (an id and a Tensor[]), one with fixed arity.
What they cost beyond torch.add is the floor of any operator called through
torch.ops, before fusekit's own checks and launch. CPU tensors, no GPU needed:

    python3 bench/probes/torch_op_overhead.py [--out result.json]
"""

import argparse
import json
import platform
import time

import torch
import torch.utils.cpp_extension as cpp

SOURCE = r"""
#include <torch/library.h>
#include <ATen/ATen.h>
std::vector<at::Tensor> noop_list(int64_t, std::vector<at::Tensor> inputs) { return {at::empty_like(inputs[0])}; }
at::Tensor noop_fixed(int64_t, const at::Tensor& a, const at::Tensor&) { return at::empty_like(a); }
TORCH_LIBRARY(fusekit_probe, m) {
  m.def("noop_list(int id, Tensor[] inputs) -> Tensor[]");
  m.def("noop_fixed(int id, Tensor a, Tensor b) -> Tensor");
}
TORCH_LIBRARY_IMPL(fusekit_probe, CPU, m) { m.impl("noop_list", &noop_list); m.impl("noop_fixed", &noop_fixed); }
"""


def per_call_us(fn, n=20000):
    for _ in range(500):
        fn()
    t = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t) / n * 1e6


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out")
    p.add_argument("--rounds", type=int, default=5)
    args = p.parse_args()
    cpp.load_inline("fusekit_probe_ops", cpp_sources=[SOURCE], is_python_module=False)
    a, b = torch.randn(16), torch.randn(16)
    ops = torch.ops.fusekit_probe
    calls = {"torch.add": lambda: torch.add(a, b), "torch.empty_like": lambda: torch.empty_like(a),
             "noop_list(id, [4 tensors])": lambda: ops.noop_list.default(0, [a, b, a, b]),
             "noop_fixed(id, a, b)": lambda: ops.noop_fixed.default(0, a, b)}
    rounds = {k: [] for k in calls}
    with torch.no_grad():
        for _ in range(args.rounds):
            for k, fn in calls.items():
                rounds[k].append(per_call_us(fn))
    result = {"torch": torch.__version__, "cpu": platform.processor() or platform.machine(),
              "median_us": {k: sorted(v)[len(v) // 2] for k, v in rounds.items()}, "rounds_us": rounds}
    add = result["median_us"]["torch.add"]
    for k, us in result["median_us"].items():
        print(f"{k:28s} {us:6.2f} us  ({us / add:.2f}x torch.add)")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
