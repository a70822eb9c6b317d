"""Reading the plan `fusekit plan` writes (GRAPH_FORMATS.md): entries, their
occurrences, and what the package op behind each entry is called with."""

import json
import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional

_INDEXED = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)\s*\[\s*([A-Za-z0-9_, ]+)\]")
_REDUCTIONS = re.compile(r"\b(row_sum|row_max|row_mean|sum|mean|softmax|log_softmax|layernorm|rmsnorm)\s*\(")
_PARAM = re.compile(r"^\s*param\s+([A-Za-z_][A-Za-z0-9_]*)\s*=\s*([-+0-9.eE]+)\s*$")

# The package's layouts and the axis names of the expression language.
LAYOUTS = ("flat", "rowcol", "nchw", "rows", "nd", "ndrows")


@dataclass
class Occurrence:
    nodes: List[str]
    inputs: Dict[str, str]
    outputs: Dict[str, str]
    shape: list


@dataclass
class Entry:
    name: str
    expr: str
    dtype: str
    sizes: List[str]
    occurrences: List[Occurrence]
    layout: str = "flat"
    input_names: List[str] = field(default_factory=list)
    output_names: List[str] = field(default_factory=list)
    broadcast: Dict[str, List[str]] = field(default_factory=dict)  # input -> axes it is indexed by
    params: Dict[str, float] = field(default_factory=dict)

    def full_inputs(self):
        return [n for n in self.input_names if n not in self.broadcast]


@dataclass
class Plan:
    model: str
    dims: Dict[str, list]
    entries: List[Entry]
    unsupported: list
    boundaries: list
    raw: dict


def infer_layout(expr: str, declared: Optional[str] = None) -> str:
    """The package layout of an expression: the entry's own `layout` when the
    planner wrote one, else from the axis names and reductions it uses."""
    if declared:
        if declared not in LAYOUTS:
            raise ValueError(f"plan entry layout '{declared}' is not one of {', '.join(LAYOUTS)}")
        return declared
    axes = {a.strip() for _, group in _INDEXED.findall(expr) for a in group.split(",")}
    nd = bool(axes & {"d0", "d1", "d2", "d3"})
    if _REDUCTIONS.search(expr):
        return "ndrows" if nd else "rows"
    if nd:
        return "nd"
    if axes & {"n", "c", "hw"}:
        return "nchw"
    if axes & {"row", "col"}:
        return "rowcol"
    return "flat"


def _entry(raw: dict) -> Entry:
    for key in ("name", "expr", "dtype", "occurrences"):
        if key not in raw:
            raise ValueError(f"plan entry {raw.get('name', '?')!r} has no '{key}'")
    occs = [Occurrence(list(o["nodes"]), dict(o.get("inputs", {})), dict(o.get("outputs", {})),
                       list(o.get("shape") or [])) for o in raw["occurrences"]]
    e = Entry(raw["name"], raw["expr"], raw["dtype"], list(raw.get("sizes", [])), occs,
              layout=infer_layout(raw["expr"], raw.get("layout")))
    for line in re.split(r"[;\n]", raw["expr"]):
        m = _PARAM.match(line)
        if m:
            e.params[m.group(1)] = float(m.group(2))
    for name, group in _INDEXED.findall(raw["expr"]):
        e.broadcast[name] = [a.strip() for a in group.split(",")]
    # The expression's own order (inputs, outputs) is what the package takes;
    # the planner writes the occurrence maps in that order (GRAPH_FORMATS.md).
    first = occs[0] if occs else Occurrence([], {}, {}, [])
    e.input_names = list(raw.get("input_order", first.inputs.keys()))
    e.output_names = list(raw.get("output_order", first.outputs.keys()))
    return e


def load_plan(source) -> Plan:
    """A plan from a path or an already parsed dict; ValueError on a malformed one."""
    raw = source
    if not isinstance(source, dict):
        with open(source) as f:
            raw = json.load(f)
    if raw.get("format") != "fusekit-plan" or raw.get("version") != 1:
        raise ValueError("not a fusekit-plan version 1 document (format/version fields)")
    return Plan(raw.get("model", ""), dict(raw.get("dims", {})), [_entry(e) for e in raw.get("entries", [])],
                list(raw.get("unsupported", [])), list(raw.get("boundaries", [])), raw)
