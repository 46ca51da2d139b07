"""multi_head_attention_forward: PyTorch's functional multi-head attention (packed or separate
projections, bias_k/bias_v, add_zero_attn, static keys and values, boolean or additive masks),
over the same attention weights as scaled_dot_product_attention."""

from __future__ import annotations

import math

import ember
from ember.dispatcher.optable import OPS

from .activation import softmax
from .attention import scaled_dot_product_attention
from .dropout import dropout
from .linear import linear


def _shape_check(query, key, value, key_padding_mask, attn_mask, num_heads) -> bool:
    """PyTorch's _mha_shape_check; returns whether the input is batched."""
    if query.ndim not in (2, 3):
        raise AssertionError(
            "query should be unbatched 2D or batched 3D tensor but received "
            f"{query.ndim}-D query tensor"
        )
    batched = query.ndim == 3
    kind = "batched (3-D)" if batched else "unbatched (2-D)"
    if key.ndim != query.ndim or value.ndim != query.ndim:
        raise AssertionError(
            f"For {kind} `query`, expected `key` and `value` to be {query.ndim}-D but found "
            f"{key.ndim}-D and {value.ndim}-D tensors respectively"
        )
    if key_padding_mask is not None and key_padding_mask.ndim != query.ndim - 1:
        raise AssertionError(
            f"For {kind} `query`, expected `key_padding_mask` to be `None` or "
            f"{query.ndim - 1}-D but found {key_padding_mask.ndim}-D tensor instead"
        )
    if attn_mask is not None and attn_mask.ndim not in (2, 3):
        raise AssertionError(
            f"For {kind} `query`, expected `attn_mask` to be `None`, 2-D or 3-D but found "
            f"{attn_mask.ndim}-D tensor instead"
        )
    if not batched and attn_mask is not None and attn_mask.ndim == 3:
        expected = (num_heads, query.shape[0], key.shape[0])
        if tuple(attn_mask.shape) != expected:
            raise AssertionError(
                f"Expected `attn_mask` shape to be {expected} but got {tuple(attn_mask.shape)}"
            )
    return batched


def _canonical(mask, name, dtype):
    """A float mask to add to the scores: booleans (True: may not attend) become -inf."""
    if mask is None or mask.dtype.is_floating_point:
        return mask
    if mask.dtype is not ember.bool:
        raise AssertionError(f"only bool and floating types of {name} are supported")
    return ember.zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill(mask, -math.inf)


def _project(query, key, value, in_proj_weight, in_proj_bias, separate):
    """q, k, v from the packed (3E, E) weight or the three separate ones, as PyTorch's
    _in_projection_packed: one product where the inputs are one tensor (self-attention) or
    key is value (the key and value rows together)."""
    if separate is None:
        if in_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
        weights = in_proj_weight.chunk(3)
    else:
        weights = separate
    biases = (None,) * 3 if in_proj_bias is None else in_proj_bias.chunk(3)
    if separate is None and key is value:
        size = query.shape[-1]
        if query is key:
            return _unpacked(linear(query, in_proj_weight, in_proj_bias), 3, size)
        w_q, w_kv = in_proj_weight.split([size, 2 * size])
        b_q, b_kv = (None, None) if in_proj_bias is None else in_proj_bias.split([size, 2 * size])
        return (linear(query, w_q, b_q), *_unpacked(linear(key, w_kv, b_kv), 2, size))
    return tuple(linear(x, w, b) for x, w, b in zip((query, key, value), weights, biases))


def _unpacked(projected, parts: int, size: int) -> tuple:
    """The ``parts`` projections packed in the last dim, each contiguous (PyTorch's layout: one
    copy with the part dim first, then a select per part)."""
    packed = projected.unflatten(-1, (parts, size)).unsqueeze(0).transpose(0, -2)
    packed = packed.squeeze(-2).contiguous()
    return tuple(packed[i] for i in range(parts))


