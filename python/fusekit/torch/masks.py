"""Attention masks that torch.export materializes from constants.

HF transformers skips the attention mask in eager mode when it can see that
the mask allows everything (BERT without padding) or is plain causal (GPT-2,
Llama), so SDPA takes its flash kernel. Under torch.export it cannot look at
values, so the graph builds the mask from arange/compare ops and hands it to
SDPA, which then falls back to a slower kernel (or the math path). For static
shapes such a mask is a constant: this pass computes it once and, where it
allows everything, drops it, where it is the causal triangle, turns it into
is_causal=True. A mask that depends on an input (padding, a KV cache
position) stays as it is.
"""

import torch

_SDPA = (torch.ops.aten.scaled_dot_product_attention.default,)


def _ancestors(node):
    """Every node `node` depends on, or None if one is an input or a module tensor (not an op)."""
    seen, stack = {}, [node]
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        if n.op != "call_function":
            return None
        seen[n] = True
        stack.extend(n.all_input_nodes)
    return seen


def _evaluate(gm, mask):
    """The mask's value, computed from its constant-only subgraph."""
    nodes = _ancestors(mask)
    if nodes is None:
        return None
    order = [n for n in gm.graph.nodes if n in nodes]
    g = torch.fx.Graph()
    env = {}
    for n in order:
        env[n] = g.node_copy(n, lambda a: env[a])
    g.output(env[mask])
    try:
        with torch.no_grad():
            value = torch.fx.GraphModule(gm, g)()
    except Exception:  # a subgraph that does not run on its own is left alone
        return None
    return value if isinstance(value, torch.Tensor) else None


def _kind(mask, q_len, k_len):
    """'all' (allows everything), 'causal' (the lower triangle) or None."""
    if mask.dtype == torch.bool:
        allowed = mask
    else:  # an additive mask: 0 allows, -inf (or the dtype's lowest) blocks
        blocked = mask <= torch.finfo(mask.dtype).min / 2
        if not (blocked | (mask == 0)).all():
            return None
        allowed = ~blocked
    if bool(allowed.all()):
        return "all"
    if q_len == k_len and allowed.dim() >= 2 and tuple(allowed.shape[-2:]) == (q_len, k_len):
        tri = torch.ones(q_len, k_len, dtype=torch.bool, device=allowed.device).tril()
        if bool((allowed == tri).all()):
            return "causal"
    return None


def elide_constant_masks(gm):
    """Rewrites gm's SDPA calls whose mask is a constant; returns how many."""
    done = 0
    kinds = {}
    for n in list(gm.graph.nodes):
        if n.op != "call_function" or n.target not in _SDPA:
            continue
        mask = n.args[3] if len(n.args) > 3 else n.kwargs.get("attn_mask")
        causal = (n.args[5] if len(n.args) > 5 else n.kwargs.get("is_causal", False))
        if not isinstance(mask, torch.fx.Node) or causal:
            continue
        q, k = n.args[0].meta.get("val"), n.args[1].meta.get("val")
        if q is None or k is None or not all(isinstance(d, int) for d in (*q.shape, *k.shape)):
            continue
        key = (mask, q.shape[-2], k.shape[-2])
        if key not in kinds:
            value = _evaluate(gm, mask)
            kinds[key] = None if value is None else _kind(value, q.shape[-2], k.shape[-2])
        kind = kinds[key]
        if kind is None:
            continue
        args, kwargs = list(n.args), dict(n.kwargs)
        if len(args) > 3:
            args[3] = None
        kwargs.pop("attn_mask", None)
        if kind == "causal":
            if len(args) > 5:
                args[5] = True
            else:
                kwargs["is_causal"] = True
        n.args, n.kwargs = tuple(args), kwargs
        done += 1
    if done:
        gm.graph.eliminate_dead_code()
        gm.graph.lint()
        gm.recompile()
    return done
