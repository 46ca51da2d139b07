"""``ember.nn.attention.flex_attention``: attention with user-defined score and mask
modifications, as ``torch.nn.attention.flex_attention`` (eager).

Ember runs PyTorch's eager path on every device: the (B, H, L, S) scores are materialised,
``score_mod`` and the block mask's ``mask_mod`` are mapped over every (b, h, q_idx, kv_idx)
with ``ember.func.vmap``, and autograd differentiates q, k, v and the tensors the mods
capture. No fused kernel: block sparsity decides nothing (``mask_mod`` decides each element,
as in PyTorch's eager path), and ``kernel_options`` are checked, not used.

Example:
    >>> from ember.nn.attention.flex_attention import create_block_mask, flex_attention
    >>> def causal(b, h, q_idx, kv_idx):
    ...     return q_idx >= kv_idx
    >>> def relative(score, b, h, q_idx, kv_idx):
    ...     return score + bias[q_idx - kv_idx + 127]
    >>> mask = create_block_mask(causal, None, None, 128, 128, device="cpu")
    >>> out = flex_attention(q, k, v, score_mod=relative, block_mask=mask)
"""

from __future__ import annotations

import math
import typing
import warnings
from typing import NamedTuple, TypedDict

from ember import Tensor
from ember.nn.functional.attention import _like

from ._block_mask import (
    _LARGE_SPARSE_BLOCK_SIZE,
    BlockMask,
    _create_empty_block_mask,
    create_block_mask,
)
from ._flex_math import math_attention
from ._mods import (
    _identity,
    _score_mod_signature,
    _sliced_mask_mod_error,
    and_masks,
    create_mask,
    noop_mask,
    or_masks,
)
from ._mods import _mask_mod_signature as _mask_mod_signature  # PyTorch's, for annotations
from ._utils import _validate_sdpa_input

__all__ = [
    "BlockMask",
    "flex_attention",
    "AuxOutput",
    "AuxRequest",
    "FlexKernelOptions",
    "create_block_mask",
    "create_mask",
    "or_masks",
    "and_masks",
    "noop_mask",
]

_Backend = typing.Literal["AUTO", "TRITON", "FLASH", "TRITON_DECODE"]
_WARNINGS_SHOWN: set[str] = set()


def _warn_once(warning_id: str, message: str, category: type[Warning] = UserWarning) -> None:
    if warning_id not in _WARNINGS_SHOWN:
        warnings.warn(message, category, stacklevel=3)
        _WARNINGS_SHOWN.add(warning_id)


class FlexKernelOptions(TypedDict, total=False):
    """Options of PyTorch's fused flex-attention kernels (``BACKEND``, ``BLOCK_M``,
    ``PRESCALE_QK``, ``fwd_``/``bwd_`` prefixed tunings...). Ember's eager math takes the
    dictionary and checks ``BACKEND``; the others change nothing."""

    BACKEND: _Backend
    FORCE_USE_FLEX_ATTENTION: bool
    PRESCALE_QK: bool
    ROWS_GUARANTEED_SAFE: bool
    BLOCKS_ARE_CONTIGUOUS: bool
    WRITE_DQ: bool


class AuxRequest(NamedTuple):
    """Request which auxiliary outputs to compute from flex_attention.

    Each field is a boolean indicating whether that auxiliary output should be computed.
    """

    lse: bool = False
    max_scores: bool = False


class AuxOutput(NamedTuple):
    """Auxiliary outputs from flex_attention operation.

    Fields will be None if not requested, or contain the tensor if requested.
    """

    lse: Tensor | None = None
    max_scores: Tensor | None = None


def _check_kernel_options(kernel_options) -> None:
    options = dict(kernel_options or {})
    if "BACKEND" in options and options.get("FORCE_USE_FLEX_ATTENTION", False):
        raise RuntimeError(
            "BACKEND cannot be combined with legacy FORCE_USE_FLEX_ATTENTION. "
            "BACKEND supersedes the legacy knob; please drop FORCE_USE_FLEX_ATTENTION "
            "and only specify the desired BACKEND."
        )
    valid = typing.get_args(_Backend)
    if "BACKEND" in options and options["BACKEND"] not in valid:
        raise ValueError(f"Invalid BACKEND value '{options['BACKEND']}'. Must be one of {valid}")
    for internal in ("OUTPUT_LOGSUMEXP", "OUTPUT_MAX"):
        if internal in options:
            raise AssertionError(f"{internal} must not be in kernel_options")


def _check_shapes(query, key, value, block_mask, enable_gqa: bool) -> None:
    if query.size(-1) != key.size(-1):
        raise ValueError(
            f"Expect query and key/value to have the same embedding dimension "
            f"but got E={query.size(-1)} and E={key.size(-1)}."
        )
    if query.dim() != 4 or key.dim() != 4 or value.dim() != 4:
        raise NotImplementedError("NYI: query, key, and value must be 4D tensors")
    heads, kv_heads = query.size(-3), key.size(-3)
    if not enable_gqa and heads != kv_heads:
        raise ValueError(
            f"Expect query and key/value to have the same number of heads "
            f"but got Hq={heads} and Hkv={kv_heads}. Try setting enable_gqa=True for GQA."
        )
    if enable_gqa and heads % kv_heads != 0:
        raise ValueError(
            f"Expect number of query heads to be a multiple of kv heads for GQA "
            f"but got Hq={heads} and Hkv={kv_heads}."
        )
    if query.size(0) != key.size(0):
        if block_mask is None:
            raise ValueError(
                f"Expect query and key/value to have the same batch size, "
                f"or non-none block_mask, "
                f"but got block_mask=None, Bq={query.size(0)}, and Bkv={key.size(0)}."
            )
        if block_mask.kv_num_blocks.size(0) != query.size(0):
            raise ValueError(
                f"Expect query and key/value to have the same batch size, "
                f"or block_mask and query to have the same batch size, "
                f"but got Bq={query.size(0)}, Bkv={key.size(0)}, "
                f"B_block_mask={block_mask.kv_num_blocks.size(0)}."
            )


