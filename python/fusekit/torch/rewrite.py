"""Replacing a plan's regions in an exported FX graph by calls of fusekit's launch
operators (ops.operator: launch_<inputs>_<outputs>, else the generic launch).

Graph node names are FX node names, or NODE::part for the extra graph nodes
one FX node became (aten_map); a region replaces the FX nodes all of whose
parts it holds. The one partial node it takes is a linear/addmm whose bias
Add joined an elementwise region (bias+GELU): the matmul stays, without its
bias, and the bias goes to the kernel.
"""

import operator
from dataclasses import dataclass, field
from typing import List, Optional

import torch
from torch.fx.passes.tools_common import legalize_graph

from . import graph_capture as capture
from .aten_map import SEP
from .package import Package

_ND_BITS = {"d0": 1, "d1": 2, "d2": 4, "d3": 8}  # d0 the last dim
_AXIS_BITS = {"rowcol": {"col": 1, "row": 2}, "rows": {"col": 1, "row": 2}, "nchw": {"hw": 1, "c": 2, "n": 4},
              "nd": _ND_BITS, "ndrows": _ND_BITS}


@dataclass
class Region:
    entry: str
    occurrence: int
    nodes: List[str]
    replaced: bool
    detail: str                      # the kernel taken, or why not
    shape: list = field(default_factory=list)
    op_id: int = -1
    sources: list = field(default_factory=list)   # per input: ("node"|"contiguous"|"matmul"|"attr", name)
    outputs: list = field(default_factory=list)   # the original FX nodes the kernel's outputs replace
    operator: str = ""                            # the operator the graph calls ("fusekit.launch_2_1.default")
    views: list = field(default_factory=list)     # the inputs (by position) the graph views as `shape` first

    def line(self):
        what = "kernel  " if self.replaced else "fallback"
        return f"{what} {self.entry}#{self.occurrence} [{', '.join(self.nodes)}] shape {self.shape}: {self.detail}"


class Fallback(Exception):
    """A region keeps its original ops; the message says why."""


def _fx(name):
    return name.split(SEP)[0]


def _val(node):
    v = node.meta.get("val") if isinstance(node, torch.fx.Node) else None
    return v if isinstance(v, torch.Tensor) else None


def _concrete(shape):
    return all(isinstance(d, int) for d in shape)


class _Region:
    """One occurrence resolved against the graph: FX nodes, input and output values."""

    def __init__(self, gm, graph_nodes, renamed, entry, occ):
        self.gm, self.entry, self.occ = gm, entry, occ
        self.by_name, self.renamed = graph_nodes, renamed
        parts = {}
        for n in occ.nodes:
            parts.setdefault(_fx(n), set()).add(n)
        missing = [n for n in parts if n not in graph_nodes]
        if missing:
            raise Fallback(f"nodes {missing} are not in this graph (a plan of another capture?)")
        self.whole, self.split = [], {}
        for name, held in parts.items():
            node = graph_nodes[name]
            if self._holds_all(node, held):
                self.whole.append(node)
            elif node.target.__name__.split(".")[0] in ("linear", "addmm") and held == {name}:
                self.split[name] = node  # only its bias Add
            else:
                raise Fallback(f"the region takes part of node '{name}' ({node.target}) only")

    @staticmethod
    def _holds_all(node, held):
        packet = node.target.__name__.split(".")[0] if hasattr(node.target, "__name__") else ""
        extra = {"linear": ["transpose", "matmul"], "addmm": ["matmul"], "rsqrt": ["sqrt"], "silu": ["sigmoid"]}
        need = {node.name} | {node.name + SEP + p for p in extra.get(packet, [])}
        bias = node.args[2] if len(node.args) > 2 else node.kwargs.get("bias")
        if packet == "linear" and bias is None:
            need.discard(node.name + SEP + "matmul")
        if packet in ("add", "sub") and node.kwargs.get("alpha", 1) != 1:
            need.add(node.name + SEP + "alpha")
        return need <= held

    def value(self, tensor):
        """The FX node holding a graph tensor that enters the region."""
        if tensor in self.renamed:
            return self.renamed[tensor]
        if tensor in self.by_name:
            return self.by_name[tensor]
        owner, _, part = tensor.partition(SEP)
        if owner in self.split and part == "matmul":
            return ("matmul_of", self.split[owner])
        node = self.by_name.get(owner)
        if node is not None and node in self.whole and part in ("scale", "shift") and _is_batch_norm(node):
            return _folded_batch_norm(self.gm, node, part)
        raise Fallback(f"input tensor '{tensor}' is not a value of the FX graph (a literal or an inner part)")


