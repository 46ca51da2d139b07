"""``Tensor.resize_``: new sizes (and contiguous strides) over the same storage, grown if needed.

``out=`` arguments depend on it: an out tensor of the wrong shape is resized to the result's.
As in PyTorch, the storage grows in place, so every view of it sees the new memory, the bytes it
held are kept, and memory ember did not allocate (``from_numpy`` arrays, shared memory) cannot
grow.
"""

from __future__ import annotations

import functools
import math
import numbers
import operator
import warnings

from . import _dtype as dt
from ._tensor import Tensor, contiguous_strides, empty, make
from .dispatcher.allocator import Lease


def _sizes(args) -> tuple:
    if len(args) == 1 and not isinstance(args[0], numbers.Integral):
        args = tuple(args[0])
    try:
        sizes = tuple(int(s.__index__()) for s in args)
    except (AttributeError, TypeError):
        raise TypeError(f"resize_(): size must be a sequence of ints, got {args!r}") from None
    if any(s < 0 for s in sizes):
        bad = next(s for s in sizes if s < 0)
        raise RuntimeError(f"Trying to create tensor with negative dimension {bad}: {list(sizes)}")
    return sizes


def _resizable(storage) -> bool:
    """Whether ember allocated the storage's memory (a raw handle that frees itself, or a lease
    from the caching allocator), and so may swap it for a larger allocation."""
    return storage.owner is storage.handle or isinstance(storage.owner, Lease)


def check_resizable(storage, nbytes: int) -> None:
    """Refuse to give ``storage`` ``nbytes`` when ember did not allocate its memory."""
    if not _resizable(storage):
        raise RuntimeError(
            f"Trying to resize storage that is not resizable (it holds {storage._nbytes} bytes "
            f"of memory ember did not allocate; {nbytes} are needed)"
        )


def _grow(storage, nbytes: int) -> None:
    """Move ``storage`` to a new allocation of ``nbytes``, keeping its bytes; in place, so that
    all the tensors on it follow."""
    check_resizable(storage, nbytes)
    fresh = empty((nbytes,), dt.uint8, storage.device)._storage
    if storage._nbytes:
        old = make(storage, (storage._nbytes,), (1,), 0, dt.uint8, True)
        new = make(fresh, (storage._nbytes,), (1,), 0, dt.uint8, True)
        from .dispatcher.optable import OPS

        OPS["copy_"].kernel(storage.device.type, dt.uint8)(new, old)
    storage.handle, storage.byte_offset, storage.ptr = fresh.handle, fresh.byte_offset, fresh.ptr
    storage.owner, storage._nbytes = fresh.owner, fresh._nbytes


def resize_(self: Tensor, *size, memory_format=None) -> Tensor:
    """Give this tensor the sizes ``size`` (contiguous strides, same storage offset).

    The storage grows when the new sizes need more memory (the old bytes are kept, new ones are
    uninitialised); a tensor that keeps its sizes keeps its strides too.

    Example:
        >>> x = ember.arange(6.)
        >>> x.resize_(2, 2)
        tensor([[0., 1.],
                [2., 3.]])
    """
    sizes = _sizes(size)
    if self._requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    if self.__dict__.get("_fw"):
        raise RuntimeError("cannot resize variables that has a forward grad")
    if sizes == self._shape:
        return self
    from .autograd.batched import BatchedTensor, refresh

    if self.__class__ is BatchedTensor:  # each sample resized, as functorch's rule does
        resize_(self._value, (self._value._shape[0], *sizes))
        refresh(self)
        return self
    itemsize = self._dtype.itemsize
    numel = math.prod(sizes)
    needed = (self._offset + numel) * itemsize if numel else 0
    if needed > self._storage._nbytes:
        _grow(self._storage, needed)
    self._shape = sizes
    self._stride = contiguous_strides(sizes)
    self._contig = True
    return self


def resize_as_(self: Tensor, other: Tensor, memory_format=None) -> Tensor:
    """``self.resize_(other.shape)``."""
    return resize_(self, other._shape)


def _resize_function():
    """PyTorch's ``torch.autograd._functions.Resize``, built on first use (autograd imports
    this package)."""
    global _Resize
    if _Resize is None:
        from .autograd import Function

        class Resize(Function):
            @staticmethod
            def forward(ctx, tensor, sizes):
                ctx.sizes = sizes
                ctx.numel = functools.reduce(operator.mul, sizes, 1)
                if tensor.numel() != ctx.numel:
                    raise RuntimeError(
                        f"requested resize to {'x'.join(map(str, sizes))} ({ctx.numel} elements "
                        f"in total), but the given tensor has a size of "
                        f"{'x'.join(map(str, tensor.size()))} ({tensor.numel()} elements). "
                        "autograd's resize can only change the shape of a given tensor, while "
                        "preserving the number of elements. "
                    )
                ctx.input_sizes = tensor.size()
                if tensor.is_contiguous():
                    return tensor.new(tensor).contiguous().view(*sizes)
                return tensor.contiguous().view(*sizes)

            @staticmethod
            def backward(ctx, grad_output):
                return grad_output.contiguous().view(ctx.input_sizes), None

        _Resize = Resize
    return _Resize


_Resize = None


def resize(self: Tensor, *sizes) -> Tensor:
    """Deprecated: ``self`` viewed with ``sizes`` (same number of elements), differentiable."""
    warnings.warn("non-inplace resize is deprecated", stacklevel=2)
    return _resize_function().apply(self, sizes)


def resize_as(self: Tensor, tensor: Tensor) -> Tensor:
    """Deprecated: ``self.resize(*tensor.size())``."""
    warnings.warn("non-inplace resize_as is deprecated", stacklevel=2)
    return _resize_function().apply(self, tensor.size())
