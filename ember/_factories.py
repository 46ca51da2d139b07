"""Tensor factories with PyTorch's signatures: ``tensor``, ``zeros``, ``randn``, ``from_numpy``."""

from __future__ import annotations

import numbers

import numpy as np

from . import _dtype as dt
from ._device import CPU
from ._tensor import Tensor, is_contiguous, make
from .dispatcher.memory import backend_for, normalize_device
from .dispatcher.optable import OPS


def _size_args(size) -> tuple:
    """``zeros(2, 3)``, ``zeros((2, 3))``, ``zeros([2, 3])`` and ``zeros(Size)`` all mean (2, 3)."""
    if len(size) == 1 and not isinstance(size[0], numbers.Integral):
        size = size[0]
        if isinstance(size, Tensor):
            size = size.tolist()
    try:
        return tuple(_dim(s) for s in size)
    except (AttributeError, TypeError):
        raise TypeError(f"size must be a sequence of ints, got {size!r}") from None


def _dim(s) -> int:
    # int subclasses stay as they are: a trace records the sizes it reads (ember.jit.symbolic)
    if isinstance(s, int) and s.__class__ is not bool:
        return s
    return int(s.__index__())


def _finish(t: Tensor, requires_grad: bool) -> Tensor:
    if requires_grad:
        t.requires_grad_(True)
    return t


def from_numpy(array: np.ndarray) -> Tensor:
    """A CPU tensor sharing memory with a numpy array (writes show on both sides).

    Negative strides are kept (ember's strides are signed), unlike in PyTorch.
    """
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy(): expected np.ndarray (got {type(array).__name__})")
    if not array.dtype.isnative:  # before the dtype lookup, which would call '>f8' unsupported
        raise ValueError(
            f"from_numpy(): byte-swapped (non-native byte order) arrays are not supported; "
            f"convert with array.astype(array.dtype.newbyteorder('=')) ({array.dtype.str})"
        )
    dtype = dt.from_numpy_dtype(array.dtype)
    itemsize = array.itemsize
    if any(s % itemsize for s in array.strides):
        raise ValueError(
            f"from_numpy(): strides {array.strides} are not a multiple of the element size "
            f"{itemsize}"
        )
    strides = tuple(s // itemsize for s in array.strides)
    address = array.__array_interface__["data"][0]
    if array.size:
        low = sum((n - 1) * s for n, s in zip(array.shape, strides) if s < 0)
        high = sum((n - 1) * s for n, s in zip(array.shape, strides) if s > 0)
    else:
        low = high = 0
    base = address + low * itemsize
    nbytes = (high - low + 1) * itemsize if array.size else 0
    runtime = backend_for("cpu").runtime
    from ._storage import Storage

    storage = Storage(CPU, nbytes, base, 0, base, array, runtime)
    shape = tuple(array.shape)
    return make(storage, shape, strides, -low, dtype, is_contiguous(shape, strides))


def _infer_array(data, dtype):
    """A numpy array for ``data`` with PyTorch's dtype inference for Python values."""
    if isinstance(data, Tensor):
        return data.detach().cpu().numpy(), data.dtype if dtype is None else dtype
    if isinstance(data, (np.ndarray, np.generic)):  # numpy scalars keep their dtype too
        array = np.asarray(data)
        inferred = dt.from_numpy_dtype(array.dtype) if array.dtype != object else None
    else:
        array = np.array(data)
        if array.dtype == object:
            raise TypeError(f"tensor(): can't infer a dtype for {type(data).__name__} data")
        if array.dtype.kind == "f":
            inferred = dt.DEFAULTS.float
        elif array.dtype.kind in "iu":
            inferred = dt.int64
        elif array.dtype.kind == "b":
            inferred = dt.bool_
        elif array.dtype.kind == "U" or array.dtype.kind == "S":
            raise TypeError("tensor(): strings are not supported")
        else:
            inferred = dt.from_numpy_dtype(array.dtype)
    target = dtype or inferred
    return np.asarray(array, dtype=target.np), target


def tensor(
    data, dtype=None, device=None, requires_grad: bool = False, pin_memory: bool = False
) -> Tensor:
    """A new tensor holding a copy of ``data`` (nested lists, numbers, numpy arrays, tensors).

    Args:
        data: the values; Python floats become the default dtype, ints int64, bools bool.
        dtype: the element type (inferred when None).
        device: where to put it (the default device when None).
        requires_grad: track operations on it for autograd.

    Example:
        >>> ember.tensor([[1.0, 2.0], [3.0, 4.0]])
    """
    dtype = _dtype_arg(dtype)
    array, target = _infer_array(data, dtype)
    out = from_numpy(np.array(array, dtype=target.np, copy=True, order="C"))
    device = normalize_device(device)
    if device is not CPU:
        out = OPS["_to_copy"](out, None, device)
    return _finish(out, requires_grad)


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """Like ``tensor`` but shares memory with a numpy array or tensor when it can."""
    dtype = _dtype_arg(dtype)
    device = normalize_device(device) if device is not None else None
    if isinstance(data, Tensor):
        if (dtype is None or data.dtype is dtype) and (device is None or data.device is device):
            return data
        return data.to(device=device or data.device, dtype=dtype or data.dtype)
    same_dtype = dtype is None or (isinstance(data, np.ndarray) and data.dtype == dtype.np)
    if isinstance(data, np.ndarray) and (device is None or device is CPU) and same_dtype:
        try:
            return from_numpy(data)
        except (TypeError, ValueError):
            pass
    return tensor(data, dtype=dtype, device=device)


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad: bool = False) -> Tensor:
    out = tensor(obj, dtype=dtype, device=device) if copy else as_tensor(obj, dtype, device)
    return _finish(out, requires_grad)


