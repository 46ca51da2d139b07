"""Plain ``pickle`` support for tensors, and the dtype names the checkpoint formats use.

``pickle.dumps(tensor)`` stores the values (contiguous bytes), dtype, shape and
``requires_grad``; unpickling rebuilds a CPU tensor. Autograd history and storage sharing are
not kept: ``ember.save`` is the format that keeps views sharing their storage.
"""

from __future__ import annotations

import numpy as np

from . import _dtype as dt
from ._device import CPU
from ._tensor import Tensor, host_array, make

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
    whole = make(storage, (storage.nbytes,), (1,), 0, dt.uint8, True)
    return host_array(whole.cpu())


def reduce_tensor(t):
    """``Tensor.__reduce_ex__``: rebuild from bytes + dtype + shape (+ the subclass)."""
    cls = None if type(t) is Tensor else type(t)
    return (_rebuild_tensor, (host_values(t).tobytes(), t._dtype, t._shape, t._requires_grad, cls))


def _rebuild_tensor(data: bytes, dtype, shape: tuple, requires_grad: bool, cls=None):
    from ._factories import from_numpy

    # A bytearray copy, so the tensor owns writable memory (bytes are immutable).
    array = np.frombuffer(bytearray(data), dtype=dtype.np).reshape(shape)
    t = from_numpy(array)
    if requires_grad:
        t.requires_grad_(True)
    return t if cls is None else t.as_subclass(cls)
