"""Factories of PyTorch's core surface that are thin composites of ``empty`` and ``full``:
``scalar_tensor``, ``empty_strided``, ``empty_permuted``, ``Tensor.new_empty_strided`` and
``logspace`` (PyTorch's CPU formula over ``arange``, in float64, then cast)."""

from __future__ import annotations

import math
import warnings

from . import _dtype as dt
from ._factories import _dtype_arg, _finish, _into, _no_layout, _size_args, arange, full
from ._tensor import Tensor, is_contiguous, make
from .dispatcher.optable import OPS


def scalar_tensor(
    s, *, dtype=None, layout=None, device=None, pin_memory=False, requires_grad=False
) -> Tensor:
    """A 0-d tensor holding ``s``, in the default float dtype unless ``dtype`` is given.

    Example:
        >>> ember.scalar_tensor(3)
        tensor(3.)
    """
    _no_layout("scalar_tensor", layout)
    dtype = _dtype_arg(dtype) or dt.DEFAULTS.float
    made = full((), s, dtype=dtype, device=device, pin_memory=pin_memory)
    return _finish(made, requires_grad)


def _ints(values, op: str, what: str) -> tuple:
    try:
        return tuple(int(v.__index__()) for v in values)
    except (AttributeError, TypeError):
        raise TypeError(
            f"{op}(): argument '{what}' must be tuple of ints, got {values!r}"
        ) from None


def _strided(op: str, size, stride, dtype, device, requires_grad, pin_memory) -> Tensor:
    """An uninitialised tensor of ``size`` whose elements are ``stride`` apart, over a storage
    just large enough (as PyTorch's empty_strided allocates)."""
    size, stride = _ints(size, op, "size"), _ints(stride, op, "stride")
    if len(size) != len(stride):
        raise RuntimeError(
            f"mismatch in length of strides and shape: {op}() got size {list(size)} and stride "
            f"{list(stride)}"
        )
    if any(s < 0 for s in size):
        bad = next(s for s in size if s < 0)
        raise RuntimeError(f"Trying to create tensor with negative dimension {bad}: {list(size)}")
    extent = 0 if 0 in size else 1 + sum((n - 1) * st for n, st in zip(size, stride))
    base = OPS["empty"]((extent,), _dtype_arg(dtype), device)
    made = make(base._storage, size, stride, 0, base.dtype, is_contiguous(size, stride))
    return _finish(made, requires_grad, pin_memory, op)


def empty_strided(
    size, stride, *, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False
) -> Tensor:
    """An uninitialised tensor with the given sizes and strides (in elements).

    Example:
        >>> ember.empty_strided((2, 3), (1, 2)).stride()
        (1, 2)
    """
    _no_layout("empty_strided", layout)
    return _strided("empty_strided", size, stride, dtype, device, requires_grad, pin_memory)


def new_empty_strided(
    self,
    size,
    stride,
    *,
    dtype=None,
    layout=None,
    device=None,
    requires_grad=False,
    pin_memory=False,
) -> Tensor:
    """``empty_strided`` in this tensor's dtype and device unless given."""
    _no_layout("new_empty_strided", layout)
    dtype = _dtype_arg(dtype) or self.dtype
    device = self.device if device is None else device
    return _strided("new_empty_strided", size, stride, dtype, device, requires_grad, pin_memory)


def empty_permuted(
    size,
    physical_layout,
    *,
    dtype=None,
    layout=None,
    device=None,
    requires_grad=False,
    pin_memory=False,
) -> Tensor:
    """An uninitialised tensor of ``size`` laid out in memory in the order of dims
    ``physical_layout`` (outermost first): ``empty_permuted((2, 3), (1, 0))`` is column-major.
    """
    _no_layout("empty_permuted", layout)
    size = _size_args((size,), "empty_permuted")
    order = _ints(physical_layout, "empty_permuted", "physical_layout")
    if sorted(order) != list(range(len(size))):
        raise RuntimeError(
            f"Number of dimensions in size does not match the length of the physical_layout; "
            f"or physical_layout is not a permutation of the dims: size {list(size)}, "
            f"physical_layout {list(order)}"
        )
    stride = [0] * len(size)
    step = 1
    for d in reversed(order):
        stride[d] = step
        step *= max(size[d], 1)
    return _strided("empty_permuted", size, stride, dtype, device, requires_grad, pin_memory)


