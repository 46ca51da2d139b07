"""The kernel table of ``ref``: ``{op name: {dtype name or "*": kernel}}``.

Kernels follow each op row's ``kernel_args`` (docs/plugins.md): outputs are allocated, inputs
promoted and broadcast (stride-0 views) by ember before the call. They read only the tensor
attributes of the kernel contract, through ``host_view``.
"""

from __future__ import annotations

import ctypes

import ml_dtypes
import numpy as np

_NUMPY_DTYPES = {"bfloat16": np.dtype(ml_dtypes.bfloat16)}


def host_view(t) -> np.ndarray:
    """A numpy array over a tensor's elements (any strides, negative and zero included)."""
    dtype = _NUMPY_DTYPES.get(t._dtype.name) or np.dtype(t._dtype.name)
    itemsize = t._dtype.itemsize
    shape, stride = t._shape, t._stride
    if 0 in shape:
        return np.empty(shape, dtype)
    low = sum((n - 1) * s for n, s in zip(shape, stride) if s < 0)
    high = sum((n - 1) * s for n, s in zip(shape, stride) if s > 0)
    start = t._storage.ptr + (t._offset + low) * itemsize
    raw = (ctypes.c_char * ((high - low + 1) * itemsize)).from_address(start)
    return np.ndarray(
        shape,
        dtype=dtype,
        buffer=raw,
        offset=-low * itemsize,
        strides=tuple(s * itemsize for s in stride),
    )


# Like ember's C kernels, 16-bit floats compute in float32 and round once, at the store.
_COMPUTE = {"float16": np.dtype(np.float32), "bfloat16": np.dtype(np.float32)}


def _operand(value, dtype):
    """A tensor or Python scalar as a numpy operand in ``dtype``. Scalars wrap into integer
    dtypes as C casts do (numpy refuses an out-of-range Python int for a small dtype)."""
    if isinstance(value, (bool, int, float, complex)):
        return np.asarray(value).astype(dtype)
    return host_view(value).astype(dtype, copy=False)


def copy_(dst, src):
    """``(dst, src)``: src broadcast to dst's shape, any dtypes (floats to ints truncate)."""
    with np.errstate(invalid="ignore", over="ignore"):
        host_view(dst)[...] = host_view(src)


def fill_(out, value):
    """``(out, value)``: value a Python scalar."""
    view = host_view(out)
    view[...] = _operand(value, _COMPUTE.get(out._dtype.name, view.dtype))


# One description per elementwise op: the numpy ufunc that computes it. ``kernel(out, *operands)``.
ELEMENTWISE = {
    "neg": np.negative,
    "abs": np.absolute,
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "maximum": np.maximum,
    "minimum": np.minimum,
}


# Ops that take a Python scalar beside a 16-bit float unrounded (PyTorch's opmath scalar); the
# others round it to the tensor's dtype first, as PyTorch does.
OPMATH_SCALAR = (np.multiply,)


def _tensor_view(value) -> np.ndarray:
    return np.asarray(value) if isinstance(value, (bool, int, float, complex)) else host_view(value)


def _elementwise(ufunc):
    def kernel(out, *operands):
        view = host_view(out)
        compute = _COMPUTE.get(out._dtype.name, view.dtype)
        if compute.kind != "c":  # abs of a complex input: computed in it, the result real
            compute = next(
                (v.dtype for v in map(_tensor_view, operands) if v.dtype.kind == "c"), compute
            )
        scalar_dtype = compute if ufunc in OPMATH_SCALAR else view.dtype
        values = [
            _operand(x, scalar_dtype if isinstance(x, (bool, int, float, complex)) else compute)
            for x in operands
        ]
        with np.errstate(all="ignore"):  # overflow wraps and NaNs propagate, as on the CPU
            view[...] = ufunc(*(v.astype(compute, copy=False) for v in values))

    kernel.__qualname__ = f"ref.{ufunc.__name__}"
    return kernel


KERNELS = {
    "copy_": {"*": copy_},
    "fill_": {"*": fill_},
    **{name: {"*": _elementwise(ufunc)} for name, ufunc in ELEMENTWISE.items()},
}
