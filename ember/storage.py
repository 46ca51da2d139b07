"""``torch.storage``: ``UntypedStorage`` (what ``tensor.untyped_storage()`` returns: the bytes
tensors share) and the deprecated ``TypedStorage`` (``tensor.storage()``: the same bytes seen
as elements of one dtype).

ember's storage record is ``_storage.Storage``, built without a constructor call on every op's
output; ``UntypedStorage`` is the public name for it: ``isinstance`` holds for every storage,
and calling it allocates one, as PyTorch's ``torch.UntypedStorage(n, device=...)`` does.
"""

from __future__ import annotations

import warnings

from ._storage import Storage
from ._storage_api import checked_index

__all__ = ["TypedStorage", "UntypedStorage"]


class _StorageClass(type):
    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, Storage)

    def __subclasscheck__(cls, sub) -> bool:
        return issubclass(sub, Storage)


class UntypedStorage(metaclass=_StorageClass):
    """``UntypedStorage(size=0, *, device=None)`` (uninitialised bytes) or
    ``UntypedStorage(sequence_of_byte_values, *, device=None)``."""

    def __new__(cls, *args, device=None):
        from . import _dtype
        from ._factories import empty, tensor

        if len(args) > 1:
            raise TypeError(
                f"UntypedStorage() takes at most 1 positional argument ({len(args)} given)"
            )
        arg = args[0] if args else 0
        if isinstance(arg, int) and not isinstance(arg, bool):
            return empty(arg, dtype=_dtype.uint8, device=device)._storage
        return tensor(list(arg), dtype=_dtype.uint8, device=device).clone()._storage


# PyTorch's legacy storage class names, which TypedStorage.type() answers with
_LEGACY_NAMES = {
    "float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
    "int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
    "bool": "Bool", "complex64": "ComplexFloat", "complex128": "ComplexDouble",
}  # fmt: skip

_DEPRECATION = (
    "TypedStorage is deprecated. It will be removed in the future and UntypedStorage will be the "
    "only storage class. This should only matter to you if you are using storages directly.  To "
    "access UntypedStorage directly, use tensor.untyped_storage() instead of tensor.storage()"
)
_warned = False


def _warn_typed_storage_removal(stacklevel: int = 2) -> None:
    """Once per process, as PyTorch warns."""
    global _warned
    if not _warned:
        _warned = True
        warnings.warn(_DEPRECATION, UserWarning, stacklevel=stacklevel + 1)


def _reset_warn_typed_storage_removal() -> None:
    """Warn again at the next use (PyTorch's helper of the same name, for tests)."""
    global _warned
    _warned = False


class TypedStorage:
    """The bytes of an ``UntypedStorage`` seen as elements of ``dtype`` (``tensor.storage()``)."""

    is_sparse = False

    def __init__(self, *args, wrap_storage=None, dtype=None, device=None, _internal=False):
        from . import _dtype
        from ._factories import empty, tensor

        if not _internal:
            _warn_typed_storage_removal()
        self.dtype = dtype if dtype is not None else _dtype.get_default_dtype()
        if wrap_storage is not None:
            if args:
                raise TypeError("TypedStorage(): wrap_storage= takes no positional arguments")
            self._untyped_storage = wrap_storage.untyped()
            return
        arg = args[0] if args else 0
        if isinstance(arg, int) and not isinstance(arg, bool):
            made = empty(arg, dtype=self.dtype, device=device)
        else:
            made = tensor(list(arg), dtype=self.dtype, device=device).clone()
        self._untyped_storage = made._storage

    # -- what it is ---------------------------------------------------------------------------
    @property
    def device(self):
        return self._untyped_storage.device

    @property
    def is_cuda(self) -> bool:
        return self.device.type == "cuda"

    def element_size(self) -> int:
        return self.dtype.itemsize

    def size(self) -> int:
        return self._untyped_storage._nbytes // self.dtype.itemsize

    def __len__(self) -> int:
        return self.size()

    def nbytes(self) -> int:
        return self._untyped_storage._nbytes

    def data_ptr(self) -> int:
        return self._untyped_storage.data_ptr()

    def untyped(self):
        return self._untyped_storage

    def type(self, dtype=None, non_blocking=False) -> str:
        if dtype is not None:
            raise NotImplementedError("TypedStorage.type(dtype): use a tensor's .to(dtype)")
        return f"ember.{_LEGACY_NAMES.get(self.dtype.name, 'storage.Typed')}Storage"

    def is_shared(self) -> bool:
        return self._untyped_storage.is_shared()

    def share_memory_(self):
        self._untyped_storage.share_memory_()
        return self

    def is_pinned(self, device="cuda") -> bool:
        return False

    def __repr__(self) -> str:
        values = "".join(f" {v}\n" for v in self.tolist())
        kind = f"ember.storage.TypedStorage(dtype={self.dtype}, device={self.device})"
        return f"{values}[{kind} of size {self.size()}]"

    # -- its elements -------------------------------------------------------------------------
    def _elements(self):
        """A tensor of ``dtype`` over every whole element (no grad, no copy)."""
        from ._tensor import make

        return make(self._untyped_storage, (self.size(),), (1,), 0, self.dtype, True)

    def __getitem__(self, idx):
        return self._elements()[checked_index(idx, self.size(), self.type())].item()

    def __setitem__(self, idx, value) -> None:
        self._elements()[checked_index(idx, self.size(), self.type())] = value

    def tolist(self) -> list:
        return self._elements().tolist()

    def fill_(self, value):
        self._elements().fill_(value)
        return self

    def copy_(self, src, non_blocking=None):
        self._untyped_storage.copy_(src.untyped())
        return self

    def _wrap(self, untyped):
        return TypedStorage(wrap_storage=untyped, dtype=self.dtype, _internal=True)

    def clone(self):
        return self._wrap(self._untyped_storage.clone())

    def cpu(self):
        return self._wrap(self._untyped_storage.cpu())

    def to(self, *, device=None, non_blocking=False):
        return self._wrap(self._untyped_storage.to(device=device))

    def cuda(self, device=None, non_blocking=False):
        return self._wrap(self._untyped_storage.cuda(device))

    def resize_(self, size: int):
        self._untyped_storage.resize_(size * self.dtype.itemsize)
        return self
