"""PyTorch's ``UntypedStorage`` methods on ember's storages (``tensor.untyped_storage()``).

A mixin of ``Storage`` (``_storage.py``), which stays the lean record every op's output builds;
these methods read and write its bytes through a uint8 tensor over them, so every device's
kernels serve them. Imports are local: ``_storage`` is imported before the tensor module.
"""

from __future__ import annotations


def checked_index(idx, size: int, kind: str) -> int:
    """``idx`` (an int, negative from the end) as an element index below ``size``, with
    PyTorch's errors for storages (an out-of-range negative index named after adding the size)."""
    if not isinstance(idx, int) or isinstance(idx, bool):
        raise TypeError(f"can't index a {kind} with {type(idx).__name__}")
    if not -size <= idx < size:
        shown = idx + size if idx < 0 else idx
        raise IndexError(f"index {shown} out of range for storage of size {size}")
    return idx % size


class UntypedStorageMethods:
    __slots__ = ()

    # -- what the storage is ----------------------------------------------------------------
    def nbytes(self) -> int:
        return self._nbytes

    def __len__(self) -> int:
        return self._nbytes

    def element_size(self) -> int:
        return 1

    @property
    def dtype(self):
        from . import _dtype

        return _dtype.uint8

    @property
    def is_cuda(self) -> bool:
        return self.device.type == "cuda"

    @property
    def is_sparse(self) -> bool:
        return False

    def type(self, dtype=None, non_blocking=False) -> str:
        if dtype is not None:
            raise NotImplementedError("UntypedStorage.type(dtype): use a tensor's .to(dtype)")
        return "ember.storage.UntypedStorage"

    def untyped(self):
        return self

    def resizable(self) -> bool:
        from ._resize import _resizable

        return _resizable(self)

    def is_pinned(self, device="cuda") -> bool:
        return False

    # -- its bytes ----------------------------------------------------------------------------
    def _bytes(self):
        """A uint8 tensor over every byte (no grad, no copy)."""
        from . import _dtype
        from ._tensor import make

        return make(self, (self._nbytes,), (1,), 0, _dtype.uint8, True)

    def __getitem__(self, idx) -> int:
        return int(self._bytes()[checked_index(idx, self._nbytes, "ember.UntypedStorage")].item())

    def __setitem__(self, idx, value) -> None:
        self._bytes()[checked_index(idx, self._nbytes, "ember.UntypedStorage")] = value

    def tolist(self) -> list:
        return self._bytes().tolist()

    def fill_(self, value):
        self._bytes().fill_(value)
        return self

    def copy_(self, src, non_blocking=None):
        src = src.untyped()
        if src._nbytes != self._nbytes:
            raise RuntimeError(
                f"size does not match, self was {self._nbytes} bytes but src was {src._nbytes} "
                "bytes"
            )
        if self._nbytes:
            self._bytes().copy_(src._bytes())
        return self

    def clone(self):
        return self._bytes().clone()._storage

    def to(self, *, device=None, non_blocking=False):
        from ._device import device as as_device

        target = as_device(device) if device is not None else self.device
        if target == self.device:
            return self
        return self._bytes().to(target)._storage

    def cpu(self):
        return self.to(device="cpu")

    def cuda(self, device=None, non_blocking=False):
        return self.to(device="cuda" if device is None else device)

    def pin_memory(self, device="cuda"):
        return self.cpu().clone()

    def resize_(self, size: int):
        """Give the storage ``size`` bytes, keeping the first ones (new bytes are
        uninitialised), in place: every tensor over it follows, as in PyTorch. Shrinking keeps
        the allocation: tensors over the dropped bytes can still be read (PyTorch frees them,
        and reading such a tensor crashes the process there)."""
        from ._resize import _grow, check_resizable

        if size < 0:
            raise RuntimeError(f"resize_(): the size must be non-negative, got {size}")
        if size > self._nbytes:
            _grow(self, size)
        elif size < self._nbytes:
            check_resizable(self, size)
        self._nbytes = size
        return self
