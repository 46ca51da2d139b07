"""Stores for the processes of one machine: ``HashStore`` (one process's memory) and
``FileStore`` (a file), as in PyTorch.

``FileStore``'s file is PyTorch's format, so ember and torch processes can share one: an
append-only log of records, each a key and a value as ``uint32`` length + bytes. User keys are
stored as ``/key``; a deletion appends ``-/key`` with an empty value; ``refcount/`` and
``cleanup/`` count the stores open on the file and the ones closed, and the last to close
deletes the file when ``world_size`` stores have closed (never with ``world_size=-1``). Every
operation holds an ``flock`` on the file (shared to read, exclusive to write) and first reads
what other processes appended since its last look.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import struct
import threading
import time
import weakref

from ._errors import DistStoreError
from ._store import _COMPARE_SET, _SET, Store, _seconds, _Table

_LENGTH = struct.Struct("<I")
_REFCOUNT, _CLEANUP = b"refcount/", b"cleanup/"
_POLL = 0.01  # seconds between looks at the file while waiting for a key


def _bytes(value, what: str) -> bytes:
    """A key or value as bytes: str is UTF-8 encoded; other types are refused, as torch does."""
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise TypeError(f"Store {what} must be str or bytes, got {type(value).__name__}")


def _added(current: bytes | None, key, amount: int) -> bytes:
    try:
        return str(int(current or b"0") + int(amount)).encode()
    except ValueError:
        raise ValueError(f"add: key {key!r} holds {current!r}, which is not an integer") from None


def _compared(current: bytes | None, expected: bytes, desired: bytes) -> bytes | None:
    """What ``compare_set`` stores (None: nothing) when the key holds ``current``."""
    if (current is None and expected == b"") or current == expected:
        return desired
    return None


class HashStore(Store):
    """A store in this process's memory, shared by its threads (``torch.distributed.HashStore``).

    ``get`` and ``wait`` block until the keys are set or the timeout passes, then raise
    ``DistStoreError("Wait timeout")``.

    Example:
        >>> store = HashStore()
        >>> store.set("k", "v"); store.add("n", 2)
        2
        >>> store.get("k")
        b'v'
    """

    def __init__(self):
        super().__init__()
        self._table = _Table()

    def _wait(self, keys: list[bytes], seconds: float) -> None:
        if not self._table.wait_for(keys, seconds):
            raise DistStoreError("Wait timeout")

    def set(self, key: str, value) -> None:
        self._table.apply(_SET, [_bytes(key, "key"), _bytes(value, "value")])

    def get(self, key: str) -> bytes:
        """The value of ``key``, waiting up to the store's timeout for it to be set."""
        key = _bytes(key, "key")
        with self._table.changed:
            self._wait([key], self._timeout)
            return self._table.data[key]

    def add(self, key: str, amount: int) -> int:
        table, name = self._table, _bytes(key, "key")
        with table.changed:
            table.data[name] = _added(table.data.get(name), key, amount)
            table.changed.notify_all()
            return int(table.data[name])

    def compare_set(self, key: str, expected_value, desired_value) -> bytes:
        fields = [_bytes(key, "key"), _bytes(expected_value, "value")]
        return self._table.apply(_COMPARE_SET, [*fields, _bytes(desired_value, "value")])[1]

    def check(self, keys) -> bool:
        return all(_bytes(k, "key") in self._table.data for k in keys)

    def wait(self, keys, timeout=None) -> None:
        seconds = self._timeout if timeout is None else _seconds(timeout)
        self._wait([_bytes(k, "key") for k in keys], seconds)

    def delete_key(self, key: str) -> bool:
        with self._table.changed:
            return self._table.data.pop(_bytes(key, "key"), None) is not None

    def num_keys(self) -> int:
        return len(self._table.data)


class _RecordFile:
    """One process's view of a FileStore's file: the keys read so far and where it stopped."""

    def __init__(self, path: str):
        self.path = path
        self.cache: dict[bytes, bytes] = {}
        self.pos = 0
        self.lock = threading.Lock()  # flock is per open file: threads take turns first

    @contextlib.contextmanager
    def locked(self, exclusive: bool):
        """Hold the file locked, with the cache brought up to date; yields the descriptor."""
        with self.lock:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
                self._refresh(fd)
                yield fd
            finally:
                os.close(fd)  # releases the lock

    def _refresh(self, fd: int) -> None:
        size = os.fstat(fd).st_size
        data = os.pread(fd, size - self.pos, self.pos) if size > self.pos else b""
        offset = 0
        while offset < len(data):
            key, offset = _field(data, offset)
            value, offset = _field(data, offset)
            if key.startswith(b"-"):
                self.cache.pop(key[1:], None)
            else:
                self.cache[key] = value
        self.pos = size

    def append(self, fd: int, key: bytes, value: bytes) -> None:
        """Write one record (under the exclusive lock, with the cache up to date)."""
        record = _LENGTH.pack(len(key)) + key + _LENGTH.pack(len(value)) + value
        os.lseek(fd, 0, os.SEEK_END)
        os.write(fd, record)
        self.pos += len(record)
        if key.startswith(b"-"):
            self.cache.pop(key[1:], None)
        else:
            self.cache[key] = value

    def add(self, key: bytes, amount: int, name=None) -> int:
        with self.locked(exclusive=True) as fd:
            value = _added(self.cache.get(key), name or key, amount)
            self.append(fd, key, value)
            return int(value)


