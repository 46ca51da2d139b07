"""``hash()`` in scripted code: TorchScript's ``aten::hash``, which is ``c10::hash`` of the value
and not Python's ``hash``. Ints and bools hash to themselves, floats and strings through
libstdc++'s ``std::hash`` (MurmurHash64A over the bytes, seed 0xc70f6907; 0.0 and -0.0 hash to
0), tuples combine their items' hashes as ``c10::hash_combine``, and a tensor hashes to its
identity (TorchScript uses the TensorImpl's address: stable while the tensor lives, different
for distinct live tensors, nothing else promised). A device hashes as ``std::hash<c10::Device>``:
its c10 ``DeviceType`` number in bits 16-23 and its index (-1 when it has none) in bits 0-7.
"""

from __future__ import annotations

import struct

_MASK = (1 << 64) - 1
_MUL = (0xC6A4A793 << 32) + 0x5BD1E995
_SEED = 0xC70F6907


def _shift_mix(v: int) -> int:
    return v ^ (v >> 47)


def hash_bytes(data: bytes, seed: int = _SEED) -> int:
    """libstdc++'s ``_Hash_bytes`` for a 64-bit ``size_t``, as an unsigned 64-bit int."""
    size = len(data)
    aligned = size & ~7
    h = (seed ^ (size * _MUL)) & _MASK
    for start in range(0, aligned, 8):
        (word,) = struct.unpack_from("<Q", data, start)
        h ^= (_shift_mix((word * _MUL) & _MASK) * _MUL) & _MASK
        h = (h * _MUL) & _MASK
    if size & 7:
        h ^= int.from_bytes(data[aligned:], "little")
        h = (h * _MUL) & _MASK
    h = (_shift_mix(h) * _MUL) & _MASK
    return _shift_mix(h)


def _combine(seed: int, value: int) -> int:
    """``c10::hash_combine`` on 64-bit values."""
    return (seed ^ ((value + 0x9E3779B9 + (seed << 6) + (seed >> 2)) & _MASK)) & _MASK


# c10::DeviceType's numbers; a device type PyTorch does not know is an out-of-tree backend,
# which PyTorch reaches as PrivateUse1
_DEVICE_TYPES = {
    "cpu": 0,
    "cuda": 1,
    "mkldnn": 2,
    "opengl": 3,
    "opencl": 4,
    "ideep": 5,
    "hip": 6,
    "fpga": 7,
    "maia": 8,
    "xla": 9,
    "vulkan": 10,
    "mps": 13,
    "xpu": 12,
    "meta": 14,
    "hpu": 15,
    "ve": 16,
    "lazy": 17,
    "ipu": 18,
    "mtia": 19,
}
_PRIVATE_USE = 20


def _device(value) -> int:
    index = -1 if value.index is None else value.index
    return (_DEVICE_TYPES.get(value.type, _PRIVATE_USE) & 0xFF) << 16 | (index & 0xFF)


def _unsigned(value) -> int:
    if isinstance(value, (bool, int)):
        return int(value) & _MASK
    if isinstance(value, float):
        return 0 if value == 0.0 else hash_bytes(struct.pack("<d", value))
    if isinstance(value, str):
        return hash_bytes(value.encode())
    if isinstance(value, tuple):
        seed = 0
        for item in value:
            seed = _combine(seed, _unsigned(item))
        return seed
    if value is None:
        return 0
    from ember._device import device

    if isinstance(value, device):
        return _device(value)
    return id(value) & _MASK  # a tensor: its identity


def script_hash(value) -> int:
    """``aten::hash``: the 64-bit hash as TorchScript's (signed) int."""
    h = _unsigned(value)
    return h - (1 << 64) if h >> 63 else h
