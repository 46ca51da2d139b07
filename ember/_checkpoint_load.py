"""Reading a checkpoint archive without trusting it.

Everything a file declares is checked against the file before it is acted on: a record's size
against the bytes the archive holds (before any buffer of that size is allocated), a storage's
size against its record, and each tensor's shape, strides and offset against its storage (with
the element-count rule every tensor obeys). A file that fails a check raises ``CheckpointError``
naming the file and what is wrong; globals a weights-only load refuses raise
``pickle.UnpicklingError`` (see ``_checkpoint_pickle``).
"""

from __future__ import annotations

import contextlib
import io
import itertools
import struct
import sys
import zipfile
import zlib

from . import _dtype as dt
from . import _skip_data
from ._checkpoint_mmap import data_offset
from ._checkpoint_pickle import (
    CheckpointUnpickler,
    Refused,
    StorageType,
    apply_state,
    parameter_class,
    torch_globals,
)
from ._device import CPU
from ._device import device as Device
from ._storage import Storage
from ._tensor import empty, host_array, is_contiguous, make
from .dispatcher.mathbits import apply_metadata
from .dispatcher.memory import normalize_device

# What torch.save wrote before PyTorch 1.6: a pickled magic number, not a zip archive.
_LEGACY_MAGIC = b"\x80\x02\x8a\x0al\xfc\x9cF\xf9 j\xa8P\x19"
_INT64_MAX = (1 << 63) - 1
_LOCAL_HEADER = 30  # bytes of a zip local file header before its name
_MAX_DEFLATE_RATIO = 1032  # deflate cannot expand data more than this
# Everything zipfile raises on a damaged archive or record (encrypted and unknown-method
# records give RuntimeError / NotImplementedError).
_ZIP_ERRORS = (zipfile.BadZipFile, EOFError, OSError, RuntimeError, ValueError, zlib.error)
_ZIP_ERRORS += (struct.error, OverflowError)
_CHUNK = 1 << 24


class CheckpointError(RuntimeError):
    """A checkpoint file that is truncated, corrupt or not a checkpoint at all."""


def read_checkpoint(
    fileobj, what: str, map_location, weights_only: bool, file_map=None, pickle_args=None
):
    """The object in the checkpoint archive ``fileobj`` (``what`` names it in errors);
    ``pickle_args`` (encoding, errors, fix_imports) go to the unpickler."""
    try:
        zf = zipfile.ZipFile(fileobj)
    except _ZIP_ERRORS:
        raise CheckpointError(_not_a_zip(fileobj, what)) from None
    with zf:
        records = _Records(zf, what)
        swap = _byteorder(records.read("byteorder", b"little"), what) != sys.byteorder
        reader = _StorageReader(records, swap, map_location)
        reader.file_map = None if swap else file_map  # mmap=True: storages over the file
        table = torch_globals(reader.rebuild_tensor, reader.rebuild_tensor_v3, _parameter)
        data = io.BytesIO(records.read("data.pkl"))
        try:
            return CheckpointUnpickler(
                data, table, reader.persistent_load, weights_only, what, **(pickle_args or {})
            ).load()
        except (Refused, CheckpointError):
            raise
        except Exception as error:
            raise CheckpointError(
                f"{what}: data.pkl is corrupt ({type(error).__name__}: {error})"
            ) from error


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


def _byteorder(record: bytes, what: str) -> str:
    if record not in (b"little", b"big"):  # as torch.load, rather than guessing a byte order
        raise ValueError(
            f"{what}: Unknown endianness type: {record.decode(errors='backslashreplace')}"
        )
    return record.decode()


class _Records:
    """The records of one archive, each checked against the file before it is read."""

    def __init__(self, zf: zipfile.ZipFile, what: str, marker: str = "data.pkl"):
        self.zf, self.what = zf, what
        self.prefix = _archive_prefix(zf, what, marker)
        _check_no_overlap(zf, what)

    def info(self, name: str, default_ok: bool = False) -> zipfile.ZipInfo | None:
        """The record's entry, after checking its declared sizes can be true of this file."""
        full = f"{self.prefix}{name}"
        try:
            info = self.zf.getinfo(full)
        except KeyError:
            if default_ok:
                return None
            raise CheckpointError(f"{self.what}: record {full} is missing") from None
        problem = _implausible(info, self.zf.start_dir)
        if problem:
            raise CheckpointError(f"{self.what}: record {full} is corrupt ({problem})")
        return info

    def read(self, name: str, default: bytes | None = None) -> bytes:
        info = self.info(name, default_ok=default is not None)
        if info is None:
            return default
        return self.read_into(info, bytearray(info.file_size))

    def read_into(self, info: zipfile.ZipInfo, target):
        """Fills the writable buffer ``target`` (of the record's declared size); returns it."""
        view = memoryview(target).cast("B")
        if info.CRC == 0 and info.compress_type == zipfile.ZIP_STORED and len(view):
            # reserved by skip_data (torch.save's or ember.save's), perhaps filled since: its
            # CRC is 0 whatever it holds, and PyTorch reads it unchecked
            return self._read_unchecked(info, view, target)
        try:
            with self.zf.open(info) as src:
                filled = 0
                while filled < len(view):
                    chunk = src.read(min(len(view) - filled, _CHUNK))
                    if not chunk:
                        raise EOFError(f"{len(view) - filled} bytes missing")
                    view[filled : filled + len(chunk)] = chunk
                    filled += len(chunk)
                src.read(1)  # reaching the end makes zipfile check the CRC
        except _ZIP_ERRORS as error:
            raise CheckpointError(
                f"{self.what}: record {info.filename} is corrupt ({error})"
            ) from None
        return target

    def _read_unchecked(self, info: zipfile.ZipInfo, view, target):
        fp = self.zf.fp
        fp.seek(data_offset(fp, info))
        if fp.readinto(view) != len(view):
            raise CheckpointError(f"{self.what}: record {info.filename} is corrupt (truncated)")
        return target


