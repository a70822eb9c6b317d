"""fusekit.torch.capture: a torch.nn.Module through torch.export into the
graph JSON `fusekit plan` reads, then the plan itself."""

import inspect
import json
import operator
import os

import torch

from .. import cli, graph_json
from . import aten_map, masks

_DTYPES = {torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16", torch.float64: "f64",
           torch.int64: "i64", torch.int32: "i32", torch.int8: "i8", torch.uint8: "u8", torch.bool: "bool"}
_SKIP = ("_assert_tensor_metadata", "_assert_scalar", "sym_size", "sym_constrain_range", "_guards_fn")
_SMALL = 64  # constants with at most this many elements carry their values


def dtype_name(dtype):
    if dtype not in _DTYPES:
        raise ValueError(f"dtype {dtype} has no fusekit graph name; supported: {', '.join(map(str, _DTYPES))}")
    return _DTYPES[dtype]


class _Writer:
    """Collects tensors, constants and nodes while walking an FX graph."""

    def __init__(self, symbols):
        self.symbols = symbols  # sympy symbol name -> user's dim name
        self.tensors, self.constants, self.nodes = {}, {}, []
        self.alias = {}         # getitem node -> tensor name

    def dim(self, d):
        if isinstance(d, int):
            return d
        expr = d.node.expr
        if expr.is_number:
            return int(expr)
        text = str(expr)
        for sym in sorted(expr.free_symbols, key=lambda s: -len(str(s))):
            text = text.replace(str(sym), self.symbols.get(str(sym), str(sym)))
        return text

    def is_tensor(self, n):
        return isinstance(n, torch.fx.Node) and isinstance(n.meta.get("val"), torch.Tensor)

    def dtype_of(self, v):
        if isinstance(v, torch.fx.Node) and isinstance(v.meta.get("val"), torch.Tensor):
            return dtype_name(v.meta["val"].dtype)
        return None

    def shape_of(self, v):
        val = v.meta.get("val") if isinstance(v, torch.fx.Node) else None
        return [self.dim(d) for d in val.shape] if isinstance(val, torch.Tensor) else []

    def name(self, n):
        return self.alias.get(n.name, n.name)

    def add_tensor(self, name, dtype, shape):
        self.tensors[name] = {"dtype": dtype, "shape": shape}
        return name

    def out(self, n):
        return self.add_tensor(n.name, self.dtype_of(n), self.shape_of(n))

    def outs(self, n):
        """Names of a tuple-valued node's outputs: its getitem users' names where used."""
        vals = n.meta.get("val")
        if isinstance(vals, torch.Tensor):
            return [self.out(n)]
        used = {u.args[1]: u.name for u in n.users if u.target is operator.getitem}
        names = []
        for i, v in enumerate(vals):
            name = used.get(i, f"{n.name}{aten_map.SEP}{i}")
            self.alias[name] = name
            self.add_tensor(name, dtype_name(v.dtype), [self.dim(d) for d in v.shape])
            names.append(name)
        return names

    def tmp(self, n, suffix, dtype, shape):
        return self.add_tensor(n.name + aten_map.SEP + suffix, dtype, shape)

    def constant(self, name, dtype, shape, values=None):
        c = {"dtype": dtype, "shape": shape}
        if values is not None:
            c["values"] = values
        self.constants[name] = c
        return name

    def scalar(self, value, dtype, n, suffix):
        dtype = dtype or ("f32" if isinstance(value, float) else "i64")
        v = float(value) if dtype in ("f32", "f16", "bf16", "f64") else int(value)
        return self.constant(n.name + aten_map.SEP + suffix, dtype, [], [v])

    def value(self, a, like, n, index):
        """The tensor name of an argument: an FX tensor node, else a scalar constant."""
        if isinstance(a, torch.fx.Node):
            return self.name(a)
        if isinstance(a, (bool, int, float)):
            return self.scalar(a, like, n, f"arg{index}")
        raise NotImplementedError(f"argument {a!r}")

    def emit(self, name, op, inputs, outputs, attrs=None):
        node = {"name": name, "op": op, "inputs": inputs, "outputs": outputs}
        if attrs:
            node["attrs"] = attrs
        self.nodes.append(node)

    def opaque(self, n):
        ins = [self.name(a) for a in n.all_input_nodes if self.is_tensor(a) or a.name in self.alias]
        val = n.meta.get("val")
        outs = self.outs(n) if isinstance(val, (tuple, list)) else [self.out(n)] if self.is_tensor(n) else []
        self.emit(n.name, "Opaque", ins, outs, {"target": "aten." + n.target.__name__})


def _lower_node(w, n):
    try:
        aten_map.lower(w, n)
    except (NotImplementedError, TypeError, IndexError):
        # Drop any half-emitted pieces of this node, then keep it whole as Opaque.
        w.nodes = [x for x in w.nodes if x["name"].split(aten_map.SEP)[0] != n.name]
        w.opaque(n)


