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
import pickle
import struct
import sys
import warnings
import zipfile

from . import _skip_data
from ._atomic import atomic_write
from ._checkpoint_globals import get_unsafe_globals_in_checkpoint
from ._checkpoint_load import CheckpointError, read_checkpoint
from ._checkpoint_mmap import FileMap
from ._checkpoint_pickle import CheckpointPickler, StorageRef, parameter_class
from ._device import CPU
from ._safe_globals import add_safe_globals, clear_safe_globals, get_safe_globals, safe_globals
from ._serialization import storage_bytes
from ._skip_data import skip_data

_ALIGN = 64
_ZIP64_FROM = 1 << 31  # records this big get zip64 headers (decided here, so padding is exact)
_LOCAL_HEADER = 30  # bytes of a zip local file header before its name
_ZIP64_EXTRA = 20  # the zip64 field zipfile appends to a local header
_PADDING_ID = 0x4246  # "FB": the extra-field id PyTorch pads with
_ZERO_CHUNK = 1 << 20  # how much of a reserved record (skip_data) is written at once

__all__ = ["CheckpointError", "load", "save"]
__all__ += ["add_safe_globals", "clear_safe_globals", "get_safe_globals", "safe_globals"]
__all__ += ["get_unsafe_globals_in_checkpoint", "skip_data"]