def _logspace_values(start: float, end: float, steps: int, base: float, device):
    """PyTorch's CPU kernel: base ** (start + step * i) for the first half and
    base ** (end - step * (steps - 1 - i)) for the rest (exact ends), in float64 (complex128
    for complex ends)."""
    wide = dt.complex128 if isinstance(start, complex) else dt.float64
    index = arange(steps, dtype=dt.float64, device=device)
    i = index.to(wide)
    if steps == 1:
        return full((1,), float(base) ** start, dtype=wide, device=device)
    step = (end - start) / (steps - 1)
    exponent = OPS["where"](index < steps // 2, start + step * i, end - step * (steps - 1 - i))
    return OPS["pow"](float(base), exponent)


def _endpoint(value, dtype) -> float:
    """start/end as PyTorch reads them: a 0-d tensor's value, converted to the result's dtype
    first (``logspace(1.5, ..., dtype=int64)`` starts at 1)."""
    if isinstance(value, Tensor):
        value = value.item()
    if dtype.is_floating_point:
        return float(dtype.np.type(value))
    if dtype.is_complex:
        return complex(value)
    return float(math.trunc(value)) if dtype is not dt.bool_ else float(bool(value))


def logspace(
    start,
    end,
    steps,
    base=10.0,
    *,
    out=None,
    dtype=None,
    layout=None,
    device=None,
    requires_grad=False,
    pin_memory=False,
) -> Tensor:
    """``steps`` values from ``base ** start`` to ``base ** end``, evenly spaced in the exponent.

    Example:
        >>> ember.logspace(0, 3, 4)
        tensor([   1.,   10.,  100., 1000.])
    """
    _no_layout("logspace", layout)
    if out is not None:
        make_ = lambda d, dev: logspace(start, end, steps, base, dtype=d, device=dev)  # noqa: E731
        return _into("logspace", "empty", out, dtype, device, make_, requires_grad)
    steps = int(steps.__index__())
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    dtype = _dtype_arg(dtype) or dt.DEFAULTS.float
    if isinstance(start, Tensor) and device is None:
        device = start.device
    low, high = _endpoint(start, dtype), _endpoint(end, dtype)
    # An integer result truncates: 3 ** 1.0 one ulp low (a GPU's pow, on an H200) is 2, not
    # PyTorch's 3. Those values are computed with the host's pow, as PyTorch's CPU kernel does.
    exact_on_host = not (dtype.is_floating_point or dtype.is_complex)
    values = _logspace_values(low, high, steps, base, "cpu" if exact_on_host else device)
    return _finish(values.to(dtype=dtype, device=device), requires_grad, pin_memory, "logspace")


_RANGE_DEPRECATED = (
    "torch.range is deprecated and will be removed in a future release because its behavior is "
    "inconsistent with Python's range builtin. Instead, use torch.arange, which produces values "
    "in [start, end)."
)


def range_(
    start,
    end,
    step=1,
    *,
    out=None,
    dtype=None,
    layout=None,
    device=None,
    requires_grad=False,
    pin_memory=False,
) -> Tensor:
    """``ember.range``, PyTorch's deprecated inclusive range: ``floor((end - start) / step) + 1``
    values ``start + i * step``, in the default float dtype unless ``dtype`` is given (warns, as
    PyTorch's, to use ``arange``).

    Example:
        >>> ember.range(1, 4)
        tensor([1., 2., 3., 4.])
    """
    warnings.warn(_RANGE_DEPRECATED, UserWarning, stacklevel=2)
    _no_layout("range", layout)
    if out is not None:
        make_ = lambda d, dev: range_(start, end, step, dtype=d, device=dev)  # noqa: E731
        return _into("range", "empty", out, dtype, device, make_, requires_grad)
    dtype = _dtype_arg(dtype) or dt.DEFAULTS.float
    start, end, step = (float(v) if isinstance(v, Tensor) else v for v in (start, end, step))
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (step > 0 and end < start) or (step < 0 and end > start):
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    count = math.floor((end - start) / step) + 1
    # the values in float64 (PyTorch's accumulate type), then rounded once to dtype
    steps = arange(count, dtype=dt.float64, device=device)
    return _finish((steps * step + start).to(dtype), requires_grad, pin_memory, "range")


FUNCTIONS = {
    "range": range_,
    "scalar_tensor": scalar_tensor,
    "empty_strided": empty_strided,
    "empty_permuted": empty_permuted,
    "logspace": logspace,
}

METHODS = {
    "new_empty_strided": new_empty_strided,
}