def graph_from_module(gm, name, symbols=None, tune_dims=None):
    """The graph JSON dict of an exported GraphModule (ep.module())."""
    w = _Writer(symbols or {})
    inputs, outputs = [], []
    attrs = dict(gm.named_parameters(remove_duplicate=False))
    attrs.update(dict(gm.named_buffers(remove_duplicate=False)))
    for n in gm.graph.nodes:
        if n.op == "placeholder":
            if w.is_tensor(n):
                inputs.append(w.out(n))
        elif n.op == "get_attr":
            t = attrs.get(n.target)
            if t is None:
                t = getattr(gm, n.target, None)
            if isinstance(t, torch.Tensor):
                values = t.detach().flatten().tolist() if t.numel() <= _SMALL else None
                w.constant(n.name, dtype_name(t.dtype), list(t.shape), values)
        elif n.op == "call_function":
            if n.target is operator.getitem or any(s in str(n.target) for s in _SKIP):
                continue
            if not hasattr(n.target, "_schema"):
                continue  # Python-level helpers (sym ints): not tensor ops
            _lower_node(w, n)
        elif n.op == "output":
            flat, _ = torch.utils._pytree.tree_flatten(n.args[0])
            outputs = [w.name(a) for a in flat if isinstance(a, torch.fx.Node)]
    graph = {"format": "fusekit-graph", "version": 1, "name": name, "opset": 17, "inputs": inputs,
             "outputs": outputs, "tensors": w.tensors, "constants": w.constants, "nodes": w.nodes}
    if tune_dims:
        graph["dims"] = {k: list(v) for k, v in tune_dims.items()}
    return graph_json.check(graph)


def _dynamic_shapes(module, example_inputs, dims):
    """torch.export's dynamic_shapes from {input name: {axis: dim name}}."""
    if not dims:
        return None, {}
    params = list(inspect.signature(module.forward).parameters)
    made = {}
    spec = {}
    for i, pname in enumerate(params[:len(example_inputs)]):
        axes = dims.get(pname)
        spec[pname] = {int(a): made.setdefault(d, torch.export.Dim(d)) for a, d in axes.items()} if axes else None
    unknown = set(dims) - set(spec)
    if unknown:
        raise ValueError(f"dims names inputs {sorted(unknown)} that forward() does not take among the "
                         f"example inputs; it takes {params[:len(example_inputs)]}")
    return spec, made


def _drop_metadata_asserts(gm):
    """Removes the dtype/device asserts export puts beside each .to(): they
    only check what the graph's metadata already says, and as extra readers
    of a value they would keep a region from replacing it."""
    for n in list(gm.graph.nodes):
        if n.op == "call_function" and n.target is torch.ops.aten._assert_tensor_metadata.default:
            gm.graph.erase_node(n)
    gm.recompile()


def export(module, example_inputs, dims=None):
    """(GraphModule of ATen ops, sympy symbol name -> dim name) of `module` in eval mode."""
    module = module.eval()
    spec, _ = _dynamic_shapes(module, example_inputs, dims)
    with torch.no_grad():
        ep = torch.export.export(module, tuple(example_inputs), dynamic_shapes=spec)
    gm = ep.module()
    _drop_metadata_asserts(gm)
    masks.elide_constant_masks(gm)
    symbols = {}
    placeholders = {n.name: n for n in gm.graph.nodes if n.op == "placeholder"}
    for pname, axes in (dims or {}).items():
        val = placeholders[pname].meta["val"] if pname in placeholders else None
        for a, d in axes.items():
            if val is not None and not isinstance(val.shape[int(a)], int):
                symbols[str(val.shape[int(a)].node.expr)] = d
    return gm, symbols


def capture(module, example_inputs, path, dims=None, tune_dims=None, name=None, plan_path=None,
            fusekit_bin=None, plan_args=(), run_plan=True):
    """Writes the graph JSON of `module` to `path` and, with run_plan, the plan
    `fusekit plan` makes of it (to plan_path, default PATH with .plan.json).

    dims: {input name: {axis: dim name}}, the dynamic dimensions (torch.export
    Dim) and their symbolic names; tune_dims: {dim name: [values to tune]}.
    Returns the plan's path, or the graph's when run_plan is False.
    """
    gm, symbols = export(module, example_inputs, dims)
    name = name or type(module).__name__.lower()
    graph = graph_from_module(gm, name, symbols, tune_dims)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        json.dump(graph, f, indent=1)
    if not run_plan:
        return path
    plan_path = plan_path or (path[:-len(".fkgraph.json")] if path.endswith(".fkgraph.json")
                              else os.path.splitext(path)[0]) + ".plan.json"
    cli.run(["plan", path, "--out", plan_path, *plan_args], fusekit_bin)
    return plan_path
