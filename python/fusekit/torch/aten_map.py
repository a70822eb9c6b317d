"""ATen ops (torch.export's FX graph) onto ONNX-named graph nodes (GRAPH_FORMATS.md).

Each handler gets the FX node and a writer, and emits one or more graph
nodes. A node that becomes several is named NODE (the one producing the FX
node's value) and NODE::part for the others, so the rewrite maps every graph
node name back to its FX node by cutting at '::'. Anything not listed is an
`Opaque` node: the partitioner keeps it as a boundary.
"""

SEP = "::"

_BINARY = {"add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div", "pow": "Pow", "maximum": "Max",
           "minimum": "Min", "gt": "Greater", "lt": "Less", "ge": "GreaterOrEqual", "le": "LessOrEqual",
           "eq": "Equal"}
_UNARY = {"neg": "Neg", "exp": "Exp", "log": "Log", "tanh": "Tanh", "sigmoid": "Sigmoid", "relu": "Relu",
          "erf": "Erf", "sqrt": "Sqrt", "abs": "Abs", "reciprocal": "Reciprocal", "cos": "Cos", "sin": "Sin"}
_IDENTITY = {"clone", "contiguous", "alias", "detach", "dropout", "lift_fresh_copy"}
_REDUCE = {"mean": "ReduceMean", "sum": "ReduceSum", "amax": "ReduceMax", "amin": "ReduceMin"}
_MATMUL = {"mm", "bmm", "matmul"}
_IN_PLACE = set(_BINARY) | set(_UNARY) | {"silu", "gelu", "clamp", "hardtanh"}


def _arg(node, i, name, default=None):
    if len(node.args) > i:
        return node.args[i]
    return node.kwargs.get(name, default)


def _binary(w, n, op):
    a, b = n.args[0], n.args[1]
    alpha = n.kwargs.get("alpha", 1)
    like = w.dtype_of(a) or w.dtype_of(b)
    ta, tb = w.value(a, like, n, 0), w.value(b, like, n, 1)
    if alpha != 1:
        scaled = w.tmp(n, "alpha", w.dtype_of(b) or like, w.shape_of(b))
        w.emit(n.name + SEP + "alpha", "Mul", [tb, w.scalar(alpha, like, n, "alpha_value")], [scaled])
        tb = scaled
    w.emit(n.name, op, [ta, tb], [w.out(n)])


def _rsub(w, n):
    like = w.dtype_of(n.args[0])
    w.emit(n.name, "Sub", [w.value(n.args[1], like, n, 1), w.value(n.args[0], like, n, 0)], [w.out(n)])


def _unary(w, n, op):
    w.emit(n.name, op, [w.value(n.args[0], None, n, 0)], [w.out(n)])


def _rsqrt(w, n):
    x = w.value(n.args[0], None, n, 0)
    s = w.tmp(n, "sqrt", w.dtype_of(n), w.shape_of(n))
    w.emit(n.name + SEP + "sqrt", "Sqrt", [x], [s])
    w.emit(n.name, "Reciprocal", [s], [w.out(n)])


def _silu(w, n):
    x = w.value(n.args[0], None, n, 0)
    s = w.tmp(n, "sigmoid", w.dtype_of(n), w.shape_of(n))
    w.emit(n.name + SEP + "sigmoid", "Sigmoid", [x], [s])
    w.emit(n.name, "Mul", [x, s], [w.out(n)])


def _gelu(w, n):
    approximate = n.kwargs.get("approximate", _arg(n, 1, "approximate", "none"))
    w.emit(n.name, "Gelu", [w.value(n.args[0], None, n, 0)], [w.out(n)], {"approximate": approximate})


def _clamp(w, n, lo=None, hi=None):
    like = w.dtype_of(n.args[0])
    if lo is None and hi is None:
        lo, hi = _arg(n, 1, "min"), _arg(n, 2, "max")
    ins = [w.value(n.args[0], like, n, 0),
           w.scalar(lo, like, n, "min") if lo is not None else "",
           w.scalar(hi, like, n, "max") if hi is not None else ""]
    while ins and ins[-1] == "":
        ins.pop()
    w.emit(n.name, "Clip", ins, [w.out(n)])


def _where(w, n):
    like = w.dtype_of(n)
    w.emit(n.name, "Where", [w.value(n.args[0], None, n, 0), w.value(n.args[1], like, n, 1),
                             w.value(n.args[2], like, n, 2)], [w.out(n)])


