"""``scaled_mm`` and ``scaled_grouped_mm``: torch 2.13's float8 matmul recipe API, with the
``ScalingType`` and ``SwizzleType`` enums (PyTorch's values).

On the CPU PyTorch runs ``scaled_mm`` only for tensor-wise or row-wise scales on both operands,
unswizzled, through its ``_scaled_mm`` emulation; every other recipe is the same "Invalid
scaling configuration" ValueError, and ``scaled_grouped_mm`` has no CPU kernel. ember does the
same through its ``_scaled_mm`` row on every device.
"""

from __future__ import annotations

import enum

import ember
from ember.dispatcher.optable import OPS
from ember.dispatcher.optable.scaled_mm import _scaling_error


class ScalingType(enum.IntEnum):
    """How a float8 operand was scaled (``torch.nn.functional.ScalingType``)."""

    TensorWise = 0
    RowWise = 1
    BlockWise1x16 = 2
    BlockWise1x32 = 3
    BlockWise1x128 = 4
    BlockWise128x128 = 5


class SwizzleType(enum.IntEnum):
    """How a scale tensor's elements are laid out (``torch.nn.functional.SwizzleType``)."""

    NO_SWIZZLE = 0
    SWIZZLE_32_4_4 = 1


def _single(value):
    """PyTorch's ``_expand_single_value``: a list of one stands for its element."""
    return value[0] if isinstance(value, (list, tuple)) and len(value) == 1 else value


_PLAIN = (ScalingType.TensorWise, ScalingType.RowWise)


def scaled_mm(
    mat_a,
    mat_b,
    scale_a,
    scale_recipe_a,
    scale_b,
    scale_recipe_b,
    swizzle_a=None,
    swizzle_b=None,
    bias=None,
    output_dtype=ember.bfloat16,
    contraction_dim=(),
    use_fast_accum=False,
):
    """``mat_a @ mat_b`` of float8 matrices decoded by their scales.

    Args:
        scale_a, scale_b: decoding scales (a tensor, or a list of one).
        scale_recipe_a, scale_recipe_b: ``ScalingType`` of each operand's scales.
        swizzle_a, swizzle_b: ``SwizzleType`` of each scale tensor (None: unswizzled).
        bias: added to the product.
        output_dtype: the result's dtype (bfloat16 by default, as PyTorch's).
        contraction_dim: which dims are K; only the default, ``()``, is supported.
        use_fast_accum: accepted (it only matters on Hopper GPUs).
    """
    scale_a, scale_b = _single(scale_a), _single(scale_b)
    recipes = (_single(scale_recipe_a), _single(scale_recipe_b))
    swizzles = [_single(s) for s in (swizzle_a, swizzle_b)]
    if tuple(contraction_dim):
        raise NotImplementedError(
            f"scaled_mm: contraction_dim={tuple(contraction_dim)} is not supported by ember "
            "(the default, K as mat_a's last and mat_b's first dim, is)"
        )
    if not (isinstance(scale_a, ember.Tensor) and isinstance(scale_b, ember.Tensor)):
        raise ValueError(
            "scaled_mm: lists of several scales belong to block-wise recipes, which ember (like "
            "PyTorch on the CPU) does not run"
        )
    plain = recipes[0] == recipes[1] and recipes[0] in _PLAIN
    unswizzled = all(s in (None, SwizzleType.NO_SWIZZLE) for s in swizzles)
    if not (plain and unswizzled):
        raise _scaling_error(mat_a, mat_b, scale_a, scale_b)
    return OPS["_scaled_mm"](
        mat_a, mat_b, scale_a, scale_b, bias, None, output_dtype, use_fast_accum
    )


def scaled_grouped_mm(
    mat_a,
    mat_b,
    scale_a,
    scale_recipe_a,
    scale_b,
    scale_recipe_b,
    swizzle_a=None,
    swizzle_b=None,
    bias=None,
    offs=None,
    output_dtype=ember.bfloat16,
    contraction_dim=(),
    use_fast_accum=False,
):
    """Groups of scaled float8 matrix products (``offs`` cuts the groups). PyTorch has no CPU
    kernel for it and ember none on any device: NotImplementedError naming the device."""
    device = mat_a.device.type
    raise NotImplementedError(
        f"Could not run 'aten::_scaled_grouped_mm_v2' with arguments from the "
        f"'{device.upper()}' backend: ember has no kernel for scaled_grouped_mm on any device "
        "(PyTorch has one for CUDA only)"
    )
