"""The host cost of calling a custom operator from Python, against torch.add,
and where a fusekit op call's time goes. CPU only, no GPU needed:

    python3 bench/probes/torch_op_overhead.py [--out result.json] [--rounds 40] [--burst 2000]

Three groups of calls, timed in interleaved rounds (each round runs every call
`burst` times back to back; min and median over the rounds: the machine is
shared, so the min is the cost and the median what a busy machine gives):

- floors: do-nothing C++ operators compiled here (each allocates its output,
  nothing else) with the generic launch's schema (an id and a Tensor[]),
  fixed arity, and fixed arity without the id (the schema one operator per
  plan entry would have), through OpOverload (what an FX graph calls) and
  without OpOverload.__call__'s Python frame;
- fusekit: the real operator library (fusekit.torch.ops) with a registered
  elementwise op, on CPU tensors: the probe's operators of the same schemas
  as the generic launch(op, [x, y]) the rewrite emitted before and the
  launch_2_1(op, x, y) it emits now redispatch to fusekit's Meta kernels,
  which make every check and the allocation of the CUDA kernels, without the
  launch (that needs the GPU; bench/models.py times it on the H200); alone,
  and as a chain of 10 in an FX GraphModule the way the rewrite emits them
  (per op: the chain's time less an empty graph's, over 10). Meta tensors
  would not do: their empty_like and add go through Python meta functions;
- layers: the same calls made from C++ (the probe's extension) through the
  dispatcher's boxed path, as the Python binding makes them, and the
  do-nothing kernel called directly: Python binding = Python call - C++ boxed
  call, dispatcher = boxed - direct call of the do-nothing kernel, body = the
  rest of the boxed call (with the probe's one redispatch, about a dispatch).

The package the op is registered against is a stub library with the three C
symbols load_package looks up, since the Meta kernel never calls into it
(--package DIR takes a folder `fusekit build` wrote instead).
"""

import argparse
import json
import operator
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import torch
import torch.utils.cpp_extension as cpp

TREE_PYTHON = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python")

SOURCE = r"""
#include <torch/library.h>
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <chrono>
std::vector<at::Tensor> noop_list(int64_t, std::vector<at::Tensor> inputs) { return {at::empty_like(inputs[0])}; }
at::Tensor noop_fixed(int64_t, const at::Tensor& a, const at::Tensor&) { return at::empty_like(a); }
at::Tensor noop_noid(const at::Tensor& a, const at::Tensor&) { return at::empty_like(a); }

// Microseconds per call of `name` (overload "" or "Tensor") over n boxed calls from C++ with
// (id, a, b), (id, [a, b]) when `list`, or (a, b) when id < 0, and the schema's defaults after
// them: what the Python binding does after parsing its arguments.
double boxed_us(std::string name, std::string overload, int64_t n, int64_t id, at::Tensor a, at::Tensor b,
                bool list) {
  const auto op = c10::Dispatcher::singleton().findSchemaOrThrow(name.c_str(), overload.c_str());
  torch::jit::Stack stack;
  auto once = [&] {
    if (id >= 0) stack.emplace_back(id);
    if (list) {
      stack.emplace_back(c10::List<at::Tensor>({a, b}));
    } else {
      stack.emplace_back(a);
      stack.emplace_back(b);
    }
    const auto& schema = op.schema().arguments();
    for (size_t k = stack.size(); k < schema.size(); ++k) stack.push_back(*schema[k].default_value());
    op.callBoxed(&stack);
    stack.clear();
  };
  for (int i = 0; i < 100; ++i) once();
  const auto t = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < n; ++i) once();
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t).count() / n;
}

double direct_us(int64_t n, at::Tensor a, at::Tensor b) {
  const auto t = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < n; ++i) noop_fixed(0, a, b);
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t).count() / n;
}

// fusekit's own kernels on CPU tensors without the launch: its Meta kernels (every check and the
// allocation the CUDA kernel makes), reached by one redispatch from an operator of the same schema.
void host_fixed(const c10::OperatorHandle&, torch::jit::Stack* stack) {
  static const auto target = c10::Dispatcher::singleton().findSchemaOrThrow("fusekit::launch_2_1", "");
  target.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::Meta), stack);
}
void host_list(const c10::OperatorHandle&, torch::jit::Stack* stack) {
  static const auto target = c10::Dispatcher::singleton().findSchemaOrThrow("fusekit::launch", "");
  target.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::Meta), stack);
}

TORCH_LIBRARY(fusekit_probe, m) {
  m.def("host_fixed(int op, Tensor i0, Tensor i1) -> Tensor");
  m.def("host_list(int op, Tensor[] inputs) -> Tensor[]");
  m.def("noop_list(int id, Tensor[] inputs) -> Tensor[]");
  m.def("noop_fixed(int id, Tensor a, Tensor b) -> Tensor");
  m.def("noop_noid(Tensor a, Tensor b) -> Tensor");
  m.def("boxed_us(str name, str overload, int n, int id, Tensor a, Tensor b, bool list) -> float", &boxed_us);
  m.def("direct_us(int n, Tensor a, Tensor b) -> float", &direct_us);
}
TORCH_LIBRARY_IMPL(fusekit_probe, CPU, m) {
  m.impl("noop_list", &noop_list);
  m.impl("noop_fixed", &noop_fixed);
  m.impl("noop_noid", &noop_noid);
  m.impl("host_fixed", torch::CppFunction::makeFromBoxedFunction<&host_fixed>());
  m.impl("host_list", torch::CppFunction::makeFromBoxedFunction<&host_list>());
}
"""

