"""``ember.utils.dlpack``: PyTorch's DLPack functions. ``to_dlpack`` gives a capsule (as the
tensor's ``__dlpack__`` does); ``from_dlpack`` takes a capsule or any object with
``__dlpack__`` (numpy arrays, other frameworks' CPU tensors) and shares its memory."""

from __future__ import annotations

from .._factories import from_dlpack as _from_exporter
from .._factories import from_numpy

__all__ = ["from_dlpack", "to_dlpack"]


class _Capsule:
    """A DLPack capsule presented as an exporter, for numpy's ``from_dlpack`` (CPU memory)."""

    def __init__(self, capsule) -> None:
        self.capsule = capsule

    def __dlpack__(self, **_kwargs):
        return self.capsule

    def __dlpack_device__(self):
        return (1, 0)  # kDLCPU, device 0


class _Writable:
    """``array``'s memory as writable: a legacy (unversioned) capsule carries no read-only
    flag, so numpy imports it read-only to be safe, where PyTorch imports it writable."""

    def __init__(self, array) -> None:
        self.array = array  # the new array's base: keeps the capsule's memory alive
        interface = dict(array.__array_interface__)
        interface["data"] = (interface["data"][0], False)
        self.__array_interface__ = interface


def from_dlpack(ext_tensor):
    """A tensor sharing memory with ``ext_tensor``: a DLPack capsule or a ``__dlpack__``
    exporter."""
    if type(ext_tensor).__name__ != "PyCapsule":
        return _from_exporter(ext_tensor)
    import numpy as np

    array = np.from_dlpack(_Capsule(ext_tensor))
    if not array.flags.writeable and _is_legacy(ext_tensor):
        array = np.asarray(_Writable(array))
    return from_numpy(array)


def _is_legacy(capsule) -> bool:
    """Whether ``capsule`` is an unversioned DLPack capsule (named ``dltensor``, or
    ``used_dltensor`` once consumed)."""
    import ctypes

    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype, get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
    return get_name(capsule) in (b"dltensor", b"used_dltensor")


def to_dlpack(tensor):
    """The DLPack capsule of a CPU tensor (sharing its memory)."""
    return tensor.__dlpack__()