def _cast(w, n):
    src, dst = w.dtype_of(n.args[0]), w.dtype_of(n)
    x = w.value(n.args[0], None, n, 0)
    if src == dst:
        w.emit(n.name, "Identity", [x], [w.out(n)])
    else:
        w.emit(n.name, "Cast", [x], [w.out(n)], {"to": dst})


def _identity(w, n):
    w.emit(n.name, "Identity", [w.value(n.args[0], None, n, 0)], [w.out(n)])


def _reshape(w, n):
    shape = w.shape_of(n)
    symbolic = [d for d in shape if not isinstance(d, int)]
    values = [d if isinstance(d, int) else -1 for d in shape] if len(symbolic) <= 1 else None
    c = w.constant(n.name + SEP + "shape", "i64", [len(shape)], values)
    w.emit(n.name, "Reshape", [w.value(n.args[0], None, n, 0), c], [w.out(n)], {"shape": shape})


def _permute(w, n):
    if n.target.__name__.startswith("t."):
        perm = [1, 0]
    elif n.target.__name__.startswith("transpose"):
        rank = len(w.shape_of(n))
        d0, d1 = (d % rank for d in n.args[1:3])
        perm = list(range(rank))
        perm[d0], perm[d1] = perm[d1], perm[d0]
    else:
        perm = list(n.args[1])
    w.emit(n.name, "Transpose", [w.value(n.args[0], None, n, 0)], [w.out(n)], {"perm": perm})


def _unsqueeze(w, n):
    c = w.constant(n.name + SEP + "axes", "i64", [1], [int(n.args[1])])
    w.emit(n.name, "Unsqueeze", [w.value(n.args[0], None, n, 0), c], [w.out(n)])


def _linear(w, n, x, weight, bias):
    """x @ weight^T (+ bias): the bias Add a node of its own, so the planner
    may take it into a following elementwise region (bias+GELU)."""
    wt = w.tmp(n, "weight_t", w.dtype_of(weight), list(reversed(w.shape_of(weight))))
    w.emit(n.name + SEP + "transpose", "Transpose", [w.value(weight, None, n, 1)], [wt], {"perm": [1, 0]})
    if bias is None:
        w.emit(n.name, "MatMul", [w.value(x, None, n, 0), wt], [w.out(n)])
        return
    mm = w.tmp(n, "matmul", w.dtype_of(n), w.shape_of(n))
    w.emit(n.name + SEP + "matmul", "MatMul", [w.value(x, None, n, 0), wt], [mm])
    w.emit(n.name, "Add", [mm, w.value(bias, None, n, 2)], [w.out(n)])


def _addmm(w, n):
    mm = w.tmp(n, "matmul", w.dtype_of(n), w.shape_of(n))
    w.emit(n.name + SEP + "matmul", "MatMul", [w.value(n.args[1], None, n, 1), w.value(n.args[2], None, n, 2)], [mm])
    w.emit(n.name, "Add", [mm, w.value(n.args[0], None, n, 0)], [w.out(n)])


def _layer_norm(w, n):
    x, shape, weight, bias = n.args[0], n.args[1], _arg(n, 2, "weight"), _arg(n, 3, "bias")
    eps = _arg(n, 4, "eps", 1e-5)
    ins = [w.value(x, None, n, 0)] + [w.value(t, None, n, i) if t is not None else "" for i, t in
                                      ((2, weight), (3, bias))]
    while ins[-1] == "":
        ins.pop()
    w.emit(n.name, "LayerNormalization", ins, w.outs(n), {"axis": -len(shape), "epsilon": float(eps)})


def _batch_norm(w, n):
    name = n.target.__name__
    x, weight, bias, mean, var = n.args[:5]
    if name.startswith("batch_norm"):
        momentum, eps = _arg(n, 6, "momentum", 0.1), _arg(n, 7, "eps", 1e-5)
    else:  # _native_batch_norm_legit_no_training(x, w, b, mean, var, momentum, eps)
        momentum, eps = _arg(n, 5, "momentum", 0.1), _arg(n, 6, "eps", 1e-5)
    ins = [w.value(t, None, n, i) for i, t in enumerate((x, weight, bias, mean, var))]
    w.emit(n.name, "BatchNormalization", ins, w.outs(n), {"epsilon": float(eps), "momentum": float(momentum)})


