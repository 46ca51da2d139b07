"""flex_attention's eager math, as PyTorch's (torch/_higher_order_ops/flex_attention.py,
``math_attention``): the scores materialised in float32 (float64 for float64 inputs), the
score_mod and mask_mod mapped over every (b, h, q_idx, kv_idx) by nested vmaps, a softmax
that gives zeros for rows masked throughout. Plain ember ops, so autograd reaches q, k, v and
any tensor the mods capture."""

from __future__ import annotations

import math

import ember
from ember import Tensor

from ._mods import _vmap_for_bhqkv


def _grouped(tensor: Tensor, groups: int, batch: int) -> Tensor:
    """A key or value with each head repeated for its query heads (GQA) and the batch
    broadcast to the query's."""
    tensor = ember.repeat_interleave(tensor, groups, dim=1)
    return tensor.expand((batch, *tensor.shape[1:]))


def post_mod_scores(query, key, score_mod, mask_mod, scale: float) -> Tensor:
    """``score_mod(q k^T * scale)`` where ``mask_mod`` allows, -inf elsewhere, in the working
    precision; shape (B, Hq, L, S)."""
    working = ember.float64 if query.dtype == ember.float64 else ember.float32
    scores = query.to(working) @ key.to(working).transpose(-2, -1)
    device = scores.device
    b, h, m, n = (ember.arange(0, size, device=device) for size in scores.shape)
    scores = (scores * scale).to(working)
    allowed = _vmap_for_bhqkv(mask_mod, prefix=())(b, h, m, n)
    modified = _vmap_for_bhqkv(score_mod, prefix=(0,))(scores, b, h, m, n)
    blocked = ember.tensor(-math.inf, dtype=working, device=device)
    return ember.where(allowed, modified, blocked)


def math_attention(query, key, value, score_mod, mask_mod, scale: float):
    """(output, logsumexp, max score) of each query; the last two over the keys in the
    working precision, -inf for a query whose every key is masked (whose output is 0).
    Natural logarithms (PyTorch's kernel keeps base 2 and converts back)."""
    groups = query.size(1) // key.size(1)
    batch, kv_batch = query.size(0), key.size(0)
    if not (batch == kv_batch or (batch > 1 and kv_batch == 1)):
        raise RuntimeError(f"Bq and Bkv must broadcast. Got Bq={batch} and Bkv={kv_batch}")
    key = _grouped(key, groups, batch)
    value = _grouped(value, groups, batch)
    scores = post_mod_scores(query, key, score_mod, mask_mod, scale)
    masked_rows = ember.all(scores == -math.inf, dim=-1)
    # a masked row's logsumexp is taken over zeros, then replaced: its gradient stays 0, not NaN
    zero = ember.zeros((), dtype=scores.dtype, device=scores.device)
    finite = ember.where(masked_rows.unsqueeze(-1), zero, scores)
    logsumexp = ember.where(masked_rows, -math.inf, finite.logsumexp(dim=-1))
    max_scores = ember.max(scores, dim=-1)[0]
    probs = ember.ops._safe_softmax(scores, -1)
    out = probs.to(query.dtype) @ value.to(query.dtype)
    return out, logsumexp, max_scores