STUB = r"""
#include <stdint.h>
#include <stddef.h>
int fusekit_launch(const char* op, const char* dtype, const void* const* in, int n_in, void* const* out, int n_out,
                   const float* params, int n_params, const int64_t* domain, int rank, void* stream) { return 1; }
int fusekit_explain(const char* op, const char* dtype, const int64_t* domain, int rank, int alignment, char* buffer,
                    size_t size) { return 1; }
const char* fusekit_last_error(void) { return "the probe's stub package has no kernels"; }
"""


def stub_package(root):
    """A folder load_package accepts: lib/libfusekit_kernels.so with the three symbols."""
    lib = os.path.join(root, "lib")
    os.makedirs(lib, exist_ok=True)
    src = os.path.join(root, "stub.c")
    with open(src, "w") as f:
        f.write(STUB)
    subprocess.run([os.environ.get("CC", "cc"), "-shared", "-fPIC", "-O2", src, "-o",
                    os.path.join(lib, "libfusekit_kernels.so")], check=True)
    return root


def chain(target, args_of, n):
    """A GraphModule of n calls, each reading the one before, the way the rewrite emits them."""
    g = torch.fx.Graph()
    x, y = g.placeholder("x"), g.placeholder("y")
    prev = x
    for _ in range(n):
        prev = args_of(g, target, prev, y)
    g.output(prev)
    return torch.fx.GraphModule(torch.nn.Module(), g)


def python_chain(target, op, x, y):
    """The graph's chain as a plain Python loop: what the FX graph's code adds beyond it."""
    for _ in range(10):
        x = target(op, x, y)
    return x


def burst_us(fn, n):
    t = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t) / n * 1e6


def parse_args():
    """The command line: where the results go, how long to time, which package and Python tree to probe."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out")
    p.add_argument("--rounds", type=int, default=40)
    p.add_argument("--burst", type=int, default=2000)
    p.add_argument("--package", help="a package folder (default: a stub library; the Meta kernel never calls it)")
    p.add_argument("--python", default=TREE_PYTHON,
                   help="the fusekit Python package to probe (default: this tree's python/; an older tree's, "
                        "exported with git archive, gives the before of a change; one without the fixed-arity "
                        "operators skips their rows)")
    return p.parse_args()


def register_relu_add(python, package):
    """Builds the probe's operators, loads fusekit.torch.ops from `python` and registers relu_add; returns its id."""
    cpp.load_inline("fusekit_probe_ops", cpp_sources=[SOURCE], is_python_module=False, extra_cflags=["-O2"])
    sys.path.insert(0, python)
    from fusekit.torch import ops
    ops.library()
    with tempfile.TemporaryDirectory() as d:
        pkg = package or stub_package(d)
        op = ops.register_op(pkg, "relu_add", "f32", "flat", ["x (a)", "y (b)"], [0, 0], ["out (c)"], [])
    return op