def _softmax(w, n, op):
    w.emit(n.name, op, [w.value(n.args[0], None, n, 0)], [w.out(n)], {"axis": int(n.args[1])})


def _reduce(w, n, op):
    dims = _arg(n, 1, "dim")
    dims = [dims] if isinstance(dims, int) else list(dims or [])
    keep = _arg(n, 2, "keepdim", False)
    w.emit(n.name, op, [w.value(n.args[0], None, n, 0)], [w.out(n)], {"axes": dims, "keepdims": int(bool(keep))})


def _conv(w, n):
    x, weight, bias = n.args[0], n.args[1], _arg(n, 2, "bias")
    stride, padding, dilation = (list(_arg(n, i, k, d)) for i, k, d in
                                 ((3, "stride", [1, 1]), (4, "padding", [0, 0]), (5, "dilation", [1, 1])))
    groups = _arg(n, 8 if n.target.__name__.startswith("convolution") else 6, "groups", 1)
    if isinstance(padding, str):
        raise NotImplementedError
    ins = [w.value(x, None, n, 0), w.value(weight, None, n, 1)] + ([w.value(bias, None, n, 2)] if bias is not None else [])
    w.emit(n.name, "Conv", ins, [w.out(n)], {"strides": stride, "pads": padding + padding,
                                             "dilations": dilation, "group": int(groups)})


def lower(w, n):
    """Emits the graph nodes for one FX call_function node."""
    full = n.target.__name__          # "add.Tensor"
    packet = full.split(".")[0]       # "add"
    if packet.endswith("_") and not packet.startswith("_") and packet[:-1] in _IN_PLACE:
        packet = packet[:-1]          # relu_, add_: the value is the out-of-place op's
    if packet in _BINARY:
        return _binary(w, n, _BINARY[packet])
    if packet == "rsub":
        return _rsub(w, n)
    if packet in _UNARY:
        return _unary(w, n, _UNARY[packet])
    if packet == "rsqrt":
        return _rsqrt(w, n)
    if packet == "silu":
        return _silu(w, n)
    if packet == "gelu":
        return _gelu(w, n)
    if packet in ("clamp", "hardtanh", "relu6"):
        bounds = {"hardtanh": (_arg(n, 1, "min_val", -1.0), _arg(n, 2, "max_val", 1.0)), "relu6": (0.0, 6.0)}
        return _clamp(w, n, *bounds.get(packet, (None, None)))
    if packet == "where" and full == "where.self":
        return _where(w, n)
    if packet in ("to", "_to_copy", "type_as") and w.is_tensor(n):
        return _cast(w, n)
    if packet in _IDENTITY:
        return _identity(w, n)
    if packet in ("view", "reshape", "_unsafe_view", "flatten", "squeeze", "expand"):
        return _reshape(w, n)
    if packet in ("permute", "transpose", "t"):
        return _permute(w, n)
    if packet == "unsqueeze":
        return _unsqueeze(w, n)
    if packet == "linear":
        return _linear(w, n, n.args[0], n.args[1], _arg(n, 2, "bias"))
    if packet == "addmm":
        return _addmm(w, n)
    if packet in _MATMUL:
        return w.emit(n.name, "MatMul", [w.value(n.args[0], None, n, 0), w.value(n.args[1], None, n, 1)], [w.out(n)])
    if packet in ("layer_norm", "native_layer_norm"):
        return _layer_norm(w, n)
    if packet in ("batch_norm", "_native_batch_norm_legit_no_training"):
        return _batch_norm(w, n)
    if packet in ("softmax", "_softmax"):
        return _softmax(w, n, "Softmax")
    if packet in ("log_softmax", "_log_softmax"):
        return _softmax(w, n, "LogSoftmax")
    if packet in _REDUCE and "dim" in full or packet == "amax":
        return _reduce(w, n, _REDUCE[packet])
    if packet == "cat":
        ins = [w.value(t, None, n, i) for i, t in enumerate(n.args[0])]
        return w.emit(n.name, "Concat", ins, [w.out(n)], {"axis": int(_arg(n, 1, "dim", 0))})
    if packet in ("conv2d", "convolution"):
        try:
            return _conv(w, n)
        except NotImplementedError:
            pass
    w.opaque(n)
