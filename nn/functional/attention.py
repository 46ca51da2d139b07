"""Scaled dot-product attention: the functional form, and the weights MultiheadAttention uses."""

from __future__ import annotations

import functools
import math

import ember

from .activation import softmax
from .dropout import dropout


@functools.lru_cache(maxsize=8)
def _future(length: int, source: int, dtype, device: str):
    """-inf above the diagonal, 0 elsewhere: the keys a query may not see under ``is_causal``
    (aligned at the top left, as PyTorch's). Added to the scores rather than masked in, so the
    backward passes the gradient through instead of running a where; the same values either way.
    Cached, so a training loop does not rebuild it every step."""
    blocked = ember.ones(length, source, dtype=ember.bool, device=device).triu(1)
    return ember.zeros(length, source, dtype=dtype, device=device).masked_fill(blocked, -math.inf)


def attention_weights(query, key, scale=None, blocked=None, additive=None, is_causal=False,
                      dropout_p=0.0):  # fmt: skip
    """``softmax(Q K^T * scale + additive)`` over keys, -inf where ``blocked`` (True: may not
    attend) or in the future under ``is_causal``, then dropout. Shape (..., L, S)."""
    factor = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    # Scaling Q (L x E) costs less than scaling the scores (L x S) and rounds the same way.
    scores = ember.matmul(query * factor, key.transpose(-2, -1))
    if is_causal:
        scores = scores + _future(*scores.shape[-2:], scores.dtype, str(scores.device))
    if blocked is not None:
        scores = scores.masked_fill(blocked, -math.inf)
    if additive is not None:
        scores = scores + additive
    weights = softmax(scores, -1)
    return dropout(weights, dropout_p, True) if dropout_p > 0.0 else weights


def scaled_dot_product_attention(
    query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False
):
    """``softmax(Q K^T * scale + mask) V`` over the last two dims; ``is_causal`` masks the future.

    Shapes: query (..., L, E), key (..., S, E), value (..., S, Ev) -> (..., L, Ev). A boolean
    ``attn_mask`` says where attention may go (True); a float one is added to the scores.
    """
    return ember.ops.scaled_dot_product_attention(
        query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa
    )


def _scaled_dot_product_attention(
    query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False
):
    if query.shape[-1] != key.shape[-1] or key.shape[-2] != value.shape[-2]:
        raise RuntimeError(
            f"scaled_dot_product_attention: query {list(query.shape)}, key {list(key.shape)} "
            f"and value {list(value.shape)} must share the embedding size (query, key) and the "
            "sequence length (key, value)"
        )
    if is_causal and attn_mask is not None:
        raise RuntimeError("scaled_dot_product_attention: pass either attn_mask or is_causal")
    if enable_gqa and query.ndim >= 3 and key.shape[-3] != query.shape[-3]:
        repeat = query.shape[-3] // key.shape[-3]
        key = key.repeat_interleave(repeat, -3)
        value = value.repeat_interleave(repeat, -3)
    blocked = additive = None
    if attn_mask is not None:
        if attn_mask.dtype is ember.bool:
            blocked = attn_mask.logical_not()
        else:
            additive = attn_mask
    weights = attention_weights(query, key, scale, blocked, additive, is_causal, dropout_p)
    return ember.matmul(weights, value)