def _check_attn_mask(attn_mask, batch, heads, length, source):
    if attn_mask is None:
        return None
    expected = (length, source) if attn_mask.ndim == 2 else (batch * heads, length, source)
    if tuple(attn_mask.shape) != expected:
        raise RuntimeError(
            f"The shape of the {attn_mask.ndim}D attn_mask is {list(attn_mask.shape)}, but should "
            f"be {expected}."
        )
    return attn_mask.unsqueeze(0) if attn_mask.ndim == 2 else attn_mask


def _heads(t, static, batch, heads, dim, name):
    """(S, N, E) -> (N * H, S, D), or the given static (N * H, S, D) tensor, checked."""
    if static is None:
        return t.reshape(t.shape[0], batch * heads, dim).transpose(0, 1)
    if static.shape[0] != batch * heads:
        raise AssertionError(
            f"expecting {name}.size(0) of {batch * heads}, but got {static.shape[0]}"
        )
    if static.shape[2] != dim:
        raise AssertionError(f"expecting {name}.size(2) of {dim}, but got {static.shape[2]}")
    return static


def _pad_last(mask):
    return None if mask is None else OPS["constant_pad_nd"](mask, (0, 1), 0)


def multi_head_attention_forward(
    query,
    key,
    value,
    embed_dim_to_check,
    num_heads,
    in_proj_weight,
    in_proj_bias,
    bias_k,
    bias_v,
    add_zero_attn,
    dropout_p,
    out_proj_weight,
    out_proj_bias,
    training=True,
    key_padding_mask=None,
    need_weights=True,
    attn_mask=None,
    use_separate_proj_weight=False,
    q_proj_weight=None,
    k_proj_weight=None,
    v_proj_weight=None,
    static_k=None,
    static_v=None,
    average_attn_weights=True,
    is_causal=False,
):
    """Multi-head attention of (L, N, E) queries over (S, N, E) keys and values (or unbatched
    (L, E), (S, E)); returns ``(output, weights)`` with weights averaged over heads when
    ``average_attn_weights``, None unless ``need_weights``."""
    batched = _shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    length, batch, embed_dim = query.shape
    if is_causal and attn_mask is None:
        raise RuntimeError(
            "Need attn_mask if specifying the is_causal hint. You may use the Transformer module "
            "method `generate_square_subsequent_mask` to create this mask."
        )
    key_padding_mask = _canonical(key_padding_mask, "key_padding_mask", query.dtype)
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None  # scaled_dot_product_attention takes the hint instead, as PyTorch's
    else:
        attn_mask = _canonical(attn_mask, "attn_mask", query.dtype)
        is_causal = is_causal and key_padding_mask is None  # a merged mask is not causal
    if embed_dim != embed_dim_to_check:
        raise AssertionError(
            f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}"
        )
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    separate = None
    if use_separate_proj_weight:
        if tuple(key.shape[:2]) != tuple(value.shape[:2]):
            raise AssertionError(
                f"key's sequence and batch dims {list(key.shape[:2])} do not match value's "
                f"{list(value.shape[:2])}"
            )
        separate = (q_proj_weight, k_proj_weight, v_proj_weight)
        for name, weight in zip("qkv", separate):
            if weight is None:
                raise AssertionError(
                    f"use_separate_proj_weight is True but {name}_proj_weight is None"
                )
    elif tuple(key.shape) != tuple(value.shape):
        raise AssertionError(
            f"key shape {list(key.shape)} does not match value shape {list(value.shape)}"
        )
    q, k, v = _project(query, key, value, in_proj_weight, in_proj_bias, separate)
    attn_mask = _check_attn_mask(attn_mask, batch, num_heads, length, key.shape[0])
    k, v, attn_mask, key_padding_mask = _extra_keys(
        k, v, attn_mask, key_padding_mask, bias_k, bias_v, static_k, static_v, batch
    )
    # PyTorch's views, as reshapes: the same views here, and ember.compile's replays may lay
    # the projections out otherwise
    q = q.reshape(length, batch * num_heads, head_dim).transpose(0, 1)
    k = _heads(k, static_k, batch, num_heads, head_dim, "static_k")
    v = _heads(v, static_v, batch, num_heads, head_dim, "static_v")
    if add_zero_attn:
        zeros = ember.zeros(batch * num_heads, 1, head_dim, dtype=k.dtype, device=k.device)
        k, v = ember.cat([k, zeros], 1), ember.cat([v, zeros], 1)
        attn_mask, key_padding_mask = _pad_last(attn_mask), _pad_last(key_padding_mask)
    source = k.shape[1]
    attn_mask = _with_padding(attn_mask, key_padding_mask, batch, num_heads, source)
    dropout_p = dropout_p if training else 0.0
    if not need_weights:
        out = _fused(q, k, v, attn_mask, dropout_p, is_causal, batch, num_heads, source)
        out = out.permute(2, 0, 1, 3).reshape(batch * length, embed_dim)
    else:
        weights = _weights(q, k, attn_mask, dropout_p)
        out = ember.bmm(weights, v).transpose(0, 1).reshape(length * batch, embed_dim)
    out = linear(out, out_proj_weight, out_proj_bias).view(length, batch, -1)
    if not batched:
        out = out.squeeze(1)
    if not need_weights:
        return out, None
    weights = weights.view(batch, num_heads, length, source)
    if average_attn_weights:
        weights = weights.mean(1)
    return out, (weights if batched else weights.squeeze(0))


