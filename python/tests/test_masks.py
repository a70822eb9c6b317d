"""Constant attention masks that torch.export materializes are folded: an
all-allowing one dropped, a causal one turned into is_causal; a mask that
depends on an input stays."""

import torch
import torch.nn.functional as F

from fusekit.torch import export

SDPA = torch.ops.aten.scaled_dot_product_attention.default


class Attention(torch.nn.Module):
    def __init__(self, mask_kind):
        super().__init__()
        self.mask_kind = mask_kind

    def mask(self, q, pad):
        n = q.shape[-2]
        i, j = torch.arange(n, device=q.device), torch.arange(n, device=q.device)
        if self.mask_kind == "all":
            return (j[None, :] >= 0).expand(n, n)[None, None]
        if self.mask_kind == "causal":
            return (i[:, None] >= j[None, :])[None, None].expand(q.shape[0], 1, n, n)
        if self.mask_kind == "additive":
            return torch.where(i[:, None] >= j[None, :], 0.0, float("-inf")).to(q.dtype)[None, None]
        if self.mask_kind == "band":
            return ((i[:, None] - j[None, :]).abs() <= 2)[None, None]
        return pad[:, None, None, :] > 0  # padding: depends on an input

    def forward(self, q, k, v, pad):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=self.mask(q, pad))


def _inputs():
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 3, 9, 8) for _ in range(3))
    pad = torch.ones(2, 9)
    pad[1, 6:] = 0
    return q, k, v, pad


def _sdpa(gm):
    (node,) = [n for n in gm.graph.nodes if n.target is SDPA]
    mask = node.args[3] if len(node.args) > 3 else node.kwargs.get("attn_mask")
    causal = node.args[5] if len(node.args) > 5 else node.kwargs.get("is_causal", False)
    return mask, causal


def _check(kind, mask_kept, causal):
    m, inputs = Attention(kind), _inputs()
    gm, _ = export(m, inputs)
    got_mask, got_causal = _sdpa(gm)
    assert (got_mask is not None) == mask_kept, gm.code
    assert bool(got_causal) == causal
    torch.testing.assert_close(gm(*inputs), m(*inputs))


def test_a_mask_that_allows_everything_is_dropped():
    _check("all", mask_kept=False, causal=False)


def test_a_causal_mask_becomes_is_causal():
    _check("causal", mask_kept=False, causal=True)


def test_an_additive_causal_mask_becomes_is_causal():
    _check("additive", mask_kept=False, causal=True)


def test_another_constant_mask_stays():
    _check("band", mask_kept=True, causal=False)


def test_a_mask_from_an_input_stays():
    _check("padding", mask_kept=True, causal=False)


def test_the_mask_ops_leave_the_graph():
    gm, _ = export(Attention("causal"), _inputs())
    assert not [n for n in gm.graph.nodes if n.target in (torch.ops.aten.arange.default, torch.ops.aten.ge.Tensor)]
