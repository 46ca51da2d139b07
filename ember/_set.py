"""``Tensor.set_``: point a tensor at another storage, or at another tensor's memory.

The tensor keeps its identity (its Python object, grad and hooks) and takes the storage, sizes,
strides and offset given; like ``resize_``, a storage too small for the geometry grows in place.
ember keeps the version counter on the storage, so after ``set_`` the tensor counts its new
storage's writes (PyTorch keeps the tensor's own counter): the old storage's count is bumped,
which is what invalidates copies of the old values saved for backward.
"""

from __future__ import annotations

import numbers

from ._resize import _grow
from ._storage import Storage
from ._tensor import Tensor, contiguous_strides, empty, is_contiguous
from .dispatcher.mathbits import set_bits

# The C++ type names PyTorch's message prints (caffe2 TypeMeta names)
_CPP_NAMES = {
    "float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
    "int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char",
    "uint8": "unsigned char", "bool": "bool", "complex64": "c10::complex<float>",
    "complex128": "c10::complex<double>", "uint16": "short unsigned int",
    "uint32": "unsigned int", "uint64": "long unsigned int",
}  # fmt: skip

_SIGNATURES = (
    " * ()\n"
    " * (torch.Storage source)\n"
    " * (torch.Storage source, int storage_offset, tuple of ints size, tuple of ints stride = "
    "None)\n"
    " * (Tensor source)\n"
    " * (Tensor source, int storage_offset, tuple of ints size, tuple of ints stride = None)\n"
)


def _cpp_name(dtype) -> str:
    return _CPP_NAMES.get(dtype.name, f"c10::{dtype.name.capitalize()}")


def _invalid(args: tuple) -> TypeError:
    got = ", ".join(type(a).__name__ for a in args)
    return TypeError(
        f"set_() received an invalid combination of arguments - got ({got}), but expected one "
        f"of:\n{_SIGNATURES}"
    )


def _check_dtype(self: Tensor, dtype) -> None:
    if dtype is not None and dtype != self._dtype:
        raise RuntimeError(
            f"Could not set tensor of type {_cpp_name(dtype)} to a tensor of type "
            f"{_cpp_name(self._dtype)}"
        )


def _untyped(source):
    """``(storage, dtype or None)`` of a storage source (untyped or typed), else None."""
    if isinstance(source, Storage):
        return source, None
    untyped = getattr(source, "_untyped_storage", None)
    return (untyped, source.dtype) if isinstance(untyped, Storage) else None


def _check_autograd(self: Tensor, source) -> None:
    from .autograd.grad_mode import THREAD

    if not THREAD.mode.enabled:
        return
    if self._requires_grad and self._grad_fn is None:
        raise RuntimeError(
            "a leaf Variable that requires grad is being used in an in-place operation."
        )
    if self._requires_grad or (isinstance(source, Tensor) and source._requires_grad):
        raise NotImplementedError(
            "set_(): ember does not record set_ for autograd; call it under ember.no_grad() "
            "or on detached tensors"
        )


def _place(self: Tensor, storage, offset: int, size: tuple, stride: tuple) -> Tensor:
    if offset < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {offset}")
    if len(size) != len(stride):
        raise RuntimeError(f"unequal size length ({len(size)}) and stride length ({len(stride)})")
    if any(s < 0 for s in size):
        raise RuntimeError("numel: integer multiplication overflow")
    if 0 in size:
        needed = 0
    else:
        needed = (offset + 1 + sum((n - 1) * s for n, s in zip(size, stride))) * self.itemsize
    if needed > storage._nbytes:
        _grow(storage, needed)
    self._storage.version += 1
    self._storage, self._offset = storage, offset
    self._shape, self._stride = size, stride
    self._contig = is_contiguous(size, stride)
    return self


def set_(self: Tensor, *args, **kwargs) -> Tensor:
    """``set_()``: an empty tensor over a new empty storage; ``set_(source)``: share the memory
    of the tensor or storage ``source``; ``set_(source, storage_offset, size, stride=None)``:
    that geometry over ``source``'s storage (contiguous strides when ``stride`` is None).

    Example:
        >>> x = ember.zeros(3)
        >>> x.set_(ember.arange(4.))
        tensor([0., 1., 2., 3.])
    """
    names = ("source", "storage_offset", "size", "stride")
    unknown = [k for k in kwargs if k not in names]
    if unknown or len(args) > 4:
        raise _invalid(args + tuple(kwargs.values()))
    bound = dict(zip(names, args), **kwargs)
    source = bound.get("source")
    geometry = [bound.get(name) for name in names[1:]]
    if source is None and not bound:
        _check_autograd(self, None)
        return _place(self, empty((0,), self._dtype, self.device)._storage, 0, (0,), (1,))
    if (geometry[0] is not None and geometry[1] is None) or (geometry[0] is None and any(geometry)):
        raise _invalid(args + tuple(kwargs.values()))
    if isinstance(source, Tensor):
        _check_dtype(self, source._dtype)
        _check_autograd(self, source)
        if geometry[0] is None:
            geometry = [source._offset, source._shape, source._stride]
        storage = source._storage
    else:
        found = _untyped(source)
        if found is None:
            raise _invalid(args + tuple(kwargs.values()))
        storage, dtype = found
        _check_dtype(self, dtype)
        _check_autograd(self, None)
        if geometry[0] is None:
            geometry = [0, (storage._nbytes // self.itemsize,), None]
    offset, size, stride = geometry
    if not isinstance(offset, numbers.Integral):
        raise _invalid(args + tuple(kwargs.values()))
    size = tuple(int(n) for n in size)
    stride = contiguous_strides(size) if stride is None else tuple(int(s) for s in stride)
    _place(self, storage, int(offset), size, stride)
    bits = (source._conj_bit, source._neg_bit) if isinstance(source, Tensor) else (False, False)
    if bits != (self._conj_bit, self._neg_bit):  # the lazy conj/neg bits travel with the memory
        set_bits(self, *bits)
    return self