def save(
    obj,
    f,
    pickle_module=pickle,
    pickle_protocol: int = 2,
    _use_new_zipfile_serialization: bool = True,
    _disable_byteorder_record: bool = False,
) -> None:
    """Save ``obj`` (tensors, state dicts, nested containers) in PyTorch's checkpoint format.

    Args:
        obj: the object to save; tensors may sit anywhere inside containers.
        f: a path or a writable binary file object.
        pickle_module: the standard ``pickle`` (ember's pickler extends its Pickler; another
            module is refused with NotImplementedError).
        pickle_protocol: the pickle protocol of ``data.pkl`` (PyTorch's default, 2).
        _use_new_zipfile_serialization: False (PyTorch's pre-1.6 format) is refused: ember
            writes the zip format, which every PyTorch since 1.6 reads.
        _disable_byteorder_record: leave out the ``byteorder`` record, as PyTorch does.

    Tensors on other devices are written from a CPU copy, with their device recorded, and come
    back on that device. Tensors sharing a storage are written once and share it again after
    loading.

    A path is replaced atomically: the checkpoint is written to a temporary file beside it and
    renamed over it once complete, so a crash or a full disk mid-save keeps the old file.

    Example:
        >>> ember.save({"weight": ember.randn(3, 4)}, "model.pt")
    """
    if pickle_module is not pickle:
        raise NotImplementedError(
            f"ember.save: pickle_module={getattr(pickle_module, '__name__', pickle_module)!r} is "
            "not supported: checkpoints are written with the standard pickle module"
        )
    if not _use_new_zipfile_serialization:
        raise NotImplementedError(
            "ember.save: _use_new_zipfile_serialization=False (the pre-1.6 format) is not "
            "supported: ember writes the zip format, which every PyTorch since 1.6 reads"
        )
    storages = _StorageTable()
    data = io.BytesIO()
    CheckpointPickler(data, pickle_protocol, storages.describe, parameter_class()).dump(obj)
    with _opened(f, "wb") as fileobj, zipfile.ZipFile(fileobj, "w", allowZip64=True) as zf:
        _write_record(zf, "data.pkl", data.getbuffer())
        _write_record(zf, ".format_version", b"1")
        _write_record(zf, ".storage_alignment", str(_ALIGN).encode())
        if not _disable_byteorder_record:
            _write_record(zf, "byteorder", sys.byteorder.encode())
        for key, storage in storages.records:
            if _skip_data.active():
                _reserve_record(zf, f"data/{key}", storage._nbytes)
            else:
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
            ref = StorageRef(t._dtype, key, location, storage._nbytes // t._dtype.itemsize)
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
    info, zip64 = _aligned_info(zf, name, memoryview(data).nbytes)
    with zf.open(info, "w", force_zip64=zip64) as out:
        out.write(data)


def _reserve_record(zf: zipfile.ZipFile, name: str, size: int) -> None:
    """A storage record under ``skip_data``: its header and ``size`` zero bytes, with CRC 0 as
    ``torch.save`` writes (the bytes are someone else's to fill, so no checksum can be right)."""
    if not zf.fp.seekable():
        raise RuntimeError("ember.save: skip_data() needs a seekable file to reserve records in")
    info, zip64 = _aligned_info(zf, name, size)
    zeros = bytes(min(size, _ZERO_CHUNK))
    with zf.open(info, "w", force_zip64=zip64) as out:
        for start in range(0, size, _ZERO_CHUNK):
            out.write(zeros[: min(_ZERO_CHUNK, size - start)])
    end = zf.fp.tell()
    info.CRC = 0  # the local header again, then the central directory (written at close)
    zf.fp.seek(info.header_offset)
    zf.fp.write(info.FileHeader(zip64))
    zf.fp.seek(end)


def _aligned_info(zf: zipfile.ZipFile, name: str, size: int) -> tuple[zipfile.ZipInfo, bool]:
    """The entry of a record of ``size`` bytes written next, padded so its bytes start on a
    64-byte boundary, and whether it needs zip64 headers."""
    info = zipfile.ZipInfo(f"archive/{name}")  # fixed 1980 date: same object, same bytes
    zip64 = size >= _ZIP64_FROM
    header = _LOCAL_HEADER + len(info.filename.encode()) + (_ZIP64_EXTRA if zip64 else 0)
    pad = -(zf.fp.tell() + header + 4) % _ALIGN
    info.extra = struct.pack("<HH", _PADDING_ID, pad) + b"Z" * pad
    info.file_size = size
    return info, zip64


def load(
    f,
    map_location=None,
    pickle_module=None,
    *,
    weights_only: bool | None = None,
    mmap: bool | None = None,
    **pickle_load_args,
):
    """Load an object saved by ``ember.save`` or ``torch.save`` (zip format, PyTorch >= 1.6).

    Args:
        f: a path or a readable, seekable binary file object.
        map_location: where tensors go: None (the device they were saved from), a device or
            device string (all there), a dict from saved location to target (``{"cuda:0":
            "cpu"}``), or a callable ``fn(storage, location)`` returning a storage, a device,
            or None for the default.
        pickle_module: the standard ``pickle`` only (it implies ``weights_only=False``, as in
            PyTorch, and refuses ``weights_only=True``).
        weights_only: allow only tensors, containers, numbers, strings and dtypes (None means
            True unless ``pickle_module`` is given; True is safe on untrusted files); False also
            imports and calls any other global the file names, like ``pickle``.
        mmap: map the file (copy-on-write) instead of reading it: CPU tensors then share the
            file's pages and load without reading their bytes; ``f`` must be a path.
        pickle_load_args: ``encoding``, ``errors``, ``fix_imports`` for the unpickler (with
            ``weights_only=False``; warned and ignored otherwise, as PyTorch does).

    Returns:
        The saved object, with tensors as ember tensors.

    Raises:
        pickle.UnpicklingError: the file names a global that ``weights_only`` refuses.
        RuntimeError: the file is truncated, corrupt or not a checkpoint, or declares sizes
            that its bytes cannot hold (the message names the file and what is wrong);
            nothing is allocated for a declared size before it is checked against the file.
        ValueError: the byte order record is neither "little" nor "big".

    Example:
        >>> state = ember.load("model.pt", map_location="cpu")
    """
    if pickle_module is not None and pickle_module is not pickle:
        raise NotImplementedError(
            f"ember.load: pickle_module={getattr(pickle_module, '__name__', pickle_module)!r} is "
            "not supported: checkpoints are read with the standard pickle module"
        )
    if weights_only is None:
        weights_only = pickle_module is None
    elif weights_only and pickle_module is not None:
        raise RuntimeError("Can not safely load weights when explicit pickle_module is specified")
    if pickle_load_args and weights_only:
        warnings.warn("pickle_load_args only works if `weights_only=False`.", stacklevel=2)
        pickle_load_args = {}
    what = _file_name(f)
    file_map = None
    if mmap:
        if not isinstance(f, (str, os.PathLike)):
            raise ValueError("f must be a file path in order to use the mmap argument")
        file_map = FileMap(os.fspath(f))
    with _opened(f, "rb") as fileobj:
        return read_checkpoint(
            fileobj, what, map_location, weights_only, file_map, pickle_load_args
        )


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
