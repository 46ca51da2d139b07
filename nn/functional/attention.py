"""Scaled dot-product attention: the functional form, and the weights MultiheadAttention uses."""

from __future__ import annotations

import functools
import math

import ember
from ember.autograd.graph_names import present

from ._overrides import handle_torch_function, has_torch_function
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
    weights = softmax(attention_scores(query, key, scale, blocked, additive, is_causal), -1)
    return dropout(weights, dropout_p, True) if dropout_p > 0.0 else weights


def attention_scores(query, key, scale=None, blocked=None, additive=None, is_causal=False):
    """``Q K^T * scale + additive``, -inf where ``blocked`` or in the future under
    ``is_causal``: what the softmax over keys takes. Shape (..., L, S)."""
    factor = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    # Scaling Q (L x E) costs less than scaling the scores (L x S) and rounds the same way.
    scores = ember.matmul(query * factor, key.transpose(-2, -1))
    if is_causal:
        scores = scores + _future(*scores.shape[-2:], scores.dtype, str(scores.device))
    if blocked is not None:
        scores = scores.masked_fill(blocked, -math.inf)
    if additive is not None:
        scores = scores + additive
    return scores


def scaled_dot_product_attention(
    query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False
):
    """``softmax(Q K^T * scale + mask) V`` over the last two dims; ``is_causal`` masks the future.

    Shapes: query (..., L, E), key (..., S, E), value (..., S, Ev) -> (..., L, Ev). A boolean
    ``attn_mask`` says where attention may go (True); a float one is added to the scores.
    An argument whose type defines ``__torch_function__`` (a ``nn.attention.bias.CausalBias``)
    takes the call, as in PyTorch.
    """
    tensors = (query, key, value, attn_mask)
    if has_torch_function(tensors):
        public = ember.nn.functional.scaled_dot_product_attention  # the wrapped one users call
        return handle_torch_function(
            public, tensors, query, key, value, attn_mask, dropout_p,
            is_causal, scale=scale, enable_gqa=enable_gqa,
        )  # fmt: skip
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
    call = {
        "query": query,
        "key": key,
        "value": value,
        "attn_mask": attn_mask,
        "dropout_p": dropout_p,
        "is_causal": is_causal,
        "scale": scale,
        "enable_gqa": enable_gqa,
    }
    key, value = _grouped(query, key, value, enable_gqa)
    blocked = additive = None
    if attn_mask is not None:
        if attn_mask.dtype is ember.bool:
            blocked = attn_mask.logical_not()
        else:
            additive = attn_mask
    flash = _cpu_kernel(call)
    weights = attention_weights(query, key, scale, blocked, additive, is_causal, dropout_p)
    out = ember.matmul(weights, value)
    if not flash:
        return out  # PyTorch's math path: its matmuls and softmax, as ember's parts show
    out = _like(out, query)
    if not out.requires_grad:
        return out
    inputs = (call["query"], call["key"], call["value"])
    return present(out, _FLASH_NODE, *inputs, saved=call, outputs={"output": out})


def _cpu_kernel(call: dict) -> bool:
    """Whether the call runs as PyTorch's CPU flash kernel (else its math path), by the kernels
    ``sdpa_kernel``/``torch.backends.cuda.enable_*_sdp`` allow; PyTorch's errors where none
    may run. Other devices have one attention kernel: the switches do not choose there."""
    switches = ember.backends.cuda.sdp
    if call["query"].device.type != "cpu":
        return False
    if switches.flash and flash_on_cpu(call):
        return True
    if switches.math:
        return False
    if not switches.flash:
        raise RuntimeError(
            "No viable backend for scaled_dot_product_attention was found. This is likely due "
            "to turning off both the math kernel and the fused kernels."
        )
    raise RuntimeError("No available kernel.  Aborting execution.")


def _like(out, query):
    """``out`` laid out as the query is: PyTorch's CPU flash kernel allocates its output with
    ``empty_like(query)``, so the output of a transposed (B, L, H, D) query transposes back
    to a view (the reshape after it is a view, not a copy)."""
    if query.is_contiguous():
        return out
    # dims from the outermost (largest stride) in; ties keep their order, as empty_like's
    order = sorted(range(query.ndim), key=lambda d: -query.stride(d))
    inverse = sorted(range(query.ndim), key=order.__getitem__)
    return out.permute(order).contiguous().permute(inverse)


def _grouped(query, key, value, enable_gqa: bool):
    """Key and value with each head repeated for its group of query heads (``enable_gqa``)."""
    if enable_gqa and query.ndim >= 3 and key.shape[-3] != query.shape[-3]:
        repeat = query.shape[-3] // key.shape[-3]
        key = key.repeat_interleave(repeat, -3)
        value = value.repeat_interleave(repeat, -3)
    return key, value


_FLASH_NODE = "ScaledDotProductFlashAttentionForCpuBackward0"
_FLASH_DTYPES = frozenset({ember.float32, ember.float64, ember.bfloat16, ember.float16})


def flash_on_cpu(call: dict) -> bool:
    """Whether PyTorch's CPU build runs the call as its one flash-attention op
    (sdp_utils_cpp's use_flash_attention_cpp, checked against torch 2.13), whose node ember's
    then shows; else PyTorch runs the math path, whose parts ember's show too."""
    qkv = (call["query"], call["key"], call["value"])
    if call["dropout_p"] > 0.0 or any(t.device.type != "cpu" or t.ndim != 4 for t in qkv):
        return False
    if call["query"].dtype not in _FLASH_DTYPES or any(t.dtype != qkv[0].dtype for t in qkv):
        return False
    if any(t.stride(-1) != 1 or 0 in t.shape[2:] for t in qkv):
        return False
    query, key, value = (t.shape for t in qkv)
    batch, heads, length, size = query
    if key[0] != batch or value[0] != batch or key[3] != size or value[3] != size:
        return False
    if key[1] != value[1] or not (heads == key[1] or call["enable_gqa"]):
        return False
    source = key[2]
    mask = call["attn_mask"]
    if mask is None:
        return True
    if mask.requires_grad or mask.ndim not in (2, 4) or mask.shape[-2] not in (1, length):
        return False
    if mask.shape[-1] not in (1, source):
        return False
    return mask.ndim == 2 or (mask.shape[0] in (1, batch) and mask.shape[1] in (1, heads))


def flash_logsumexp(call: dict):
    """The log-sum-exp of each query's scores, (B, H, L), which PyTorch's CPU flash kernel
    keeps for its backward (ember's softmax node needs none): recomputed when asked, in
    float32 for the half types as there."""
    key, _ = _grouped(call["query"], call["key"], call["value"], call["enable_gqa"])
    mask = call["attn_mask"]
    with ember.no_grad():
        scores = attention_scores(
            call["query"],
            key,
            call["scale"],
            mask.logical_not() if mask is not None and mask.dtype is ember.bool else None,
            mask if mask is not None and mask.dtype is not ember.bool else None,
            call["is_causal"],
        )
        wide = ember.float32 if scores.dtype in (ember.float16, ember.bfloat16) else scores.dtype
        return scores.to(wide).logsumexp(-1)


def flash_mask(call: dict):
    """The mask PyTorch's flash node keeps: a boolean one as 0 / -inf in the query's dtype."""
    mask = call["attn_mask"]
    if mask is None or mask.dtype is not ember.bool:
        return mask
    zeros = ember.zeros(mask.shape, dtype=call["query"].dtype, device=mask.device)
    return zeros.masked_fill(mask.logical_not(), -math.inf)
