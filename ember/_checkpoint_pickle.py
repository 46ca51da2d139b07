"""The pickle half of checkpoints: writing PyTorch's global names, and a restricted unpickler.

A checkpoint's ``data.pkl`` names PyTorch's globals (``torch._utils._rebuild_tensor_v2``,
``torch.FloatStorage``, ``torch.float32``) so that ``torch.load`` reads ember checkpoints; ember
writes those names without importing torch, and reads them back through one table
(``GLOBALS``) that maps each allowed name to an ember callable. With ``weights_only=True`` (the
default) nothing outside that table is ever imported or called, and ``BUILD`` (which sets
attributes on an object) is only allowed on plain dicts, as in ``state_dict()._metadata``.
"""

from __future__ import annotations

import _compat_pickle
import codecs
import collections
import pickle
import sys

from . import _dtype as dt
from . import _layout, _safe_globals
from ._device import device as Device
from ._serialization import DTYPE_NAMES
from ._size import Size
from ._tensor import Tensor
from .dispatcher.mathbits import ATTRIBUTES, metadata


class TorchName:
    """A PyTorch global, written to the pickle by name (torch is never imported)."""

    __slots__ = ("module", "name")
    _interned: dict = {}

    def __new__(cls, module: str, name: str):
        found = cls._interned.get((module, name))
        if found is None:
            found = object.__new__(cls)
            found.module, found.name = module, name
            cls._interned[(module, name)] = found
        return found

    def __call__(self, *args):  # pickle only writes reductions whose function is callable
        raise TypeError(f"{self.module}.{self.name} is a name for checkpoints, not a function")


REBUILD_TENSOR = TorchName("torch._utils", "_rebuild_tensor_v2")
REBUILD_TENSOR_V3 = TorchName("torch._utils", "_rebuild_tensor_v3")
UNTYPED_STORAGE = TorchName("torch.storage", "UntypedStorage")
REBUILD_PARAMETER = TorchName("torch._utils", "_rebuild_parameter")
REBUILD_PARAMETER_WITH_STATE = TorchName("torch._utils", "_rebuild_parameter_with_state")
REBUILD_FROM_TYPE = TorchName("torch._tensor", "_rebuild_from_type_v2")
TENSOR_TYPE = TorchName("torch", "Tensor")
# Dtypes without a typed storage class (float8, uint16/32/64) are saved over an UntypedStorage.
STORAGE_CLASS = {
    d: TorchName("torch", storage) if storage else UNTYPED_STORAGE
    for d, (storage, _) in DTYPE_NAMES.items()
}


def _write_global(pickler, module: str, name: str, obj) -> None:
    if pickler.proto >= 4:
        pickler.save(module)
        pickler.save(name)
        pickler.write(pickle.STACK_GLOBAL)
    else:
        pickler.write(pickle.GLOBAL + f"{module}\n{name}\n".encode("ascii"))
    pickler.memoize(obj)


def _save_torch_name(pickler, obj: TorchName) -> None:
    _write_global(pickler, obj.module, obj.name, obj)


def _save_dtype(pickler, obj: dt.dtype) -> None:
    _write_global(pickler, "torch", obj.name, obj)  # torch.float32 and friends


class CheckpointPickler(pickle._Pickler):
    """Pickles tensors as PyTorch does; ``describe(t)`` is ``(StorageRef, offset, size, stride)``.

    The pure-Python pickler, because only it lets a type be written as an arbitrary global
    (the C pickler imports the module to check the name, which would import torch).
    """

    dispatch = pickle._Pickler.dispatch.copy()
    dispatch[TorchName] = _save_torch_name
    dispatch[dt.dtype] = _save_dtype

    def __init__(self, file, protocol, describe, parameter_class):
        super().__init__(file, protocol)
        self.describe = describe
        self.parameter_class = parameter_class

    def reducer_override(self, obj):
        if isinstance(obj, Tensor):
            return self._reduce_tensor(obj)
        if isinstance(obj, Device):
            return TorchName("torch", "device"), (str(obj),)
        if isinstance(obj, Size):
            return TorchName("torch", "Size"), (tuple(obj),)
        if isinstance(obj, _layout.layout):  # as torch.save writes a layout
            return TorchName("torch.serialization", "_get_layout"), (f"torch.{obj.name}",)
        return NotImplemented

    def _reduce_tensor(self, obj: Tensor):
        """torch.save's reductions: a plain tensor; a parameter; and, for one with Python
        attributes or of a subclass, the tensor rebuilt as its type with the attributes as
        state (``_rebuild_from_type_v2``). A Buffer is saved as torch saves its: a plain
        tensor marked ``_is_buffer``."""
        hooks = collections.OrderedDict()
        state = saved_attributes(obj)
        if self.parameter_class is not None and isinstance(obj, self.parameter_class):
            data = obj.detach().as_subclass(Tensor)  # a plain tensor, or this recurses
            if state:
                return REBUILD_PARAMETER_WITH_STATE, (data, obj.requires_grad, hooks, state)
            return REBUILD_PARAMETER, (data, obj.requires_grad, hooks)
        args = (*self.describe(obj), obj.requires_grad, hooks)
        rebuild = REBUILD_TENSOR
        if STORAGE_CLASS[obj._dtype] is UNTYPED_STORAGE:  # the dtype travels beside, as in torch
            rebuild, args = REBUILD_TENSOR_V3, (*args, obj._dtype)
        bits = metadata(obj)  # the conjugate/negative bits: the raw storage is what is saved
        if bits:
            args = (*args, bits)
        if type(obj) is Tensor and not state:
            return rebuild, args
        plain = type(obj) is Tensor or isinstance(obj, buffer_class() or ())
        return REBUILD_FROM_TYPE, (rebuild, TENSOR_TYPE if plain else type(obj), args, state)

    def persistent_id(self, obj):
        # a new tuple per reference, as torch.save's persistent_id builds: the pickle then
        # writes it out again rather than fetching it from the memo, byte for byte as torch's
        return (*obj.pid,) if isinstance(obj, StorageRef) else None