def _check_no_overlap(zf: zipfile.ZipFile, what: str) -> None:
    # Records sharing bytes would let a small file declare many full-size storages (the
    # overlapping-entries zip bomb); zipfile only checks this from Python 3.12.
    ordered = sorted(zf.infolist(), key=lambda info: info.header_offset)
    for first, second in itertools.pairwise(ordered):
        if _data_end(first) > second.header_offset:
            raise CheckpointError(
                f"{what}: records {first.filename} and {second.filename} overlap in the file"
            )


def _data_end(info: zipfile.ZipInfo) -> int:
    """Where a record's data ends at the earliest (its local header's extra field is unknown)."""
    return info.header_offset + _LOCAL_HEADER + len(info.orig_filename) + info.compress_size


def _implausible(info: zipfile.ZipInfo, data_end: int) -> str | None:
    """Why the record's declared sizes cannot be true of an archive whose records end at
    ``data_end`` (where the central directory starts), or None."""
    if info.compress_type == zipfile.ZIP_STORED:
        if info.file_size != info.compress_size:
            return f"stored record of {info.file_size} bytes declares {info.compress_size}"
    elif info.compress_type == zipfile.ZIP_DEFLATED:
        if info.file_size > info.compress_size * _MAX_DEFLATE_RATIO:
            return f"{info.compress_size} deflated bytes cannot hold {info.file_size} bytes"
    else:
        method = zipfile.compressor_names.get(info.compress_type, info.compress_type)
        return f"compression method {method}, which checkpoints do not use"
    if _data_end(info) > data_end:
        return f"it declares {info.compress_size} bytes, past the end of the archive's data"
    return None


def _archive_prefix(zf: zipfile.ZipFile, what: str, marker: str = "data.pkl") -> str:
    """The folder the records live in ("archive/" from torch.save; older files used others):
    where the ``marker`` record is (ember.jit archives reuse these checks with their own)."""
    for name in zf.namelist():
        folder, _, base = name.rpartition("/")
        if base == marker and "/" not in folder:
            return f"{folder}/" if folder else ""
    raise CheckpointError(f"{what}: not a checkpoint: the zip archive has no {marker} record")


class _Loaded:
    """A storage as the unpickler hands it to ``_rebuild_tensor_v2``."""

    __slots__ = ("dtype", "storage")

    def __init__(self, storage: Storage, dtype):
        self.storage = storage
        self.dtype = dtype