def _weights(q, k, attn_mask, dropout_p):
    """The (N * H, L, S) attention weights, as PyTorch's function computes them when they are
    returned: bmm (baddbmm over a mask) of the scaled queries and the keys, softmax, dropout."""
    q_scaled = q * math.sqrt(1.0 / float(q.shape[-1]))
    keys = k.transpose(-2, -1)
    if attn_mask is None:
        scores = ember.bmm(q_scaled, keys)
    else:
        scores = ember.baddbmm(attn_mask, q_scaled, keys)
    weights = softmax(scores, -1)
    return dropout(weights, dropout_p) if dropout_p > 0.0 else weights


def _fused(q, k, v, attn_mask, dropout_p, is_causal, batch, heads, source):
    """The (N, H, L, D) output without the weights: scaled_dot_product_attention over the
    heads, as PyTorch's function calls it (its CPU flash kernel where it would run)."""
    if attn_mask is not None:
        if attn_mask.shape[0] == 1 and attn_mask.ndim == 3:
            attn_mask = attn_mask.unsqueeze(0)
        else:
            attn_mask = attn_mask.view(batch, heads, -1, source)
    length, size = q.shape[1], q.shape[2]
    q = q.view(batch, heads, length, size)
    k = k.view(batch, heads, source, size)
    v = v.view(batch, heads, source, size)
    return scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)


def _extra_keys(k, v, attn_mask, key_padding_mask, bias_k, bias_v, static_k, static_v, batch):
    """Append the learned bias_k / bias_v position (masks widened by one allowed key)."""
    if bias_k is None and bias_v is None:
        return k, v, attn_mask, key_padding_mask
    if bias_k is None or bias_v is None:
        missing = "bias_v" if bias_v is None else "bias_k"
        present = "bias_k" if bias_v is None else "bias_v"
        raise AssertionError(f"{present} is set but {missing} is None")
    if static_k is not None:
        raise AssertionError("bias cannot be added to static key.")
    if static_v is not None:
        raise AssertionError("bias cannot be added to static value.")
    k = ember.cat([k, bias_k.repeat(1, batch, 1)])
    v = ember.cat([v, bias_v.repeat(1, batch, 1)])
    return k, v, _pad_last(attn_mask), _pad_last(key_padding_mask)


def _with_padding(attn_mask, key_padding_mask, batch, heads, source):
    """The attention mask with the key padding mask added, as (N * H or 1, L or 1, S)."""
    if key_padding_mask is None:
        return attn_mask
    if tuple(key_padding_mask.shape) != (batch, source):
        raise AssertionError(
            f"Expected key_padded_mask.shape to be {(batch, source)}, but got "
            f"{tuple(key_padding_mask.shape)}"
        )
    padding = key_padding_mask.view(batch, 1, 1, source).expand(batch, heads, 1, source)
    padding = padding.reshape(batch * heads, 1, source)
    return padding if attn_mask is None else attn_mask + padding