def chains(op):
    """The FX graphs timed, by label: an empty one, and a chain of 10 calls of each operator."""
    probe = torch.ops.fusekit_probe
    noop, host_fixed, host_list = probe.noop_fixed.default, probe.host_fixed.default, probe.host_list.default
    aten_add = torch.ops.aten.add.Tensor

    def emit_two(g, target, prev, y):
        return g.call_function(target, (prev, y))

    def emit_fixed(g, target, prev, y):
        return g.call_function(target, (op, prev, y))

    def emit_list(g, target, prev, y):
        return g.call_function(operator.getitem, (g.call_function(target, (op, [prev, y])), 0))
    return {"empty": chain(None, None, 0),
            "aten.add.Tensor": chain(aten_add, emit_two, 10),
            "noop_fixed(id, a, b)": chain(noop, emit_fixed, 10),
            "fusekit launch(op, [x, y])[0]": chain(host_list, emit_list, 10),
            "fusekit launch_2_1(op, x, y)": chain(host_fixed, emit_fixed, 10)}


def python_calls_of(op, a, b, graphs, fixed):
    """The calls timed from Python, by label: torch's, the do-nothing operators', fusekit's and the graphs'."""
    probe = torch.ops.fusekit_probe
    noop, host_fixed, host_list = probe.noop_fixed.default, probe.host_fixed.default, probe.host_list.default
    aten_add = torch.ops.aten.add.Tensor
    return {
        "torch.add": lambda: torch.add(a, b),
        "torch.empty_like": lambda: torch.empty_like(a),
        "aten.add.Tensor (OpOverload)": lambda: aten_add(a, b),
        "noop_list(id, [4 tensors])": lambda: probe.noop_list.default(0, [a, b, a, b]),
        "noop_list(id, [a, b])[0]": lambda: probe.noop_list.default(0, [a, b])[0],
        "noop_fixed(id, a, b)": lambda: noop(0, a, b),
        "noop_fixed without OpOverload.__call__": lambda: noop._op(0, a, b),
        "noop_noid(a, b)": lambda: probe.noop_noid.default(a, b),
        "fusekit launch(op, [x, y])[0]": lambda: host_list(op, [a, b])[0],
        **({"fusekit launch_2_1(op, x, y)": lambda: host_fixed(op, a, b)} if fixed else {}),
        **{f"graph of 10: {k}": (lambda gm=gm: gm(a, b)) for k, gm in graphs.items()
           if k != "empty" and (fixed or "launch_2_1" not in k)},
        "graph of 0": lambda: graphs["empty"](a, b),
        **({"python chain of 10: fusekit launch_2_1(op, x, y)": lambda: python_chain(host_fixed, op, a, b)}
           if fixed else {}),
    }


def cpp_calls_of(op, a, b, n, fixed):
    """The calls timed from C++ (the probe's extension), by label: each returns its own µs per call over n calls."""
    probe = torch.ops.fusekit_probe
    cpp_calls = {
        "C++ noop_fixed direct": lambda: probe.direct_us(n, a, b),
        "C++ boxed noop_fixed(id, a, b)": lambda: probe.boxed_us("fusekit_probe::noop_fixed", "", n, 0, a, b, False),
        "C++ boxed noop_list(id, [a, b])": lambda: probe.boxed_us("fusekit_probe::noop_list", "", n, 0, a, b, True),
        "C++ boxed aten::add": lambda: probe.boxed_us("aten::add", "Tensor", n, -1, a, b, False),
        "C++ boxed fusekit launch": lambda: probe.boxed_us("fusekit_probe::host_list", "", n, op, a, b, True),
    }
    if fixed:
        cpp_calls["C++ boxed fusekit launch_2_1"] = lambda: probe.boxed_us("fusekit_probe::host_fixed", "", n, op, a,
                                                                           b, False)
    return cpp_calls


