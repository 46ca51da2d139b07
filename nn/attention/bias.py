"""Causal biases that ``F.scaled_dot_product_attention`` takes as its ``attn_mask``, as
``torch.nn.attention.bias``.

A CausalBias is a Tensor subclass holding no values, only the variant and the two sequence
lengths; it defines ``__torch_function__``, through which scaled_dot_product_attention hands
the call to :meth:`CausalBias._dispatch`, as PyTorch's does. The upper-left variant (and
either one when the lengths are equal) becomes ``is_causal=True``; the lower-right one is
materialised as a boolean mask (PyTorch's CPU path too: its lower-right kernels are CUDA's).
"""

from __future__ import annotations

import enum
import warnings

import ember
import ember.nn.functional as F
from ember import Tensor

from ._utils import _validate_sdpa_input

__all__ = ["causal_upper_left", "causal_lower_right", "CausalVariant", "CausalBias"]


class CausalVariant(enum.IntEnum):
    """Where the causal triangle is aligned when the query and key lengths differ.

    ``UPPER_LEFT``: ``tril(ones(L, S))``, query i sees keys 0..i (``is_causal=True``'s).
    ``LOWER_RIGHT``: ``tril(ones(L, S), diagonal=S - L)``, the last query sees every key.
    For (3, 4): upper left ``[[1,0,0,0],[1,1,0,0],[1,1,1,0]]``, lower right
    ``[[1,1,0,0],[1,1,1,0],[1,1,1,1]]``; equal lengths make them the same.
    """

    UPPER_LEFT = enum.auto()
    LOWER_RIGHT = enum.auto()


class CausalBias(Tensor):
    """A causal (triangular) attention bias; build it with :func:`causal_upper_left` or
    :func:`causal_lower_right`.

    Example:
        >>> attn_bias = causal_lower_right(4, 12)
        >>> q = ember.randn(32, 8, 4, 8)
        >>> k = v = ember.randn(32, 8, 12, 8)
        >>> out = F.scaled_dot_product_attention(q, k, v, attn_bias)
    """

    def __new__(cls, variant: CausalVariant, seq_len_q: int, seq_len_kv: int):
        return super().__new__(cls)

    def __init__(self, variant: CausalVariant, seq_len_q: int, seq_len_kv: int) -> None:
        if not isinstance(variant, CausalVariant):
            raise AssertionError(f"variant must be a CausalVariant, got {type(variant).__name__}")
        super().__init__()
        self.variant = variant
        self.seq_len_q = seq_len_q
        self.seq_len_kv = seq_len_kv
        if seq_len_q > seq_len_kv and variant == CausalVariant.LOWER_RIGHT:
            warnings.warn(
                "Lower right causal bias will produce NaNs in the output when "
                "seq_len_q > seq_len_kv!",
                stacklevel=3,
            )

    def _materialize(self, device=None) -> Tensor:
        """The boolean (seq_len_q, seq_len_kv) mask: True where a query may attend."""
        ones = ember.ones(self.seq_len_q, self.seq_len_kv, device=device or "cpu", dtype=ember.bool)
        if self.variant == CausalVariant.LOWER_RIGHT:
            return ember.tril(ones, diagonal=self.seq_len_kv - self.seq_len_q)
        return ember.tril(ones)

    @staticmethod
    def _dispatch(
        query: Tensor,
        key: Tensor,
        value: Tensor,
        attn_mask: CausalBias,
        dropout_p: float = 0.0,
        is_causal: bool = False,
        scale: float | None = None,
        enable_gqa: bool = False,
    ) -> Tensor:
        """scaled_dot_product_attention under this bias: ``is_causal=True`` for the upper-left
        variant or equal lengths, else the materialised lower-right mask."""
        if is_causal:
            raise ValueError("CausalBias should not be used with causal=True")
        if (
            attn_mask.seq_len_q == attn_mask.seq_len_kv
            or attn_mask.variant == CausalVariant.UPPER_LEFT
        ):
            mask, is_causal = None, True
        elif attn_mask.variant == CausalVariant.LOWER_RIGHT:
            _validate_sdpa_input(query, key, value)
            mask = attn_mask._materialize(query.device)
        else:
            raise ValueError(
                f"CausalBias.variant must be a CausalVariant type, but found: {attn_mask.variant}"
            )
        return F.scaled_dot_product_attention(
            query,
            key,
            value,
            attn_mask=mask,
            dropout_p=dropout_p,
            is_causal=is_causal,
            scale=scale,
            enable_gqa=enable_gqa,
        )

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        """scaled_dot_product_attention with this bias goes to :meth:`_dispatch`; nothing
        else is overridden."""
        kwargs = kwargs or {}
        if func is F.scaled_dot_product_attention:
            return cls._dispatch(*args, **kwargs)
        return NotImplemented

    def __repr__(self) -> str:
        return self._materialize().__repr__()


def _sizes(size: tuple, name: str) -> tuple[int, int]:
    if len(size) != 2:
        raise AssertionError(f"{name} only supports 2D tensors")
    return size


def causal_upper_left(*size) -> CausalBias:
    """The upper-left causal bias of (seq_len_q, seq_len_kv): ``is_causal=True``'s mask,
    ``tril(ones(size))``.

    Args:
        size: The size of the bias matrix.

    Returns:
        CausalBias: The UPPER_LEFT triangular causal bias variant.
    """
    return CausalBias(CausalVariant.UPPER_LEFT, *_sizes(size, "causal_upper_left"))


def causal_lower_right(*size) -> CausalBias:
    """The lower-right causal bias of (seq_len_q, seq_len_kv):
    ``tril(ones(size), diagonal=size[1] - size[0])``, the last query seeing every key.

    Args:
        size: The size of the bias matrix.

    Returns:
        CausalBias: The LOWER_RIGHT triangular causal bias variant.
    """
    return CausalBias(CausalVariant.LOWER_RIGHT, *_sizes(size, "causal_lower_right"))