def from_dlpack(obj) -> Tensor:
    """A tensor sharing memory with any DLPack exporter on the CPU (numpy arrays, for one)."""
    return from_numpy(np.from_dlpack(obj))


def _dtype_arg(dtype):
    if dtype is None or isinstance(dtype, dt.dtype):
        return dtype
    if isinstance(dtype, str) and dtype in dt.ALIASES:
        return dt.ALIASES[dtype]
    try:
        return dt.from_numpy_dtype(dtype)
    except TypeError:
        raise TypeError(f"dtype must be an ember.dtype, got {dtype!r}") from None


def empty(*size, dtype=None, device=None, requires_grad=False, **_ignored) -> Tensor:
    """An uninitialised tensor of the given size."""
    return _finish(OPS["empty"](_size_args(size), _dtype_arg(dtype), device), requires_grad)


def full(size, fill_value, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A tensor of ``size`` filled with ``fill_value`` (dtype inferred from the value)."""
    out = OPS["full"](_size_args((size,)), fill_value, _dtype_arg(dtype), device)
    return _finish(out, requires_grad)


def zeros(*size, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A tensor of zeros (default dtype unless given)."""
    out = OPS["full"](_size_args(size), 0, _dtype_arg(dtype) or dt.DEFAULTS.float, device)
    return _finish(out, requires_grad)


def ones(*size, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A tensor of ones (default dtype unless given)."""
    out = OPS["full"](_size_args(size), 1, _dtype_arg(dtype) or dt.DEFAULTS.float, device)
    return _finish(out, requires_grad)


def _like(fn, input, dtype, device, requires_grad, *args):
    return fn(
        input.shape,
        *args,
        dtype=_dtype_arg(dtype) or input.dtype,
        device=input.device if device is None else device,
        requires_grad=requires_grad,
    )


def empty_like(input, *, dtype=None, device=None, requires_grad=False, **_ignored) -> Tensor:
    return _like(empty, input, dtype, device, requires_grad)


def zeros_like(input, *, dtype=None, device=None, requires_grad=False, **_ignored) -> Tensor:
    return _like(zeros, input, dtype, device, requires_grad)


def ones_like(input, *, dtype=None, device=None, requires_grad=False, **_ignored) -> Tensor:
    return _like(ones, input, dtype, device, requires_grad)


def full_like(input, fill_value, *, dtype=None, device=None, requires_grad=False, **_ignored):
    return full(
        input.shape,
        fill_value,
        dtype=_dtype_arg(dtype) or input.dtype,
        device=input.device if device is None else device,
        requires_grad=requires_grad,
    )


def arange(start, end=None, step=1, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Values from ``start`` up to (excluding) ``end`` every ``step``; ``arange(n)`` is 0..n-1."""
    out = OPS["arange"](start, end, step, _dtype_arg(dtype), device)
    return _finish(out, requires_grad)


def linspace(start, end, steps, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``end`` inclusive."""
    return _finish(OPS["linspace"](start, end, steps, _dtype_arg(dtype), device), requires_grad)


def eye(n, m=None, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A 2-D tensor with ones on the diagonal."""
    return _finish(OPS["eye"](n, m, _dtype_arg(dtype), device), requires_grad)


def rand(*size, generator=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Uniform samples in [0, 1)."""
    out = OPS["empty"](_size_args(size), _dtype_arg(dtype), device)
    return _finish(OPS["uniform_"](out, 0.0, 1.0, generator), requires_grad)


def randn(*size, generator=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Standard normal samples."""
    out = OPS["empty"](_size_args(size), _dtype_arg(dtype), device)
    return _finish(OPS["normal_"](out, 0.0, 1.0, generator), requires_grad)


def randint(*args, size=None, generator=None, dtype=None, device=None, requires_grad=False):
    """Integers uniform in [low, high): ``randint(high, size)`` or ``randint(low, high, size)``."""
    if size is not None:
        args = (*args, size)
    if len(args) == 2:
        low, (high, size) = 0, args
    elif len(args) == 3:
        low, high, size = args
    else:
        raise TypeError("randint() expects (high, size) or (low, high, size)")
    out = OPS["empty"](_size_args((size,)), _dtype_arg(dtype) or dt.int64, device)
    return _finish(OPS["random_"](out, int(low), int(high), generator), requires_grad)


def randperm(n, *, generator=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A random permutation of 0..n-1."""
    out = OPS["randperm"](n, generator, _dtype_arg(dtype), normalize_device(device))
    return _finish(out, requires_grad)


def rand_like(input, *, dtype=None, device=None, requires_grad=False, **_ignored) -> Tensor:
    return _like(rand, input, dtype, device, requires_grad)


def randn_like(input, *, dtype=None, device=None, requires_grad=False, **_ignored) -> Tensor:
    return _like(randn, input, dtype, device, requires_grad)


def randint_like(input, low=0, high=None, *, dtype=None, device=None, requires_grad=False):
    if high is None:
        low, high = 0, low
    return randint(
        low,
        high,
        input.shape,
        dtype=_dtype_arg(dtype) or input.dtype,
        device=input.device if device is None else device,
        requires_grad=requires_grad,
    )


def normal(mean=0.0, std=1.0, size=None, *, generator=None, dtype=None, device=None):
    """Normal samples: ``normal(mean, std, size)`` with floats, or elementwise tensor mean/std."""
    if isinstance(mean, Tensor) or isinstance(std, Tensor):
        ref = mean if isinstance(mean, Tensor) else std
        noise = randn(ref.shape, generator=generator, dtype=ref.dtype, device=ref.device)
        return noise * std + mean
    out = OPS["empty"](_size_args((size,)), _dtype_arg(dtype), device)
    return OPS["normal_"](out, float(mean), float(std), generator)


def is_tensor(obj) -> bool:
    return isinstance(obj, Tensor)


__all__ = [
    "arange",
    "as_tensor",
    "asarray",
    "empty",
    "empty_like",
    "eye",
    "from_dlpack",
    "from_numpy",
    "full",
    "full_like",
    "is_tensor",
    "linspace",
    "normal",
    "ones",
    "ones_like",
    "rand",
    "rand_like",
    "randint",
    "randint_like",
    "randn",
    "randn_like",
    "randperm",
    "tensor",
    "zeros",
    "zeros_like",
]
