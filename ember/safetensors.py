"""The safetensors format, with the ``safetensors.torch`` API (``save_file``, ``load_file``...).

A file is an 8-byte little-endian header length N, N bytes of UTF-8 JSON (padded with spaces to
a multiple of 8), then the tensors' raw little-endian bytes, back to back:

    {"__metadata__": {"format": "pt"},
     "weight": {"dtype": "F32", "shape": [3, 4], "data_offsets": [0, 48]}, ...}

``data_offsets`` are ``[begin, end)`` within the byte buffer after the header; the tensors must
cover it exactly, without gaps or overlaps. Loading checks all of that, so a truncated or
tampered file raises ``SafetensorError`` instead of reading out of bounds.
"""

from __future__ import annotations

import json
import math
import os
import struct
import sys

import numpy as np

from ._atomic import atomic_write
from ._device import CPU
from ._serialization import DTYPE_NAMES, host_values
from ._tensor import Tensor, empty, host_array

_CODES = {code: d for d, (_, code) in DTYPE_NAMES.items() if code is not None}
_MAX_HEADER = 100_000_000  # the reference implementation's limit
_HEADER_ALIGN = 8
_INT64_MAX = (1 << 63) - 1
_LITTLE = sys.byteorder == "little"


class SafetensorError(RuntimeError):
    """A safetensors file or buffer that breaks the format."""


def _check_tensors(tensors) -> None:
    if not isinstance(tensors, dict):
        raise ValueError(f"Expected a dict of [str, ember.Tensor] but received {type(tensors)}")
    by_storage: dict = {}
    for name, t in tensors.items():
        if not isinstance(name, str):
            raise TypeError(f"tensor names must be strings, got {name!r}")
        if not isinstance(t, Tensor):
            raise ValueError(
                f"Key `{name}` is invalid, expected ember.Tensor but received {type(t)}"
            )
        if DTYPE_NAMES[t._dtype][1] is None:
            raise ValueError(
                f"`{name}`: the safetensors format has no {t._dtype.name} dtype (its complex "
                "dtype is C64 only); save it as complex64 or as its view_as_real"
            )
        if not t.is_contiguous():
            raise ValueError(
                f"You are trying to save a non contiguous tensor: `{name}` which is not allowed. "
                "Save the full tensor and slice it after loading, or call `.contiguous()` first."
            )
        if t.numel():
            by_storage.setdefault(id(t._storage), []).append(name)
    shared = [names for names in by_storage.values() if len(names) > 1]
    if shared:
        raise RuntimeError(
            f"Some tensors share memory, this will lead to duplicate memory on disk and "
            f"potential differences when loading them again: {shared}. Save clones of them "
            "(or only one of each group)."
        )


def _header(tensors: dict, metadata) -> tuple[bytes, list]:
    """The padded JSON header, and the tensors in file order (widest dtype first, then name)."""
    order = sorted(tensors.items(), key=lambda item: (-item[1]._dtype.itemsize, item[0]))
    header: dict = {}
    if metadata is not None:
        bad = [k for k, v in metadata.items() if not (isinstance(k, str) and isinstance(v, str))]
        if bad:
            raise TypeError(f"metadata must map strings to strings; bad entries: {bad}")
        header["__metadata__"] = metadata
    offset = 0
    for name, t in order:
        end = offset + t.numel() * t._dtype.itemsize
        code = DTYPE_NAMES[t._dtype][1]
        header[name] = {"dtype": code, "shape": list(t._shape), "data_offsets": [offset, end]}
        offset = end
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % _HEADER_ALIGN)
    return struct.pack("<Q", len(text)) + text, order


def _little_endian(t: Tensor) -> np.ndarray:
    """The bytes of ``t`` in file order, as a flat uint8 array (a view when it can)."""
    values = host_values(t).reshape(-1)
    return (values if _LITTLE else values.byteswap()).view(np.uint8)


