"""Plain ``pickle`` and ``copy.deepcopy`` of tensors, and the dtype names the file formats use.

``pickle.dumps(tensor)`` stores the values (contiguous bytes), dtype, shape, ``requires_grad``,
Python attributes and, off the CPU, the device; unpickling rebuilds the tensor on that device, as
PyTorch does.
Autograd history and storage sharing are not kept: ``ember.save`` is the format that keeps views
sharing their storage. ``copy.deepcopy`` does keep sharing: tensors over one storage get copies
over one new storage (the memo is keyed by storage, as in PyTorch).
"""

from __future__ import annotations

import copy
import warnings

import numpy as np

from . import _dtype as dt
from ._device import CPU
from ._device import device as Device
from ._tensor import Tensor, host_array, make
from .dispatcher.mathbits import ATTRIBUTES, keep_bits, resolve

# How each file format names ember's dtypes: PyTorch's storage classes in checkpoints
# (``torch.FloatStorage``) and the safetensors header codes.
DTYPE_NAMES = {
    dt.bool_: ("BoolStorage", "BOOL"),
    dt.uint8: ("ByteStorage", "U8"),
    dt.int8: ("CharStorage", "I8"),
    dt.int16: ("ShortStorage", "I16"),
    dt.int32: ("IntStorage", "I32"),
    dt.int64: ("LongStorage", "I64"),
    dt.float16: ("HalfStorage", "F16"),
    dt.bfloat16: ("BFloat16Storage", "BF16"),
    dt.float32: ("FloatStorage", "F32"),
    dt.float64: ("DoubleStorage", "F64"),
    dt.complex64: ("ComplexFloatStorage", "C64"),
    dt.complex128: ("ComplexDoubleStorage", None),  # safetensors has no complex128 (only C64)
    # PyTorch has no typed storage class for these: it saves them over an UntypedStorage, with
    # the dtype beside (``_rebuild_tensor_v3``).
    dt.float8_e4m3fn: (None, "F8_E4M3"),
    dt.float8_e5m2: (None, "F8_E5M2"),
    dt.float8_e4m3fnuz: (None, "F8_E4M3FNUZ"),
    dt.float8_e5m2fnuz: (None, "F8_E5M2FNUZ"),
    dt.float8_e8m0fnu: (None, None),  # safetensors names no e8m0 code
    dt.uint16: (None, "U16"),
    dt.uint32: (None, "U32"),
    dt.uint64: (None, "U64"),
}


def host_values(t) -> np.ndarray:
    """The values of ``t`` as a C-contiguous numpy array in host memory (a view when it can)."""
    data = t.detach()
    if data.device is not CPU:
        data = data.cpu()
    return np.ascontiguousarray(host_array(data))


def storage_bytes(storage) -> np.ndarray:
    """All bytes of a storage as a uint8 numpy array in host memory (copied from a device)."""
    if storage.device is CPU:
        return storage.host_bytes()
    whole = make(storage, (storage._nbytes,), (1,), 0, dt.uint8, True)
    return host_array(whole.cpu())


# What autograd keeps in a tensor's __dict__ (graph links, hooks, flags): not the tensor's data,
# and not picklable (weak references). PyTorch pickles neither; user attributes do travel.
_AUTOGRAD_STATE = frozenset(
    ("_hooks", "_output_nr", "_post_accumulate_hooks", "_retains_grad", "_view_of")
)


def python_state(t) -> dict | None:
    """The Python attributes of ``t`` that pickling carries (None when there are none); warns
    about backward hooks, which stay behind, as PyTorch does."""
    for hook in t.__dict__.get("_hooks") or ():
        warnings.warn(f"backward hook {hook!r} on tensor will not be serialized.", stacklevel=3)
    state = {k: v for k, v in t.__dict__.items() if k not in _AUTOGRAD_STATE | ATTRIBUTES}
    return state or None


def reduce_tensor(t):
    """``Tensor.__reduce_ex__``: rebuild from bytes + dtype + shape (+ subclass, + device)."""
    cls = None if type(t) is Tensor else type(t)
    args = (host_values(t).tobytes(), t._dtype, t._shape, t._requires_grad, cls)
    device = t._storage.device
    if device is not CPU:  # CPU pickles stay as they were, for readers of older ember
        args += (str(device),)
    state = python_state(t)
    if state:  # Python attributes, restored into __dict__ by pickle's BUILD
        return (_rebuild_tensor, args, state)
    return (_rebuild_tensor, args)


def _rebuild_tensor(data: bytes, dtype, shape: tuple, requires_grad: bool, cls=None, device=None):
    from ._factories import from_numpy

    # A bytearray copy, so the tensor owns writable memory (bytes are immutable).
    array = np.frombuffer(bytearray(data), dtype=dtype.np).reshape(shape)
    t = from_numpy(array)
    if device is not None:
        t = t.to(_unpickling_device(device))
    if requires_grad:
        t.requires_grad_(True)
    return t if cls is None else t.as_subclass(cls)


def _unpickling_device(name: str):
    from .dispatcher.memory import normalize_device

    try:
        return normalize_device(Device(name))
    except (RuntimeError, KeyError, TypeError, ValueError) as error:
        raise RuntimeError(
            f"Attempting to deserialize a tensor on device {name}, which is not available here "
            f"({error}); pickle t.cpu() instead, or save it with ember.save and load it with "
            "map_location='cpu'"
        ) from None


_STORAGES = "ember.storages"  # the deepcopy memo entry: id(storage) -> (copy, original)


def deepcopy_tensor(t, memo: dict):
    """``Tensor.__deepcopy__``: a copy with the same view over a copy of the storage; tensors
    sharing a storage in one deepcopy share the copy."""
    if t._grad_fn is not None:
        raise RuntimeError(
            "Only Tensors created explicitly by the user (graph leaves) support the deepcopy "
            "protocol at the moment. This one was computed by autograd (grad_fn="
            f"{t._grad_fn.name()}); deepcopy t.detach() instead, or, in a module, "
            "recompute it after the copy"
        )
    storages = memo.setdefault(_STORAGES, {})
    found = storages.get(id(t._storage))
    if found is None:  # the original is kept in the memo too, so its id cannot be reused
        found = storages[id(t._storage)] = (_copy_storage(t._storage), t._storage)
    copied = make(found[0], t._shape, t._stride, t._offset, t._dtype, t._contig)
    if type(t) is not Tensor:
        copied = copied.as_subclass(type(t))
    copied._requires_grad = t._requires_grad
    memo[id(t)] = copied
    if t._grad is not None:
        copied._grad = copy.deepcopy(t._grad, memo)
    attributes = {k: v for k, v in t.__dict__.items() if k not in ATTRIBUTES}
    if attributes:
        copied.__dict__.update(copy.deepcopy(attributes, memo))
    # As torch's deepcopy: a conjugate or negative view is copied as its values, without bits.
    return resolve(keep_bits(copied, t))


def _copy_storage(storage):
    whole = make(storage, (storage._nbytes,), (1,), 0, dt.uint8, True)
    return whole.clone()._storage