def _check_in_place(node, inside):
    """An in-place op (relu_, add_) in a region: its target must not be read
    after it, since the kernel writes a new tensor instead."""
    packet = node.target.__name__.split(".")[0]
    if not packet.endswith("_") or packet.startswith("_"):
        return
    target = node.args[0]
    order = {n: i for i, n in enumerate(node.graph.nodes)}
    later = [u.name for u in target.users if u is not node and order[u] > order[node] and u not in inside]
    if later:
        raise Fallback(f"'{node.name}' changes '{target.name}' in place and {later} read it afterwards")


def _is_batch_norm(node):
    return node.target.__name__.split(".")[0] in ("batch_norm", "_native_batch_norm_legit_no_training")


def _folded_batch_norm(gm, node, part):
    """Inference batch norm as x * scale[c] + shift[c]: the planner's folded
    constants BN::scale and BN::shift, computed from the module's own tensors
    and kept as buffers of the rewritten module."""
    name = f"fusekit_{node.name}_{part}"
    if not hasattr(gm, name):
        x, w, b, mean, var = node.args[:5]
        eps = node.args[7] if node.target.__name__.startswith("batch_norm") else node.args[6]

        def fetch(a, default):
            if a is None:
                return default
            if a.op != "get_attr":
                raise Fallback(f"batch norm '{node.name}' takes '{a.name}' from the graph, not a module tensor")
            return operator.attrgetter(a.target)(gm).detach()
        mean_t, var_t = fetch(mean, None), fetch(var, None)
        if mean_t is None or var_t is None:
            raise Fallback(f"batch norm '{node.name}' has no running statistics to fold")
        w_t, b_t = fetch(w, torch.ones_like(var_t)), fetch(b, torch.zeros_like(mean_t))
        scale = w_t.double() / torch.sqrt(var_t.double() + float(eps))
        shift = b_t.double() - mean_t.double() * scale
        dtype = _val(x).dtype
        gm.register_buffer(f"fusekit_{node.name}_scale", scale.to(dtype))
        gm.register_buffer(f"fusekit_{node.name}_shift", shift.to(dtype))
    g = gm.graph
    first = next(iter(g.nodes))
    with g.inserting_before(first):
        getter = g.get_attr(name)
    getter.meta["val"] = getattr(gm, name)
    return getter


def _check_value(entry, name, node, dtype):
    v = _val(node)
    if v is None:
        raise Fallback(f"'{name}' ({node.name}) is not a tensor")
    got = capture.dtype_name(v.dtype)
    if got != dtype:
        raise Fallback(f"'{name}' ({node.name}) is {got}; the kernel takes {dtype}")
    return v


def _axes_mask(entry, name):
    if name not in entry.broadcast:
        return 0
    bits = _AXIS_BITS.get(entry.layout, {})
    mask = 0
    for a in entry.broadcast[name]:
        if a not in bits:
            raise Fallback(f"input '{name}' is indexed by '{a}', not an axis of the {entry.layout} layout")
        mask |= bits[a]
    return mask


def _broadcast_numel(layout, shape, mask):
    if layout in ("nd", "ndrows"):
        dims = {1 << k: (shape[-1 - k] if k < len(shape) else 1) for k in range(4)}
    elif layout in ("rowcol", "rows"):
        dims = {1: shape[-1], 2: _prod(shape[:-1])}
    else:
        dims = {1: _prod(shape[2:]), 2: shape[1], 4: shape[0]}
    n = 1
    for bit, ext in dims.items():
        if mask & bit:
            n *= ext
    return n


def _prod(xs):
    p = 1
    for x in xs:
        p *= x
    return p


def _elements(layout, shape):
    n = _prod(shape)
    return n, (shape[-1] if layout in ("rows", "rowcol", "ndrows") and shape else None)