def time_rounds(python_calls, cpp_calls, rounds, n):
    """Every call's µs per call in each of `rounds` interleaved rounds of n calls, by label."""
    rounds_us = {k: [] for k in [*python_calls, *cpp_calls]}
    with torch.no_grad():
        for fn in python_calls.values():
            burst_us(fn, 200)
        for _ in range(rounds):
            for k, fn in python_calls.items():
                rounds_us[k].append(burst_us(fn, n))
            for k, fn in cpp_calls.items():
                rounds_us[k].append(fn())
    return rounds_us


def per_op_in_graph(graphs, low, med):
    """Per op in each graph of 10 (min and median): the graph's time less the empty graph's, over 10."""
    return {k: {s: (m[f"graph of 10: {k}"] - m["graph of 0"]) / 10 for s, m in (("min", low), ("median", med))}
            for k in graphs if f"graph of 10: {k}" in low}


def breakdown_of(python_calls, low, per_op, fixed):
    """Where each fusekit call's min time goes: graph frame, Python binding, dispatcher and body."""
    dispatcher = low["C++ boxed noop_fixed(id, a, b)"] - low["C++ noop_fixed direct"]
    breakdown = {}
    for k in ("fusekit launch_2_1", "fusekit launch")[0 if fixed else 1:]:
        py = next(c for c in python_calls if c.startswith(k + "("))
        boxed = low[f"C++ boxed {k}"]
        breakdown[k] = {"call_us": low[py], "in_graph_us": per_op[py]["min"],
                        "in_python_chain_us": (low[f"python chain of 10: {py}"] / 10
                                               if f"python chain of 10: {py}" in low else None),
                        "graph_frame_us": per_op[py]["min"] - low[py], "python_binding_us": low[py] - boxed,
                        "dispatcher_us": dispatcher, "body_us": boxed - dispatcher}
    return breakdown


def result_of(args, low, med, per_op, breakdown, rounds):
    """The JSON document: the method, every call's min and median, the per-op figures and the breakdown."""
    n = args.burst
    add = low["torch.add"]
    return {"torch": torch.__version__, "cpu": platform.processor() or platform.machine(),
            "fusekit_python": os.path.realpath(args.python),
            "method": f"{args.rounds} interleaved rounds of {n} calls each; min and median per call over the "
                      "rounds; fusekit's operators on CPU tensors through their Meta kernels (no launch)",
            "min_us": low, "median_us": med, "graph_per_op_us": per_op, "breakdown_min_us": breakdown,
            "ratio_to_torch_add_min": {k: v / add for k, v in low.items()}, "rounds_us": rounds}


def print_report(rounds, low, med, per_op, breakdown):
    """Prints every call, the per-op figures and the breakdown, each against torch.add's min."""
    add = low["torch.add"]
    for k in rounds:
        print(f"{k:46s} min {low[k]:6.2f} us  median {med[k]:6.2f} us  (min {low[k] / add:.2f}x torch.add)")
    for k, v in per_op.items():
        print(f"per op in a graph: {k:30s} min {v['min']:6.2f} us  median {v['median']:6.2f} us  "
              f"(min {v['min'] / add:.2f}x torch.add)")
    for k, v in breakdown.items():
        print(f"{k}: " + ", ".join(f"{s} " + ("-" if us is None else f"{us:.2f}") for s, us in v.items()))


def main():
    args = parse_args()
    op = register_relu_add(args.python, args.package)
    a, b = torch.randn(16), torch.randn(16)
    graphs = chains(op)
    fixed = hasattr(torch.ops.fusekit, "launch_2_1")
    python_calls = python_calls_of(op, a, b, graphs, fixed)
    cpp_calls = cpp_calls_of(op, a, b, args.burst, fixed)
    rounds = time_rounds(python_calls, cpp_calls, args.rounds, args.burst)
    low = {k: min(v) for k, v in rounds.items()}
    med = {k: statistics.median(v) for k, v in rounds.items()}
    per_op = per_op_in_graph(graphs, low, med)
    breakdown = breakdown_of(python_calls, low, per_op, fixed)
    result = result_of(args, low, med, per_op, breakdown, rounds)
    print_report(rounds, low, med, per_op, breakdown)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