# What ember's autograd keeps in a tensor's __dict__ (PyTorch keeps it in C++, so torch.save
# never writes it): retain_grad, hooks, the view and output bookkeeping of autograd/*.py.
_AUTOGRAD_ATTRIBUTES = frozenset(
    {"_retains_grad", "_hooks", "_post_accumulate_hooks", "_view_of", "_output_nr"}
)


def saved_attributes(t: Tensor) -> dict:
    """The Python attributes torch.save keeps with a tensor (its __dict__), ember's autograd
    bookkeeping left out; a Buffer is marked as torch.nn.Buffer marks one."""
    found = {
        k: v for k, v in t.__dict__.items() if k not in _AUTOGRAD_ATTRIBUTES and k not in ATTRIBUTES
    }
    if isinstance(t, buffer_class() or ()):
        found["_is_buffer"] = True
    return found


def apply_state(made: Tensor, state) -> Tensor:
    """A checkpoint's saved attributes set on the rebuilt tensor (a dict, or torch's pair of
    (attributes, slots) when slots are empty)."""
    if isinstance(state, tuple) and len(state) == 2 and not state[1]:
        state = state[0]  # (attributes, no slots)
    if state is not None and not isinstance(state, dict):
        raise pickle.UnpicklingError(f"a tensor's saved attributes must be a dict, not {state!r}")
    # Into __dict__ directly: an entry there can never shadow the tensor's own slots.
    made.__dict__.update(state or {})
    return made


class StorageRef:
    """A storage as a pickle refers to it: ``('storage', torch.XStorage, key, location, numel)``."""

    __slots__ = ("pid",)

    def __init__(self, dtype, key: str, location: str, numel: int):
        kind = STORAGE_CLASS[dtype]
        size = numel * dtype.itemsize if kind is UNTYPED_STORAGE else numel  # untyped: bytes
        self.pid = ("storage", kind, key, location, size)


class StorageType:
    """What ``torch.FloatStorage`` (and friends) unpickle to: the dtype of a storage record."""

    __slots__ = ("dtype",)

    def __init__(self, dtype):
        self.dtype = dtype


def _encode(text: str, encoding: str = "latin1") -> bytes:
    # Protocol 2 writes bytes as _codecs.encode(str, 'latin1'); no other codec is needed.
    if encoding not in ("latin1", "latin-1"):
        raise pickle.UnpicklingError(f"_codecs.encode with encoding {encoding!r} is not allowed")
    return codecs.encode(text, "latin1")


def _bytearray(source=b"", *encoding):
    # Pickles rebuild a bytearray from its contents; bytearray(n) would allocate n bytes for a
    # number the file chose, so only contents are accepted.
    if not isinstance(source, (bytes, str)):
        raise pickle.UnpicklingError(
            f"bytearray() from a {type(source).__name__} is not allowed; only from its bytes"
        )
    return bytearray(source, *encoding)


def _rebuild_from_type_v2(func, new_type, args, state):
    """How torch.save writes a tensor with Python attributes (or of a subclass): the tensor
    from ``func(*args)``, as ``new_type``, with ``state`` as its attributes."""
    made = func(*args) if isinstance(args, tuple) else None
    if not isinstance(made, Tensor) or not (
        isinstance(new_type, type) and issubclass(new_type, Tensor)
    ):
        raise pickle.UnpicklingError("_rebuild_from_type_v2 must rebuild a tensor as a tensor type")
    if type(made) is not new_type:
        made = made.as_subclass(new_type)
    return apply_state(made, state)