def save(tensors: dict, metadata: dict | None = None) -> bytes:
    """The safetensors bytes of ``tensors``.

    Args:
        tensors: name -> contiguous tensor; tensors must not share memory.
        metadata: optional free-form string -> string entries for the header.

    Returns:
        The serialized file contents.

    Example:
        >>> blob = ember.safetensors.save({"w": ember.zeros(2, 2)})
    """
    _check_tensors(tensors)
    header, order = _header(tensors, metadata)
    return header + b"".join(_little_endian(t).tobytes() for _, t in order)


def save_file(tensors: dict, filename, metadata: dict | None = None) -> None:
    """Write ``tensors`` to ``filename`` in the safetensors format.

    The file is replaced atomically (written beside it, then renamed over it), so a crash or a
    full disk mid-save keeps the previous file.

    Args:
        tensors: name -> contiguous tensor; tensors must not share memory.
        filename: the path to write.
        metadata: optional free-form string -> string entries for the header.

    Example:
        >>> ember.safetensors.save_file({"w": ember.zeros(2, 2)}, "model.safetensors")
    """
    _check_tensors(tensors)
    header, order = _header(tensors, metadata)
    with atomic_write(filename) as f:
        f.write(header)
        for _, t in order:
            f.write(_little_endian(t))


def _parse_header(read, available: int, what: str) -> tuple[dict, dict, int]:
    """``(entries, metadata, data start)``, fully validated; ``read(start, count)`` gives bytes."""
    raw = read(0, 8)
    if len(raw) < 8:
        raise SafetensorError(f"{what}: header too small ({len(raw)} bytes, need 8)")
    (n,) = struct.unpack("<Q", raw)
    if n > _MAX_HEADER:
        raise SafetensorError(f"{what}: header too large ({n} bytes)")
    if 8 + n > available:
        raise SafetensorError(
            f"{what}: invalid header length {n}: the file has only {available} bytes"
        )
    text = read(8, n)
    if not text.startswith(b"{"):
        raise SafetensorError(f"{what}: the header does not start with '{{'")
    try:
        header = json.loads(text.decode("utf-8"), object_pairs_hook=_no_duplicates)
    except (ValueError, RecursionError) as error:  # RecursionError: absurdly deep nesting
        raise SafetensorError(f"{what}: invalid JSON header ({error})") from None
    if not isinstance(header, dict):
        raise SafetensorError(f"{what}: the header is not a JSON object")
    metadata = header.pop("__metadata__", None) or {}
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise SafetensorError(f"{what}: __metadata__ must map strings to strings")
    entries = {name: _entry(name, info, what) for name, info in header.items()}
    end = 0
    for name, (_, _, begin, stop) in sorted(entries.items(), key=lambda item: item[1][2:]):
        if begin != end:
            raise SafetensorError(
                f"{what}: tensor {name!r} starts at byte {begin}, expected {end} (gap or overlap)"
            )
        end = stop
    if 8 + n + end != available:
        raise SafetensorError(
            f"{what}: the tensors cover {end} bytes but the data has {available - 8 - n}"
        )
    return entries, metadata, 8 + n


def _no_duplicates(pairs):
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise ValueError(f"duplicate keys in {keys}")
    return dict(pairs)


