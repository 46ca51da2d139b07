"""PyTorch's type promotion: categories (bool < integer < floating < complex), and within the
winning category, dimensioned tensors over zero-dim tensors over Python scalars (which are
"weak")."""

from __future__ import annotations

from ember import _dtype as dt

from .opdef import Promotion


def _promote_pair(a: dt.dtype, b: dt.dtype) -> dt.dtype:
    if a is b:
        return a
    if dt.COMPLEX in (a.category, b.category):
        return _promote_complex(a, b)
    if a.category != b.category:
        return a if a.category > b.category else b
    if a.category == dt.FLOATING:
        if {a, b} == {dt.float16, dt.bfloat16}:
            return dt.float32
        return a if a.itemsize > b.itemsize else b
    if a.category == dt.BOOL:
        return a
    # Integers: numpy's rule (uint8 with int8 -> int16), which PyTorch shares.
    found = dt.from_numpy_dtype(dt.np.promote_types(a.np, b.np))
    return found


def _promote_complex(a: dt.dtype, b: dt.dtype) -> dt.dtype:
    """Complex wins; its parts are as wide as the widest floating part (float64 with complex64
    is complex128, as in PyTorch)."""
    parts = [d.to_real() for d in (a, b) if d.category >= dt.FLOATING]
    return dt.complex128 if any(d is dt.float64 for d in parts) else dt.complex64


class _Table(dict):
    """The promotion of every pair of full-support dtypes; pairs with a limited dtype (float8,
    uint16/32/64) come from ``_promote_limited`` on first use."""

    def __missing__(self, pair):
        found = self[pair] = _promote_limited(*pair)
        return found


def _promote_limited(a: dt.dtype, b: dt.dtype) -> dt.dtype:
    """PyTorch promotes a float8 or wide unsigned dtype only with itself, and the wide unsigned
    ones also with the full floating dtypes (uint32 + float16 is float16); else it refuses."""
    if a is b:
        return a
    names = f"{dt.SCALAR_NAMES[a]} and {dt.SCALAR_NAMES[b]}"
    if a in dt.FLOAT8 or b in dt.FLOAT8:
        raise RuntimeError(
            f"Promotion for Float8 Types is not supported, attempted to promote {names}"
        )
    other = b if a in dt.WIDE_UNSIGNED else a
    if other in dt.FLOATS:
        return other
    raise RuntimeError(
        f"Promotion for uint16, uint32, uint64 types is not supported, attempted to promote {names}"
    )


PROMOTE = _Table({(a, b): _promote_pair(a, b) for a in dt.EVERY for b in dt.EVERY})


def promote_types(a: dt.dtype, b: dt.dtype) -> dt.dtype:
    """The smallest dtype both ``a`` and ``b`` convert to (``torch.promote_types``)."""
    return PROMOTE[(a, b)]


def can_cast(src: dt.dtype, dst: dt.dtype) -> bool:
    """Whether an in-place result of dtype ``src`` may be written to ``dst`` (no category drop)."""
    return src.category <= dst.category


def scalar_dtype(value) -> dt.dtype:
    """The dtype a Python scalar stands for in promotion (floats: the default dtype)."""
    if value.__class__ is bool:
        return dt.bool_
    if value.__class__ is int:
        return dt.int64
    if value.__class__ is float:
        return dt.DEFAULTS.float
    if isinstance(value, bool):
        return dt.bool_
    if isinstance(value, int):
        return dt.int64
    if isinstance(value, float):
        return dt.DEFAULTS.float
    if isinstance(value, complex):
        return dt.default_complex()
    raise TypeError(f"expected a Tensor or a Python number, got {type(value).__name__}")


def _combine(higher, lower):
    """PyTorch's combine_categories: ``lower`` only matters when its category is higher."""
    if higher is None:
        return lower
    if lower is None:
        return higher
    if higher.category == dt.COMPLEX:
        return higher
    if lower.category == dt.COMPLEX:
        # A complex operand of a lower priority keeps the higher one's float width.
        return higher.to_complex() if higher.category == dt.FLOATING else lower
    if higher.category == dt.FLOATING:
        return higher
    if higher.category == dt.BOOL or lower.category == dt.FLOATING:
        return PROMOTE[(higher, lower)]
    return higher


def result_type(operands, tensor_type) -> dt.dtype:
    """The promoted dtype of tensors and Python scalars, by PyTorch's rules."""
    dim_result = zero_result = wrapped = None
    for x in operands:
        if isinstance(x, tensor_type):
            d = x._dtype
            if x._shape:
                dim_result = d if dim_result is None else PROMOTE[(dim_result, d)]
            else:
                zero_result = d if zero_result is None else PROMOTE[(zero_result, d)]
        elif x is not None:
            d = scalar_dtype(x)
            wrapped = d if wrapped is None else PROMOTE[(wrapped, d)]
    found = _combine(dim_result, _combine(zero_result, wrapped))
    if found is None:
        raise TypeError("type promotion needs at least one tensor or number")
    return found


def compute_and_out(kind: Promotion, common: dt.dtype) -> tuple[dt.dtype, dt.dtype]:
    """``(compute dtype, result dtype)`` for an elementwise promotion kind."""
    if kind is Promotion.INT_TO_FLOAT and common.category < dt.FLOATING:
        return dt.DEFAULTS.float, dt.DEFAULTS.float
    if kind is Promotion.ALWAYS_BOOL:
        return common, dt.bool_
    return common, common