class Rewriter:
    def __init__(self, gm, plan, package_dir, arch=None, shapes="exact", allow_ptx=False, register=True,
                 symbols=None):
        self.gm, self.plan = gm, plan
        self.symbols = symbols or {}  # sympy symbol -> the capture's dim name, for messages
        self.package_dir = package_dir
        self.package = Package(package_dir)
        self.sm = _sm(arch)
        self.shapes, self.allow_ptx, self.register = shapes, allow_ptx, register
        self.regions: List[Region] = []
        self.renamed = {}  # tensor name -> the getitem that now holds it
        self.original = {}  # that getitem -> the tensor name
        self.copied = {}  # a strided input's node -> its contiguous copy, shared by every region that reads it

    def run(self):
        for entry in self.plan.entries:
            for k, occ in enumerate(entry.occurrences):
                try:
                    detail, shape, op_id, sources, outs, target, views = self._replace(entry, occ)
                    self.regions.append(Region(entry.name, k, occ.nodes, True, detail, shape, op_id, sources, outs,
                                               target, views))
                except Fallback as why:
                    self.regions.append(Region(entry.name, k, occ.nodes, False, str(why), list(occ.shape)))
        # A launch sits after its region's last node, so a user of an earlier
        # output may now precede it: order the graph before anything lints it.
        legalize_graph(self.gm)
        self.gm.graph.eliminate_dead_code()
        self.gm.graph.lint()
        self.gm.recompile()
        return self.regions

    def _replace(self, entry, occ):
        graph_nodes = {n.name: n for n in self.gm.graph.nodes}
        region = _Region(self.gm, graph_nodes, self.renamed, entry, occ)
        inputs = [region.value(occ.inputs[n]) for n in entry.input_names]
        outputs = [graph_nodes.get(occ.outputs[n]) for n in entry.output_names]
        inside = set(region.whole) | set(region.split.values())
        for name, node in zip(entry.output_names, outputs):
            if node is None or node not in inside:
                raise Fallback(f"output '{name}' ({occ.outputs[name]}) is not a node of the region")
        for node in region.whole:
            for user in node.users:
                if user not in inside and node not in outputs:
                    raise Fallback(f"node '{node.name}' is used by '{user.name}' outside the region "
                                   "but is not one of its outputs")
        for node in region.whole:
            _check_in_place(node, inside)
        full = entry.full_inputs()
        if not full:
            raise Fallback("no full-shape input to take the region's shape from")
        out_val = _check_value(entry, entry.output_names[0], outputs[0], entry.dtype)
        shape = list(out_val.shape)
        vals = {}
        for name, node in zip(entry.input_names, inputs):
            src = node[1].args[0] if isinstance(node, tuple) else node
            v = _val(src) if isinstance(node, tuple) else _check_value(entry, name, node, entry.dtype)
            if isinstance(node, tuple):
                v = out_val  # the matmul's output has the linear's shape and dtype
            vals[name] = v
        for name, node in zip(entry.output_names, outputs):
            _check_value(entry, name, node, entry.dtype)
        copies, views = self._check_shapes(entry, vals, shape)
        concrete = _concrete(shape)
        elements, rows = _elements(entry.layout, shape) if concrete else (None, None)
        choice = self.package.choose(entry.name, entry.dtype, self.sm, elements, rows, self.shapes, self.allow_ptx)
        if not choice.replace:
            raise Fallback(choice.reason)
        sources = [("contiguous", src[1]) if name in copies else src
                   for name, src in zip(entry.input_names, map(self._source, inputs))]
        outs = [node.name for node in outputs]
        op_id, target = self._splice(entry, region, inputs, outputs, out_val, (copies, views, shape))
        names = [d if isinstance(d, int) else self.symbols.get(str(d), str(d)) for d in shape]
        detail = choice.describe()
        if copies:
            detail += "; copies strided input " + ", ".join(f"'{n}'" for n in sorted(copies)) + " to contiguous first"
        if views:
            detail += "; views input " + ", ".join(f"'{n}'" for n in sorted(views)) + f" as {shape}"
        viewed = [i for i, name in enumerate(entry.input_names) if name in views]
        return detail, names, op_id, sources, outs, target, viewed

    def _source(self, node):
        if isinstance(node, tuple):
            return ("matmul", node[1].name)
        if node.op == "get_attr":
            return ("attr", node.target)
        return ("node", self.original.get(node, node.name))

    def _check_shapes(self, entry, vals, shape):
        """Checks each input against the region's shape; returns the names of
        full-shape inputs that are strided views (a head split's transpose):
        the rewrite copies them to contiguous before the kernel, one copy
        against the several kernels the region's ops would launch; and of
        those whose shape is the region's without its leading 1s (the decode
        step's [hidden] weight over a [1, 1, hidden] row), which it views as
        the region's shape."""
        copies, views = set(), set()
        for name, v in vals.items():
            mask = _axes_mask(entry, name)
            if mask == 0:
                if list(v.shape) != shape:
                    if not (_concrete(shape) and _strip_ones(v.shape) == _strip_ones(shape)):
                        raise Fallback(f"input '{name}' has shape {list(v.shape)}, the region {shape}")
                    views.add(name)
                if entry.layout != "flat" and not v.is_contiguous():
                    # Channels-last stays as it is: a copy there would also change what the next conv reads.
                    if v.dim() == 4 and v.is_contiguous(memory_format=torch.channels_last):
                        raise Fallback(f"input '{name}' is channels-last; the {entry.layout} "
                                       "kernel indexes a contiguous tensor")
                    copies.add(name)
            elif _concrete(shape) and v.numel() != _broadcast_numel(entry.layout, shape, mask):
                raise Fallback(f"input '{name}' has {v.numel()} elements; the kernel indexes "
                               f"{_broadcast_numel(entry.layout, shape, mask)} for axes {entry.broadcast[name]}")
        return copies, views

    def _splice(self, entry, region, inputs, outputs, out_val, adapt):
        """Replaces the region by one operator call; `adapt` is (copies, views, shape) of _check_shapes."""
        copies, views, shape = adapt
        from . import ops
        occ = region.occ
        op_id = -1
        if self.register:
            names = [f"{n} ({occ.inputs[n]})" for n in entry.input_names]
            op_id = ops.register_op(self.package_dir, entry.name, entry.dtype, entry.layout, names,
                                    [_axes_mask(entry, n) for n in entry.input_names],
                                    [f"{n} ({occ.outputs[n]})" for n in entry.output_names],
                                    [entry.params[p] for p in entry.params])
        g = self.gm.graph
        last = max(list(region.whole) + list(region.split.values()), key=_position(g))
        with g.inserting_after(last):
            args = []
            for name, node in zip(entry.input_names, inputs):
                if isinstance(node, tuple):
                    args.append(_bias_free(g, node[1]))
                else:
                    arg = self._copy_of(g, node) if name in copies else node
                    args.append(_view(g, arg, shape) if name in views else arg)
            # The graph calls the operator itself (no Python wrapper): the fixed arity where the family has it.
            target = ops.operator(len(args), len(outputs))
            launch = g.call_function(target, ops.call_args(target, op_id, args))
            launch.meta["fusekit_entry"] = entry.name
        vals = [o.meta.get("val") for o in outputs]
        if ops.is_fixed(target) and len(outputs) == 1:
            holders = [launch]  # returns the Tensor itself: no getitem
            launch.meta["val"] = vals[0]
        else:
            with g.inserting_after(launch):
                holders = [g.call_function(operator.getitem, (launch, k)) for k in range(len(outputs))]
            launch.meta["val"] = tuple(vals) if ops.is_fixed(target) else vals
        for node, holder, val in zip(outputs, holders, vals):
            holder.meta["val"] = val
            node.replace_all_uses_with(holder)
            self.renamed[node.name] = holder
            self.original[holder] = node.name
        for node in sorted(list(region.whole) + list(region.split.values()), key=_position(g), reverse=True):
            if not node.users:
                g.erase_node(node)
        return op_id, str(target)

    def _copy_of(self, g, node):
        """The contiguous copy of `node`: one per tensor however many regions read it
        (legalize_graph later orders it before every reader)."""
        if node not in self.copied:
            self.copied[node] = _contiguous(g, node)
        return self.copied[node]


