"""Scaled dot-product attention."""

from __future__ import annotations

import math

import ember

from .activation import softmax
from .linear import dropout


def scaled_dot_product_attention(
    query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False
):
    """``softmax(Q K^T * scale + mask) V`` over the last two dims; ``is_causal`` masks the future.

    Shapes: query (..., L, E), key (..., S, E), value (..., S, Ev) -> (..., L, Ev).
    """
    if query.shape[-1] != key.shape[-1]:
        raise RuntimeError(
            f"scaled_dot_product_attention: query {list(query.shape)} and key {list(key.shape)} "
            "must share the embedding size"
        )
    if enable_gqa and query.ndim >= 3 and key.shape[-3] != query.shape[-3]:
        repeat = query.shape[-3] // key.shape[-3]
        key = key.repeat_interleave(repeat, -3)
        value = value.repeat_interleave(repeat, -3)
    length, source = query.shape[-2], key.shape[-2]
    factor = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    scores = ember.matmul(query, key.transpose(-2, -1)) * factor
    if is_causal:
        if attn_mask is not None:
            raise RuntimeError("scaled_dot_product_attention: pass either attn_mask or is_causal")
        keep = ember.ones(length, source, dtype=ember.bool, device=query.device).tril()
        scores = scores.masked_fill(~keep, float("-inf"))
    elif attn_mask is not None:
        if attn_mask.dtype is ember.bool:
            scores = scores.masked_fill(~attn_mask, float("-inf"))
        else:
            scores = scores + attn_mask
    weights = softmax(scores, -1)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p, True)
    return ember.matmul(weights, value)
