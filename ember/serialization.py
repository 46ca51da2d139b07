"""``ember.save`` and ``ember.load``: checkpoints in PyTorch's zip format.

``save`` writes what ``torch.save`` writes, so ``torch.load`` reads ember checkpoints, and
``load`` reads PyTorch's without importing torch. The archive holds (stored, uncompressed):

    archive/data.pkl            the object, pickled; a tensor is a call of
                                torch._utils._rebuild_tensor_v2(storage, offset, size, stride, ...)
                                whose storage is the persistent id
                                ('storage', torch.FloatStorage, key, location, numel)
    archive/.format_version     "1"
    archive/.storage_alignment  "64"
    archive/byteorder           the byte order of the storages ("little" on every usual machine)
    archive/data/<key>          one storage's raw bytes, starting on a 64-byte boundary
    archive/version             "3"

Tensors that share a storage share one record, so views stay views after loading.
"""

from __future__ import annotations

import contextlib
import io
import os
import struct
import sys
import zipfile

import numpy as np

from . import _dtype as dt
from ._atomic import atomic_write
from ._checkpoint_pickle import (
    CheckpointPickler,
    CheckpointUnpickler,
    Refused,
    StorageRef,
    StorageType,
    parameter_class,
    torch_globals,
)
from ._device import CPU
from ._device import device as Device
from ._serialization import storage_bytes
from ._storage import Storage
from ._tensor import empty, host_array, is_contiguous, make
from .dispatcher.memory import normalize_device

_ALIGN = 64
_ZIP64_FROM = 1 << 31  # records this big get zip64 headers (decided here, so padding is exact)
_LOCAL_HEADER = 30  # bytes of a zip local file header before its name
_ZIP64_EXTRA = 20  # the zip64 field zipfile appends to a local header
_PADDING_ID = 0x4246  # "FB": the extra-field id PyTorch pads with
# What torch.save wrote before PyTorch 1.6: a pickled magic number, not a zip archive.
_LEGACY_MAGIC = b"\x80\x02\x8a\x0al\xfc\x9cF\xf9 j\xa8P\x19"


class CheckpointError(RuntimeError):
    """A checkpoint file that is truncated, corrupt or not a checkpoint at all."""


def save(obj, f, *, pickle_protocol: int = 2) -> None:
    """Save ``obj`` (tensors, state dicts, nested containers) in PyTorch's checkpoint format.

    Args:
        obj: the object to save; tensors may sit anywhere inside containers.
        f: a path or a writable binary file object.
        pickle_protocol: the pickle protocol of ``data.pkl`` (PyTorch's default, 2).

    Tensors on other devices are written from a CPU copy, with their device recorded, and come
    back on that device. Tensors sharing a storage are written once and share it again after
    loading.

    A path is replaced atomically: the checkpoint is written to a temporary file beside it and
    renamed over it once complete, so a crash or a full disk mid-save keeps the old file.

    Example:
        >>> ember.save({"weight": ember.randn(3, 4)}, "model.pt")
    """
    storages = _StorageTable()
    data = io.BytesIO()
    CheckpointPickler(data, pickle_protocol, storages.describe, parameter_class()).dump(obj)
    with _opened(f, "wb") as fileobj, zipfile.ZipFile(fileobj, "w", allowZip64=True) as zf:
        _write_record(zf, "data.pkl", data.getbuffer())
        _write_record(zf, ".format_version", b"1")
        _write_record(zf, ".storage_alignment", str(_ALIGN).encode())
        _write_record(zf, "byteorder", sys.byteorder.encode())
        for key, storage in storages.records:
            _write_record(zf, f"data/{key}", storage_bytes(storage))
        _write_record(zf, "version", b"3\n")