def _entry(name: str, info, what: str):
    """``(dtype, shape, begin, end)`` of one header entry, or SafetensorError."""
    try:
        dtype = _CODES[info["dtype"]]
        shape = tuple(info["shape"])
        begin, end = info["data_offsets"]
    except KeyError as error:
        code = info.get("dtype") if isinstance(info, dict) else None
        if code is not None and code not in _CODES:
            raise SafetensorError(
                f"{what}: tensor {name!r} has dtype {code}, which ember does not support "
                f"({', '.join(_CODES)})"
            ) from None
        raise SafetensorError(f"{what}: tensor {name!r} lacks {error} in the header") from None
    except (TypeError, ValueError):
        raise SafetensorError(f"{what}: tensor {name!r} has a malformed header entry") from None
    numbers = (*shape, begin, end)
    if not all(type(v) is int and v >= 0 for v in numbers) or begin > end:
        raise SafetensorError(f"{what}: tensor {name!r} has invalid shape or offsets")
    numel = math.prod(shape)
    nbytes = numel * dtype.itemsize
    if numel > _INT64_MAX:
        raise SafetensorError(
            f"{what}: tensor {name!r} of shape {list(shape)}: numel: integer multiplication "
            "overflow"
        )
    if nbytes != end - begin:
        raise SafetensorError(
            f"{what}: tensor {name!r} of shape {list(shape)} and dtype {info['dtype']} needs "
            f"{nbytes} bytes, its offsets give {end - begin}"
        )
    return dtype, shape, begin, end


def _fill(entry, read_into) -> Tensor:
    dtype, shape, begin, _ = entry
    t = empty(shape, dtype, CPU)
    target = host_array(t).reshape(-1).view(np.uint8)
    read_into(begin, target)
    if not _LITTLE and dtype.itemsize > 1:
        target.view(f"u{dtype.itemsize}").byteswap(inplace=True)
    return t


def load(data: bytes) -> dict:
    """The tensors of a safetensors buffer, each with its own CPU storage.

    Args:
        data: the serialized contents (as from ``save``).

    Returns:
        name -> tensor.
    """
    view = memoryview(data).cast("B")
    entries, _, start = _parse_header(
        lambda begin, count: bytes(view[begin : begin + count]), len(view), "<bytes>"
    )

    def read_into(begin, target):
        target[:] = np.frombuffer(view, np.uint8, target.size, start + begin)

    return {name: _fill(entry, read_into) for name, entry in entries.items()}


class safe_open:  # noqa: N801 - the safetensors package's name
    """Lazy access to a safetensors file: read the header now, tensors on request.

    Args:
        filename: the file to open.
        framework: accepted for compatibility ("pt", "np", "ember"); tensors are ember tensors.
        device: where ``get_tensor`` puts tensors.

    Example:
        >>> with ember.safetensors.safe_open("model.safetensors", "pt") as f:
        ...     w = f.get_tensor("weight")
    """

    def __init__(self, filename, framework: str = "pt", device="cpu"):
        self._what = os.fspath(filename)
        self._file = open(filename, "rb")  # noqa: SIM115 - closed by __exit__ / close()
        try:
            size = os.fstat(self._file.fileno()).st_size
            self._entries, self._metadata, self._start = _parse_header(self._read, size, self._what)
        except BaseException:
            self._file.close()
            raise
        self._device = device

    def __enter__(self) -> safe_open:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self._file.close()

    def keys(self) -> list[str]:
        return sorted(self._entries)

    def metadata(self) -> dict:
        return dict(self._metadata)

    def get_tensor(self, name: str) -> Tensor:
        entry = self._entries.get(name)
        if entry is None:
            raise SafetensorError(f"{self._what}: no tensor named {name!r}")
        t = _fill(entry, self._read_into)
        return t if self._device in ("cpu", CPU) else t.to(self._device)

    def _read(self, begin: int, count: int) -> bytes:
        self._file.seek(begin)
        return self._file.read(count)

    def _read_into(self, begin: int, target: np.ndarray) -> None:
        self._file.seek(self._start + begin)
        if self._file.readinto(memoryview(target)) != target.size:
            raise SafetensorError(f"{self._what}: the file is truncated")


def load_file(filename, device="cpu") -> dict:
    """The tensors of a safetensors file.

    Args:
        filename: the file to read.
        device: where to put the tensors.

    Returns:
        name -> tensor, each with its own storage.

    Example:
        >>> state = ember.safetensors.load_file("model.safetensors")
    """
    with safe_open(filename, "pt", device) as f:
        return {name: f.get_tensor(name) for name in f.keys()}  # noqa: SIM118 - not a dict
