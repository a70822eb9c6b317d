"""The graph JSON form (`*.fkgraph.json`) shared with `fusekit plan`: a checker.

The form is fixed in GRAPH_FORMATS.md (docs/graph_ir.md once the C++ reader
lands); check() raises ValueError naming the first offending field, so a
capture bug shows as a message, not as a confusing error inside the planner.
"""

DTYPES = ("f32", "f16", "bf16", "f64", "i64", "i32", "i8", "u8", "bool")


def _check_shape(where, shape):
    if shape is None:
        return
    if not isinstance(shape, list):
        raise ValueError(f"{where}: shape must be a list or null, got {shape!r}")
    for d in shape:
        ok = d is None or isinstance(d, str) or (isinstance(d, int) and not isinstance(d, bool) and d >= 0)
        if not ok:
            raise ValueError(f"{where}: dimension {d!r} is not an int >= 0, a symbol name or null")


def _check_tensor(where, t, constant):
    if not isinstance(t, dict):
        raise ValueError(f"{where}: must be an object")
    if t.get("dtype") not in DTYPES:
        raise ValueError(f"{where}: dtype {t.get('dtype')!r} is not one of {', '.join(DTYPES)}")
    _check_shape(where, t.get("shape"))
    if constant and "values" in t:
        values, shape = t["values"], t.get("shape") or []
        count = 1
        for d in shape:
            count *= d if isinstance(d, int) else 0
        if not isinstance(values, list) or len(values) != count:
            raise ValueError(f"{where}: {len(values) if isinstance(values, list) else values!r} values "
                             f"for shape {shape}")


def check(graph):
    """Raises ValueError if `graph` (parsed JSON) is not a well-formed fusekit graph."""
    if graph.get("format") != "fusekit-graph" or graph.get("version") != 1:
        raise ValueError("not a fusekit-graph version 1 document (format/version fields)")
    for key, kind in (("name", str), ("inputs", list), ("outputs", list), ("tensors", dict),
                      ("constants", dict), ("nodes", list)):
        if not isinstance(graph.get(key), kind):
            raise ValueError(f"field '{key}' missing or not a {kind.__name__}")
    tensors, constants = graph["tensors"], graph["constants"]
    for name, t in tensors.items():
        _check_tensor(f"tensors.{name}", t, constant=False)
    for name, t in constants.items():
        _check_tensor(f"constants.{name}", t, constant=True)
    defined = set(graph["inputs"]) | set(constants)
    for name in graph["inputs"]:
        if name not in tensors:
            raise ValueError(f"input '{name}' has no entry in tensors")
    names = set()
    for i, node in enumerate(graph["nodes"]):
        where = f"nodes[{i}] ({node.get('name')!r})"
        if not isinstance(node.get("name"), str) or not isinstance(node.get("op"), str):
            raise ValueError(f"{where}: needs a string name and op")
        if node["name"] in names:
            raise ValueError(f"{where}: node name used twice")
        names.add(node["name"])
        if not isinstance(node.get("attrs", {}), dict):
            raise ValueError(f"{where}: attrs must be an object")
        for t in node.get("inputs", []):
            if t != "" and t not in defined:
                raise ValueError(f"{where}: input '{t}' is not a graph input, constant or earlier output "
                                 "(nodes must be in topological order)")
        for t in node.get("outputs", []):
            if t not in tensors:
                raise ValueError(f"{where}: output '{t}' has no entry in tensors")
            if t in defined:
                raise ValueError(f"{where}: output '{t}' is defined twice")
            defined.add(t)
    for name in graph["outputs"]:
        if name not in defined:
            raise ValueError(f"graph output '{name}' is never defined")
    return graph
