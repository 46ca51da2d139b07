"""``nn.MultiheadAttention`` in scripted code: its forward written in the TorchScript subset
(compiled with ``self`` the layer), for the packed in-projection (query, key and value of one
embedding size): projections, heads, ``scaled_dot_product_attention`` (an op-table row) or,
when the weights are asked for, the explicit softmax; masks as PyTorch takes them (boolean:
True is masked out; float: added).
"""

from __future__ import annotations

# ruff: noqa: UP006, UP045 - Optional/Tuple: the TorchScript spelling of the source below
from typing import Optional, Tuple  # noqa: UP035

import ember
import ember.nn.functional as F
from ember import Tensor

from . import builtins as lib


def _additive(mask: Optional[Tensor], like):
    if mask is None:
        return mask
    if mask.dtype == ember.bool:
        return ember.zeros_like(like).masked_fill(mask, float("-inf"))
    return mask


def _heads(x, w, b: Optional[Tensor], heads: int):
    """(L, N, E) projected and split into heads: (N, heads, L, E / heads)."""
    return F.linear(x, w, b).reshape(x.size(0), x.size(1), heads, -1).permute(1, 2, 0, 3)


def mha_forward(
    self,
    query,
    key,
    value,
    key_padding_mask: Optional[Tensor] = None,
    need_weights: bool = True,
    attn_mask: Optional[Tensor] = None,
    average_attn_weights: bool = True,
    is_causal: bool = False,
) -> Tuple[Tensor, Optional[Tensor]]:
    if self.batch_first:
        query = query.transpose(0, 1)
        key = key.transpose(0, 1)
        value = value.transpose(0, 1)
    length = query.size(0)
    batch = query.size(1)
    source = key.size(0)
    heads = self.num_heads
    w_q, w_k, w_v = self.in_proj_weight.chunk(3, 0)
    b_q: Optional[Tensor] = None
    b_k: Optional[Tensor] = None
    b_v: Optional[Tensor] = None
    if self.in_proj_bias is not None:
        b_q, b_k, b_v = self.in_proj_bias.chunk(3, 0)
    q = _heads(query, w_q, b_q, heads)
    k = _heads(key, w_k, b_k, heads)
    v = _heads(value, w_v, b_v, heads)
    scores_like = ember.zeros(batch, heads, length, source, dtype=q.dtype, device=q.device)
    mask = _additive(attn_mask, scores_like)
    if key_padding_mask is not None:
        padding = _additive(key_padding_mask, ember.zeros(batch, source, dtype=q.dtype))
        padding = padding.reshape(batch, 1, 1, source)
        if mask is None:
            mask = padding
        else:
            mask = mask + padding
    p = self.dropout if self.training else 0.0
    weights: Optional[Tensor] = None
    if need_weights:
        scores = ember.matmul(q, k.transpose(-2, -1)) * (q.size(-1) ** -0.5)
        if mask is not None:
            scores = scores + mask
        attention = F.softmax(scores, dim=-1)
        weights = attention.mean(1) if average_attn_weights else attention
        attention = F.dropout(attention, p, self.training)
        out = ember.matmul(attention, v)
    else:
        out = F.scaled_dot_product_attention(q, k, v, mask, p, is_causal)
    out = out.permute(2, 0, 1, 3).reshape(length, batch, -1)
    out = F.linear(out, self.out_proj.weight, self.out_proj.bias)
    if self.batch_first:
        out = out.transpose(0, 1)
    return out, weights


def lower(em, ref, args, kwargs):
    m = ref.module
    if not m._qkv_same_embed_dim or m.bias_k is not None or m.add_zero_attn:
        raise lib.BindError(
            "MultiheadAttention with kdim/vdim, add_bias_kv or add_zero_attn isn't supported "
            "by ember.jit.script"
        )
    return em.unit.call_function(em, mha_forward, args, kwargs, em.current, self_ref=ref)


lower.source = mha_forward