def _strip_ones(dims):
    """The dims without their leading 1s: [2048] and [1, 1, 2048] hold the same elements in the same order."""
    dims = list(dims)
    while dims and dims[0] == 1:
        dims.pop(0)
    return dims


def _view(g, node, shape):
    """`node`'s tensor viewed as `shape` (the same elements, leading 1s added), inserted at the current point."""
    view = g.call_function(torch.ops.aten.reshape.default, (node, list(shape)))
    v = _val(node)
    if v is not None:
        view.meta["val"] = v.reshape(shape)
    return view


def _bias_free(g, node):
    """The linear/addmm `node` without its bias: the matmul the kernel's bias input follows."""
    packet = node.target.__name__.split(".")[0]
    with g.inserting_before(node):
        if packet == "linear":
            mm = g.call_function(torch.ops.aten.linear.default, (node.args[0], node.args[1]))
        else:
            mm = g.call_function(torch.ops.aten.mm.default, (node.args[1], node.args[2]))
    mm.meta["val"] = node.meta.get("val")
    return mm


def _contiguous(g, node):
    """A contiguous copy of `node`'s tensor, inserted at the current point."""
    copy = g.call_function(torch.ops.aten.clone.default, (node,), {"memory_format": torch.contiguous_format})
    v = _val(node)
    if v is not None:
        copy.meta["val"] = v.clone(memory_format=torch.contiguous_format)
    return copy


def _position(g):
    order = {n: i for i, n in enumerate(g.nodes)}
    return lambda n: order.get(n, -1)


def _sm(arch):
    if arch is not None:
        text = str(arch)
        return int(text[3:]) if text.startswith("sm_") else int(text)
    if torch.cuda.is_available():
        major, minor = torch.cuda.get_device_capability()
        return major * 10 + minor
    return None