def torch_globals(rebuild_tensor, rebuild_tensor_v3, rebuild_parameter) -> dict:
    table = {
        ("collections", "OrderedDict"): collections.OrderedDict,
        ("collections", "Counter"): collections.Counter,
        ("builtins", "set"): set,
        ("builtins", "frozenset"): frozenset,
        ("builtins", "complex"): complex,
        ("builtins", "bytearray"): _bytearray,
        ("builtins", "slice"): slice,
        ("_codecs", "encode"): _encode,
        ("torch", "Size"): Size,
        ("torch", "device"): Device,
        ("torch", "UntypedStorage"): StorageType(dt.uint8),
        ("torch.storage", "UntypedStorage"): StorageType(dt.uint8),
        ("torch._utils", "_rebuild_tensor_v2"): rebuild_tensor,
        ("torch._utils", "_rebuild_tensor_v3"): rebuild_tensor_v3,
        ("torch._utils", "_rebuild_parameter"): rebuild_parameter,
        ("torch._utils", "_rebuild_parameter_with_state"): rebuild_parameter,
        ("torch._tensor", "_rebuild_from_type_v2"): _rebuild_from_type_v2,
        ("torch", "Tensor"): Tensor,
        ("torch.serialization", "_get_layout"): _layout.BY_NAME.__getitem__,
    }
    if parameter_class() is not None:
        table["torch.nn.parameter", "Parameter"] = parameter_class()
    for d, (storage, _) in DTYPE_NAMES.items():
        if storage:
            table["torch", storage] = StorageType(d)
        table["torch", d.name] = d
    for alias, d in dt.ALIASES.items():
        table["torch", alias] = d
    return table


class Refused(pickle.UnpicklingError):
    """What a weights-only load refuses: a global outside the table, or state set on an object."""


def _load_build(unpickler) -> None:
    state = unpickler.stack[-1]
    inst = unpickler.stack[-2]
    plain = type(inst) in (dict, collections.OrderedDict) and isinstance(state, dict)
    if not plain and not _safe_globals.allows_state_of(inst):
        raise Refused(
            f"{unpickler.what}: weights_only load refuses to set the state of a "
            f"{type(inst).__name__} object"
        )
    pickle._Unpickler.dispatch[pickle.BUILD[0]](unpickler)


_WEIGHTS_ONLY_DISPATCH = {**pickle._Unpickler.dispatch, pickle.BUILD[0]: _load_build}


class CheckpointUnpickler(pickle._Unpickler):
    """Resolves PyTorch's names through ``globals``; refuses the rest when ``weights_only``."""

    def __init__(self, file, globals_table, persistent_load, weights_only, what, **pickle_args):
        super().__init__(file, **pickle_args)  # encoding, errors, fix_imports
        self.globals_table = globals_table
        self.persistent_load = persistent_load
        self.weights_only = weights_only
        self.what = what
        if weights_only:
            self.dispatch = _WEIGHTS_ONLY_DISPATCH

    def find_class(self, module: str, name: str):
        if self.proto < 3 and self.fix_imports:  # Python 2 names, as protocol 2 writes them
            module, name = _compat_pickle.NAME_MAPPING.get((module, name), (module, name))
            module = _compat_pickle.IMPORT_MAPPING.get(module, module)
        found = self.globals_table.get((module, name))
        if found is not None:
            return found
        if self.weights_only and (allowed := _safe_globals.lookup(module, name)) is not None:
            return allowed
        if self.weights_only:
            unsupported = module == "torch" and (name.endswith("Storage") or name in _TORCH_DTYPES)
            detail = (
                f"ember has no equivalent of torch.{name} (supported dtypes: "
                f"{', '.join(d.name for d in dt.EVERY)})"
                if unsupported
                else "only tensors, storages, containers, numbers, strings and dtypes are "
                "allowed; pass weights_only=False only if you trust the file"
            )
            raise Refused(f"{self.what}: weights_only load refuses {module}.{name}: {detail}")
        return super().find_class(module, name)


# PyTorch dtypes ember does not have, so a weights-only load can say why it refuses them.
_TORCH_DTYPES = frozenset({"complex32", "chalf", "qint8", "quint8", "qint32", "float4_e2m1fn_x2"})


def parameter_class():
    """``ember.nn.Parameter`` once nn defines it (checkpoints then keep parameters as such)."""
    return getattr(sys.modules.get("ember.nn"), "Parameter", None)


def buffer_class():
    """``ember.nn.Buffer`` once nn defines it."""
    return getattr(sys.modules.get("ember.nn"), "Buffer", None)