class _StorageTable:
    """Gives each storage a record key, the first time a tensor over it is pickled."""

    def __init__(self):
        self.refs: dict = {}  # id(storage) -> (StorageRef, dtype)
        self.records: list = []  # (key, storage); also keeps the storages (and ids) alive

    def describe(self, t):
        """``(storage reference, offset, shape, stride)`` for ``_rebuild_tensor_v2``."""
        if any(s < 0 for s in t._stride):
            t = t.contiguous()  # PyTorch has no negative strides; such a view is saved as a copy
        found = self.refs.get(id(t._storage))
        if found is None:
            storage = t._storage
            key = str(len(self.records))
            location = "cpu" if storage.device is CPU else str(storage.device)
            ref = StorageRef(t._dtype, key, location, storage.nbytes // t._dtype.itemsize)
            found = self.refs[id(storage)] = (ref, t._dtype)
            self.records.append((key, storage))
        elif found[1] is not t._dtype:
            raise RuntimeError(
                "Cannot save multiple tensors or storages that view the same data as different "
                f"types ({found[1].name} and {t._dtype.name})"
            )
        return found[0], t._offset, t._shape, t._stride


def _write_record(zf: zipfile.ZipFile, name: str, data) -> None:
    """One stored record whose bytes start on a 64-byte boundary of the file (for mmap)."""
    info = zipfile.ZipInfo(f"archive/{name}")  # fixed 1980 date: same object, same bytes
    size = memoryview(data).nbytes
    zip64 = size >= _ZIP64_FROM
    header = _LOCAL_HEADER + len(info.filename.encode()) + (_ZIP64_EXTRA if zip64 else 0)
    pad = -(zf.fp.tell() + header + 4) % _ALIGN
    info.extra = struct.pack("<HH", _PADDING_ID, pad) + b"Z" * pad
    info.file_size = size
    with zf.open(info, "w", force_zip64=zip64) as out:
        out.write(data)


def load(f, map_location=None, *, weights_only: bool = True):
    """Load an object saved by ``ember.save`` or ``torch.save`` (zip format, PyTorch >= 1.6).

    Args:
        f: a path or a readable, seekable binary file object.
        map_location: where tensors go: None (the device they were saved from), a device or
            device string (all there), a dict from saved location to target (``{"cuda:0":
            "cpu"}``), or a callable ``fn(storage, location)`` returning a storage, a device,
            or None for the default.
        weights_only: allow only tensors, containers, numbers, strings and dtypes (True, the
            default, is safe on untrusted files); False also imports and calls any other
            global the file names, like ``pickle``.

    Returns:
        The saved object, with tensors as ember tensors.

    Raises:
        pickle.UnpicklingError: the file names a global that ``weights_only`` refuses.
        RuntimeError: the file is truncated, corrupt or not a checkpoint (the message names
            the file and what is wrong).

    Example:
        >>> state = ember.load("model.pt", map_location="cpu")
    """
    what = _file_name(f)
    with _opened(f, "rb") as fileobj:
        try:
            zf = zipfile.ZipFile(fileobj)
        except (zipfile.BadZipFile, EOFError, OSError, ValueError, struct.error):
            raise CheckpointError(_not_a_zip(fileobj, what)) from None
        with zf:
            prefix = _archive_prefix(zf, what)
            swap = _read(zf, f"{prefix}byteorder", what, b"little").decode() != sys.byteorder
            reader = _StorageReader(zf, prefix, what, swap, map_location)
            table = torch_globals(reader.rebuild_tensor, reader.rebuild_tensor_v3, _parameter)
            data = io.BytesIO(_read(zf, f"{prefix}data.pkl", what))
            try:
                return CheckpointUnpickler(
                    data, table, reader.persistent_load, weights_only, what
                ).load()
            except (Refused, CheckpointError):
                raise
            except Exception as error:
                raise CheckpointError(
                    f"{what}: data.pkl is corrupt ({type(error).__name__}: {error})"
                ) from error


@contextlib.contextmanager
def _opened(f, mode: str):
    """``f`` itself when it is a file object; else the path opened (atomically for writing)."""
    if not isinstance(f, (str, os.PathLike)):
        yield f
        return
    with atomic_write(f) if mode == "wb" else open(f, mode) as fileobj:
        yield fileobj


def _file_name(f) -> str:
    if isinstance(f, (str, os.PathLike)):
        return os.fspath(f)
    return str(getattr(f, "name", None) or f"<{type(f).__name__}>")


def _not_a_zip(fileobj, what: str) -> str:
    with contextlib.suppress(OSError, ValueError):
        fileobj.seek(0)
        head = fileobj.read(len(_LEGACY_MAGIC))
        if not head:
            return f"{what}: the file is empty, not a checkpoint"
        if head == _LEGACY_MAGIC:
            return (
                f"{what}: this is PyTorch's legacy checkpoint format (before 1.6), which ember "
                "does not read; re-save it with a recent torch.save"
            )
    return f"{what}: not a checkpoint: it is not a zip archive, or it is truncated"


def _archive_prefix(zf: zipfile.ZipFile, what: str) -> str:
    """The folder the records live in ("archive/" from torch.save; older files used others)."""
    for name in zf.namelist():
        folder, _, base = name.rpartition("/")
        if base == "data.pkl" and "/" not in folder:
            return f"{folder}/" if folder else ""
    raise CheckpointError(f"{what}: not a checkpoint: the zip archive has no data.pkl record")


def _read(zf: zipfile.ZipFile, name: str, what: str, default: bytes | None = None) -> bytes:
    try:
        return zf.read(name)
    except KeyError:
        if default is not None:
            return default
        raise CheckpointError(f"{what}: record {name} is missing") from None
    except (zipfile.BadZipFile, EOFError, OSError) as error:
        raise CheckpointError(f"{what}: record {name} is corrupt ({error})") from None


class _Loaded:
    """A storage as the unpickler hands it to ``_rebuild_tensor_v2``."""

    __slots__ = ("dtype", "storage")

    def __init__(self, storage: Storage, dtype):
        self.storage = storage
        self.dtype = dtype


class _StorageReader:
    """Reads storage records on first reference, places them, and builds tensors over them."""

    def __init__(self, zf, prefix, what, swap, map_location):
        if not (map_location is None or callable(map_location)) and not isinstance(
            map_location, (str, Device, dict)
        ):
            raise TypeError(
                "map_location should be None, a string, a device, a dict or a callable, "
                f"got {type(map_location).__name__}"
            )
        self.zf, self.prefix, self.what, self.swap = zf, prefix, what, swap
        self.map_location = map_location
        self.loaded: dict = {}

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
            raise CheckpointError(f"{self.what}: unknown persistent id {pid!r} in data.pkl")
        _, kind, key, location, numel = pid
        if not isinstance(kind, StorageType):
            raise CheckpointError(f"{self.what}: storage {key!r} has no storage type")
        found = self.loaded.get(key)
        if found is None:
            storage = self._place(self._read_storage(str(key), kind.dtype, numel), str(location))
            found = self.loaded[key] = _Loaded(storage, kind.dtype)
        return found

    def _read_storage(self, key: str, dtype, numel) -> Storage:
        name = f"{self.prefix}data/{key}"
        try:
            info = self.zf.getinfo(name)
        except KeyError:
            raise CheckpointError(f"{self.what}: record {name} is missing") from None
        nbytes = int(numel) * dtype.itemsize
        if info.file_size != nbytes:
            raise CheckpointError(
                f"{self.what}: record {name} holds {info.file_size} bytes, but its storage is "
                f"{numel} {dtype.name} elements ({nbytes} bytes)"
            )
        raw = empty((nbytes,), dt.uint8, CPU)
        target = host_array(raw)
        try:
            with self.zf.open(info) as src:
                filled = 0
                while filled < nbytes:
                    chunk = src.read(min(nbytes - filled, 1 << 24))
                    if not chunk:
                        raise EOFError(f"{nbytes - filled} bytes missing")
                    target[filled : filled + len(chunk)] = np.frombuffer(chunk, np.uint8)
                    filled += len(chunk)
                src.read(1)  # reaching the end makes zipfile check the CRC
        except (zipfile.BadZipFile, EOFError, OSError) as error:
            raise CheckpointError(f"{self.what}: record {name} is corrupt ({error})") from None
        if self.swap and dtype.itemsize > 1:
            target.view(f"u{dtype.itemsize}").byteswap(inplace=True)
        return raw._storage

    def _place(self, storage: Storage, location: str) -> Storage:
        target = self.map_location
        if target is None:
            target = location
        elif isinstance(target, dict):
            target = target.get(location, location)
        elif callable(target):
            target = target(storage, location)
            if isinstance(target, Storage):
                return target
            if target is None:
                target = location
        try:
            device = normalize_device(Device(target))
        except (RuntimeError, KeyError, TypeError, ValueError) as error:
            raise CheckpointError(
                f"{self.what}: a storage saved on {location} would load on {target}, which is "
                f"not available here ({error}); pass map_location='cpu' to load it on the CPU"
            ) from None
        if device is CPU:
            return storage
        return make(storage, (storage.nbytes,), (1,), 0, dt.uint8, True).to(device)._storage

    def rebuild_tensor(self, loaded, offset, size, stride, requires_grad, hooks, metadata=None):
        return self._view(loaded, loaded.dtype, offset, size, stride, requires_grad)

    def rebuild_tensor_v3(
        self, loaded, offset, size, stride, requires_grad, hooks, dtype, metadata=None
    ):
        return self._view(loaded, dtype, offset, size, stride, requires_grad)

    def _view(self, loaded, dtype, offset, size, stride, requires_grad):
        if not isinstance(loaded, _Loaded) or not isinstance(dtype, dt.dtype):
            raise CheckpointError(f"{self.what}: a tensor in data.pkl has no valid storage")
        shape, stride, offset = tuple(map(int, size)), tuple(map(int, stride)), int(offset)
        if not _fits(shape, stride, offset, loaded.storage.nbytes // dtype.itemsize):
            raise CheckpointError(
                f"{self.what}: a tensor of shape {list(shape)}, stride {list(stride)} and offset "
                f"{offset} does not fit its storage of {loaded.storage.nbytes} bytes"
            )
        t = make(loaded.storage, shape, stride, offset, dtype, is_contiguous(shape, stride))
        if requires_grad:
            t.requires_grad_(True)
        return t


def _fits(shape: tuple, stride: tuple, offset: int, numel: int) -> bool:
    """Whether every element of the view lies inside a storage of ``numel`` elements."""
    if len(shape) != len(stride) or offset < 0 or any(n < 0 for n in shape):
        return False
    if 0 in shape:
        return True
    low = offset + sum((n - 1) * s for n, s in zip(shape, stride) if s < 0)
    high = offset + sum((n - 1) * s for n, s in zip(shape, stride) if s > 0)
    return low >= 0 and high < numel


def _parameter(data, requires_grad, hooks, state=None):
    cls = parameter_class()
    if cls is not None:
        return cls(data, requires_grad)
    return data.requires_grad_(requires_grad)