def _check_block_mask(query, key, block_mask: BlockMask) -> None:
    if block_mask.mask_mod is _sliced_mask_mod_error:
        raise RuntimeError("Cannot use mask_mod from a sliced BlockMask")
    if block_mask.BLOCK_SIZE == (_LARGE_SPARSE_BLOCK_SIZE, _LARGE_SPARSE_BLOCK_SIZE):
        return  # the mask made when none is given
    q_len, kv_len = query.size(-2), key.size(-2)
    mask_q, mask_kv = block_mask.shape[-2], block_mask.shape[-1]
    made_for = f"block_mask was created for block_mask.shape={block_mask.shape} but got "
    if q_len > mask_q or kv_len > mask_kv:
        raise ValueError(
            f"{made_for}q_len={q_len} and kv_len={kv_len}. As the block mask was created "
            "for a smaller length than you're using it for, you likely need to create a new "
            "block mask."
        )
    if q_len < mask_q or kv_len < mask_kv:
        raise ValueError(
            f"{made_for}q_len={q_len} and kv_len={kv_len}. As the block mask was created "
            "for a larger length than you're using it for, you can either 1. create a new "
            "block mask with the correct length, or 2. 'adjust' the existing block mask to "
            "the correct length by calling block_mask._adjust(q_len, kv_len). This "
            "essentially 'crops' the block mask to the upper left corner, which does not "
            "work for all mask_mods!"
        )
    if query.device != block_mask.kv_num_blocks.device:
        raise RuntimeError(
            f"Expect q/k/v and block_mask to be on the same device "
            f"but got {query.device} and {block_mask.kv_num_blocks.device}."
        )


def flex_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    score_mod: _score_mod_signature | None = None,
    block_mask: BlockMask | None = None,
    scale: float | None = None,
    enable_gqa: bool = False,
    return_lse: bool = False,
    kernel_options: FlexKernelOptions | None = None,
    *,
    return_aux: AuxRequest | None = None,
):
    """Scaled dot-product attention whose scores ``score_mod`` modifies and whose block
    mask's ``mask_mod`` masks, element by element (the Flex Attention paper's API).

    ``score_mod(score, batch, head, q_idx, kv_idx) -> score`` and
    ``mask_mod(batch, head, q_idx, kv_idx) -> bool`` see 0-dim tensors (int64 indices, the
    score in float32, float64 for float64 inputs); they may index tensors they capture, and
    gradients reach those.

    Args:
        query (Tensor): (B, Hq, L, E).
        key (Tensor): (B, Hkv, S, E).
        value (Tensor): (B, Hkv, S, Ev).
        score_mod (Callable, optional): modifies each score (default: none).
        block_mask (BlockMask, optional): which pairs may attend (default: all).
        scale (float, optional): applied before the softmax; default ``1 / sqrt(E)``.
        enable_gqa (bool): key/value heads shared by groups of query heads (Hq % Hkv == 0).
        return_lse (bool): also return the logsumexp (deprecated: ``return_aux``).
        kernel_options (FlexKernelOptions, optional): PyTorch's kernel tunings; checked only.
        return_aux (AuxRequest, optional): which of ``lse``, ``max_scores`` to return.

    Returns:
        output (Tensor): (B, Hq, L, Ev), laid out as the query; with ``return_aux`` also an
        ``AuxOutput``, with ``return_lse`` the (B, Hq, L) logsumexp (natural log; -inf and an
        output of zeros for a query whose every key is masked).

    Example:
        >>> q = k = v = ember.randn(1, 2, 8, 4)
        >>> out = flex_attention(q, k, v, score_mod=lambda s, b, h, i, j: s + (i - j))
    """
    if query.is_nested or key.is_nested or value.is_nested:
        raise NotImplementedError(
            "flex_attention does not support NestedTensor inputs. Convert inputs to dense "
            "tensors before calling flex_attention."
        )
    _validate_sdpa_input(query, key, value, allow_lowp_kv=True)
    _check_shapes(query, key, value, block_mask, enable_gqa)
    block_mask = _create_empty_block_mask(query, key) if block_mask is None else block_mask
    _check_block_mask(query, key, block_mask)
    scale = 1.0 / math.sqrt(query.size(-1)) if scale is None else scale
    if return_lse and return_aux is not None:
        raise ValueError(
            "Cannot specify both return_lse and return_aux. "
            "return_lse is deprecated, please use return_aux=AuxRequest(lse=True) instead."
        )
    if return_lse:
        _warn_once(
            "deprecated_return_lse",
            "return_lse is deprecated and will be removed in v2.10. "
            "Please use return_aux=AuxRequest(lse=True) instead.",
            category=FutureWarning,
        )
    _check_kernel_options(kernel_options)
    out, lse, max_scores = math_attention(
        query, key, value, score_mod or _identity, block_mask.mask_mod, scale
    )
    out = _like(out, query)
    if return_aux is not None:
        return out, AuxOutput(
            lse if return_aux.lse else None, max_scores if return_aux.max_scores else None
        )
    return (out, lse) if return_lse else out