def _field(data: bytes, offset: int) -> tuple[bytes, int]:
    (length,) = _LENGTH.unpack_from(data, offset)
    start = offset + _LENGTH.size
    return data[start : start + length], start + length


def _release(records: _RecordFile, world_size: int) -> None:
    """A FileStore closes: the last of ``world_size`` deletes the file (PyTorch's rule)."""
    if not os.path.exists(records.path):
        return
    closed = records.add(_CLEANUP, 1)
    open_count = records.add(_REFCOUNT, -1)
    if open_count == 0 and world_size >= 0 and closed >= world_size:
        with contextlib.suppress(OSError):
            os.remove(records.path)


class FileStore(Store):
    """A store kept in a file that the processes of one machine share
    (``torch.distributed.FileStore``), and the same file format, so torch can share it too.

    Args:
        file_name: the file (created if missing). Put it on a local file system: the locking
            is ``flock``, which network file systems may not honour.
        world_size: how many stores will use the file; when that many have been closed
            (garbage-collected, or at exit) and none is open, the file is deleted. -1: never.

    ``get`` waiting past the timeout raises ``RuntimeError("Timeout waiting for key: ...")``,
    ``wait`` ``RuntimeError("Wait timeout")``, as torch's FileStore does.

    Example:
        >>> store = FileStore("/tmp/job_store", 2)     # in each of the two processes
        >>> store.set("k", "v"); store.get("k")
        b'v'
    """

    def __init__(self, file_name: str, world_size: int = -1):
        super().__init__()
        self._records = _RecordFile(os.fspath(file_name))
        self._records.add(_REFCOUNT, 1)
        weakref.finalize(self, _release, self._records, int(world_size))

    def _poll(self, found, timeout_message: str, seconds: float):
        deadline = time.monotonic() + seconds
        while True:
            with self._records.locked(exclusive=False):
                result = found(self._records.cache)
            if result is not None:
                return result
            if time.monotonic() >= deadline:
                raise RuntimeError(timeout_message)
            time.sleep(_POLL)

    def set(self, key: str, value) -> None:
        with self._records.locked(exclusive=True) as fd:
            self._records.append(fd, b"/" + _bytes(key, "key"), _bytes(value, "value"))

    def get(self, key: str) -> bytes:
        """The value of ``key``, waiting up to the store's timeout for it to be set."""
        name = b"/" + _bytes(key, "key")
        message = f"Timeout waiting for key: {key} after {round(self._timeout * 1000)} ms"
        return self._poll(lambda cache: cache.get(name), message, self._timeout)

    def add(self, key: str, amount: int) -> int:
        return self._records.add(b"/" + _bytes(key, "key"), amount, key)

    def compare_set(self, key: str, expected_value, desired_value) -> bytes:
        name = b"/" + _bytes(key, "key")
        expected = _bytes(expected_value, "value")
        with self._records.locked(exclusive=True) as fd:
            current = self._records.cache.get(name)
            desired = _compared(current, expected, _bytes(desired_value, "value"))
            if desired is None:
                return expected if current is None else current
            self._records.append(fd, name, desired)
            return desired

    def check(self, keys) -> bool:
        names = [b"/" + _bytes(k, "key") for k in keys]
        with self._records.locked(exclusive=False):
            return all(n in self._records.cache for n in names)

    def wait(self, keys, timeout=None) -> None:
        names = [b"/" + _bytes(k, "key") for k in keys]
        seconds = self._timeout if timeout is None else _seconds(timeout)
        self._poll(lambda cache: all(n in cache for n in names) or None, "Wait timeout", seconds)

    def delete_key(self, key: str) -> bool:
        """Delete ``key``; True, as torch's FileStore answers, whether or not it was set."""
        with self._records.locked(exclusive=True) as fd:
            self._records.append(fd, b"-/" + _bytes(key, "key"), b"")
        return True

    def num_keys(self) -> int:
        """The keys in the file, counting its ``refcount/`` and ``cleanup/`` keys as torch
        does."""
        with self._records.locked(exclusive=False):
            return len(self._records.cache)