class _StorageReader:
    """Reads storage records on first reference, places them, and builds tensors over them."""

    def __init__(self, records: _Records, swap: bool, map_location):
        if not (map_location is None or callable(map_location)) and not isinstance(
            map_location, (str, Device, dict)
        ):
            raise TypeError(
                "map_location should be None, a string, a device, a dict or a callable, "
                f"got {type(map_location).__name__}"
            )
        self.records, self.what, self.swap = records, records.what, swap
        self.map_location = map_location
        self.loaded: dict = {}
        self.file_map = None

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
            raise CheckpointError(f"{self.what}: unknown persistent id {pid!r} in data.pkl")
        _, kind, key, location, numel = pid
        if not isinstance(kind, StorageType):
            raise CheckpointError(f"{self.what}: storage {key!r} has no storage type")
        if not (_is_int(numel) and 0 <= numel * kind.dtype.itemsize <= _INT64_MAX):
            raise CheckpointError(f"{self.what}: storage {key!r} has invalid size {numel!r}")
        found = self.loaded.get(key)
        if found is None:
            storage = self._place(self._read_storage(str(key), kind.dtype, numel), str(location))
            found = self.loaded[key] = _Loaded(storage, kind.dtype)
        return found

    def _read_storage(self, key: str, dtype, numel: int) -> Storage:
        info = self.records.info(f"data/{key}")
        nbytes = numel * dtype.itemsize
        if info.file_size != nbytes:
            raise CheckpointError(
                f"{self.what}: record {info.filename} holds {info.file_size} bytes, but its "
                f"storage is {numel} {dtype.name} elements ({nbytes} bytes)"
            )
        if _skip_data.active():  # the tensors as the checkpoint lays them out, bytes unread
            return empty((nbytes,), dt.uint8, CPU)._storage
        mapped = self.file_map and self.file_map.record(self.records.zf.fp, info)
        if mapped is not None:
            from ._factories import from_numpy

            return from_numpy(mapped)._storage
        raw = empty((nbytes,), dt.uint8, CPU)  # the record's size was checked against the file
        target = self.records.read_into(info, host_array(raw))
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
        return make(storage, (storage._nbytes,), (1,), 0, dt.uint8, True).to(device)._storage

    def rebuild_tensor(self, loaded, offset, size, stride, requires_grad, hooks, metadata=None):
        made = self._view(loaded, None, offset, size, stride, requires_grad)
        return apply_metadata(made, _metadata(self.what, metadata))

    def rebuild_tensor_v3(
        self, loaded, offset, size, stride, requires_grad, hooks, dtype, metadata=None
    ):
        made = self._view(loaded, dtype, offset, size, stride, requires_grad)
        return apply_metadata(made, _metadata(self.what, metadata))

    def _view(self, loaded, dtype, offset, size, stride, requires_grad):
        """A tensor over ``loaded`` (its dtype when ``dtype`` is None), every argument checked."""
        if not isinstance(loaded, _Loaded):
            raise CheckpointError(f"{self.what}: a tensor in data.pkl has no valid storage")
        dtype = loaded.dtype if dtype is None else dtype
        if not isinstance(dtype, dt.dtype):
            raise CheckpointError(f"{self.what}: a tensor in data.pkl has dtype {dtype!r}")
        shape, stride = _ints(size), _ints(stride)
        if shape is None or stride is None or not _is_int(offset):
            raise CheckpointError(
                f"{self.what}: a tensor's size {size!r}, stride {stride!r} and offset "
                f"{offset!r} must be integers"
            )
        problem = view_problem(shape, stride, offset, loaded.storage._nbytes, dtype.itemsize)
        if problem:
            raise CheckpointError(f"{self.what}: {problem}")
        t = make(loaded.storage, shape, stride, offset, dtype, is_contiguous(shape, stride))
        if requires_grad:
            t.requires_grad_(True)
        return t


def _metadata(what: str, metadata):
    """A tensor's rebuild metadata (torch's conjugate/negative bits), checked."""
    if metadata is not None and not isinstance(metadata, dict):
        raise CheckpointError(f"{what}: a tensor's metadata must be a dict, not {metadata!r}")
    return metadata


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _ints(values) -> tuple | None:
    if not isinstance(values, (tuple, list)) or not all(_is_int(v) for v in values):
        return None
    return tuple(values)


def view_problem(shape: tuple, stride: tuple, offset: int, nbytes: int, itemsize: int):
    """Why a view cannot lie over a storage of ``nbytes`` bytes (PyTorch's words), or None."""
    if len(shape) != len(stride):
        return f"a tensor has {len(shape)} sizes {list(shape)} but {len(stride)} strides"
    negative = [n for n in shape if n < 0]
    if negative:
        return f"Trying to create tensor with negative dimension {negative[0]}: {list(shape)}"
    count = 1
    for n in shape:
        count *= n
        if count > _INT64_MAX:
            return f"numel: integer multiplication overflow (tensor of size {list(shape)})"
    if offset < 0:
        return f"Tensor: invalid storage offset {offset}"
    if any(s < 0 for s in stride):
        return f"a tensor of size {list(shape)} has negative strides {list(stride)}"
    if count == 0:
        return None
    extent = offset + 1 + sum((n - 1) * s for n, s in zip(shape, stride))
    if extent * itemsize > _INT64_MAX:
        return (
            f"Storage size calculation overflowed with sizes={list(shape)} and "
            f"strides={list(stride)}"
        )
    if extent * itemsize > nbytes:
        return (
            f"a tensor of shape {list(shape)}, stride {list(stride)} and offset {offset} does "
            f"not fit its storage of {nbytes} bytes"
        )
    return None


def _parameter(data, requires_grad, hooks, state=None):
    """torch's _rebuild_parameter (and _rebuild_parameter_with_state: its attributes too)."""
    cls = parameter_class()
    made = cls(data, requires_grad) if cls is not None else data.requires_grad_(requires_grad)
    return apply_state(made, state)
