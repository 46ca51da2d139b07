"""Shared memory for CPU storages: segments that other processes can map.

Two kinds, one per sharing strategy of ``ember.multiprocessing``:

- **anonymous** (``file_descriptor``, the default on Linux): a memfd, which has no name; another
  process receives its file descriptor over a Unix socket and maps it. Nothing appears in
  /dev/shm, and the kernel frees the memory when the last descriptor and mapping go, however the
  processes end (a killed child included).
- **named** (``file_system``): a POSIX shared-memory object ``/ember_fs_<pid>_<n>`` that other
  processes open by name, for when descriptors run short. Its first ``HEADER`` bytes count the
  references to it across processes: each process that maps it holds one, and so does each
  message in flight that names it. The count changes under a record lock on the object (the
  kernel drops the lock of a process that dies holding it); the release that takes it to zero
  unlinks the name. A killed process never releases its references, so every name is registered
  with multiprocessing's resource tracker, which unlinks what is left when the process tree exits
  (the role of PyTorch's ``torch_shm_manager``).

DataLoader workers make transient named segments: the main process opens one and unlinks its
name at once (``take``), after which it is anonymous. Segments are keyed by the inode of their
memory object, which every kind has, so a segment that comes back to a process maps once.
"""

from __future__ import annotations

import contextlib
import ctypes
import itertools
import mmap
import os
import struct
import sys
import threading
import weakref
from multiprocessing import resource_tracker, util

try:
    import _posixshmem
    import fcntl
except ImportError:  # Windows: no POSIX shared memory; sharing CPU storages is unsupported
    _posixshmem = fcntl = None

HEADER = 64  # named segments: the reference count, then the data from the next cache line
_COUNT = struct.Struct("q")
_NAMES = itertools.count()
_RW = os.O_RDWR
_TRACKED = "shared_memory"  # the resource tracker's type for POSIX shared memory

# "file_descriptor" needs descriptors that can travel over Unix sockets and an inode per
# segment to recognise it on the way back, as on Linux; elsewhere only names work (PyTorch's
# choice for macOS).
STRATEGIES = ("file_descriptor", "file_system") if sys.platform == "linux" else ("file_system",)
strategy = STRATEGIES[0]

# POSIX record locks belong to the process, so its threads must also exclude each other.
_lock = threading.Lock()


def _after_fork_in_child() -> None:
    global _lock
    _lock = threading.Lock()  # a thread of the parent may have held it at the fork


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
_owned: weakref.WeakSet = weakref.WeakSet()  # named segments this process holds a reference to
_finalizer_pid = None


class Segment:
    """One mapping of a shared-memory object into this process.

    ``address`` is the first byte of the mapping, ``data`` the first byte storages may use
    (after the header of a named segment) and ``size`` the mapping's length. ``fd`` is kept
    open for anonymous segments (it is how they travel), None for named ones (their name is).
    The mapping goes when the last storage over the segment (its ``owner``) goes.
    """

    __slots__ = ("__weakref__", "_map", "_pid", "address", "data", "fd", "key", "name", "size")

    def __init__(self, fd: int, name: str | None, header: int):
        self.fd = self._pid = None  # set first: __del__ runs even if mapping fails
        st = os.fstat(fd)
        self.key = (st.st_dev, st.st_ino)
        self.size = st.st_size
        self._map = mmap.mmap(fd, self.size)
        pin = ctypes.c_char.from_buffer(self._map)
        self.address = ctypes.addressof(pin)  # valid while _map lives: nothing resizes it
        del pin  # a live export would stop the mapping from ever closing
        self.data = self.address + header
        self.name = name
        if name is None:
            self.fd = fd

    def __del__(self):
        if self.fd is not None:
            os.close(self.fd)
        self.release()

    def buffer(self) -> memoryview:
        """The bytes storages may use, writable."""
        return memoryview(self._map)[self.data - self.address :]

    # ---- references to named segments --------------------------------------------------
    def _adjust(self, delta: int) -> int:
        """Change the reference count by ``delta`` under the lock; unlink at zero."""
        with _lock:
            fd = _posixshmem.shm_open(self.name, _RW, 0o600)
            try:
                fcntl.lockf(fd, fcntl.LOCK_EX, _COUNT.size, 0)
                count = _COUNT.unpack_from(self._map, 0)[0] + delta
                _COUNT.pack_into(self._map, 0, count)
                if count <= 0:
                    _unlink(self.name)
            finally:
                os.close(fd)  # and with it the lock
        return count

    def incref(self) -> None:
        """One more reference: a message naming this segment is about to leave."""
        try:
            self._adjust(1)
        except FileNotFoundError:
            raise RuntimeError(
                f"shared memory {self.name} was removed while this process still uses it: "
                "its last other user released it, so it can no longer be sent by name"
            ) from None

    def decref(self) -> None:
        with contextlib.suppress(FileNotFoundError):  # unlinked by the tracker after a crash
            self._adjust(-1)

    def _hold(self) -> None:
        """This process now owns one reference, released with the segment or at exit."""
        global _finalizer_pid
        self._pid = os.getpid()
        _owned.add(self)
        if _finalizer_pid != self._pid:  # forked children start with no finalizers
            _finalizer_pid = self._pid
            util.Finalize(None, _release_all, exitpriority=-100)

    def release(self) -> None:
        """Give back this process's reference (a forked child's copy holds none)."""
        if self._pid is not None and self._pid == os.getpid():
            self._pid = None
            _owned.discard(self)
            self.decref()

    def descriptor(self) -> tuple[int, bool]:
        """A file descriptor of the memory object and whether the caller must close it."""
        if self.fd is not None:
            return self.fd, False
        return _posixshmem.shm_open(self.name, _RW, 0o600), True


def _release_all() -> None:
    """At exit: give back this process's references (a storage may outlive the interpreter)."""
    for segment in list(_owned):
        segment.release()


def _unlink(name: str) -> None:
    _posixshmem.shm_unlink(name)
    resource_tracker.unregister(name, _TRACKED)


def _require() -> None:
    if _posixshmem is None:
        raise RuntimeError(f"sharing CPU tensors between processes is not supported on {os.name}")


def anonymous(nbytes: int) -> Segment:
    """A new anonymous segment of ``nbytes`` (at least one byte: nothing maps zero)."""
    _require()
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("ember-shm", os.MFD_CLOEXEC)
    else:
        name = f"/ember_anon_{os.getpid()}_{next(_NAMES)}"
        fd = _posixshmem.shm_open(name, os.O_CREAT | os.O_EXCL | _RW, 0o600)
        _posixshmem.shm_unlink(name)
    try:
        os.ftruncate(fd, max(nbytes, 1))
        return Segment(fd, None, 0)
    except BaseException:
        os.close(fd)
        raise


def named(nbytes: int, prefix: str = "ember_fs_", counted: bool = True) -> Segment:
    """A new named segment with room for ``nbytes`` after its header.

    ``counted``: this process holds its first reference (``file_system`` sharing); otherwise
    the name waits for a receiver to ``take`` it (DataLoader batches).
    """
    _require()
    while True:
        name = f"/{prefix}{os.getpid()}_{next(_NAMES)}"
        try:
            fd = _posixshmem.shm_open(name, os.O_CREAT | os.O_EXCL | _RW, 0o600)
            break
        except FileExistsError:  # left by a dead process whose pid was reused
            continue
    try:
        os.ftruncate(fd, HEADER + nbytes)
        resource_tracker.register(name, _TRACKED)
        segment = Segment(fd, name, HEADER)
    except BaseException:
        _posixshmem.shm_unlink(name)
        raise
    finally:
        os.close(fd)
    if counted:
        _COUNT.pack_into(segment._map, 0, 1)  # nobody else knows the name yet: no lock needed
        segment._hold()
    return segment


def open_fd(name: str) -> int:
    """A descriptor of the named segment ``name`` (to find its key, then ``map_named`` it)."""
    return _posixshmem.shm_open(name, _RW, 0o600)


def map_named(name: str, fd: int) -> Segment:
    """Map an opened named segment, adopting the reference its message carried."""
    try:
        segment = Segment(fd, name, HEADER)
    finally:
        os.close(fd)
    segment._hold()
    return segment


def from_fd(fd: int) -> Segment:
    """Map an anonymous segment received as ``fd`` (the segment owns the descriptor)."""
    return Segment(fd, None, 0)


def fd_key(fd: int) -> tuple:
    st = os.fstat(fd)
    return (st.st_dev, st.st_ino)


def take(name: str) -> Segment:
    """Open a transient named segment and unlink its name: it is anonymous from now on."""
    fd = _posixshmem.shm_open(name, _RW, 0o600)
    try:
        _unlink(name)
        return Segment(fd, None, HEADER)
    except BaseException:
        os.close(fd)
        raise


def discard(name: str) -> None:
    """Unlink a transient segment that will never be taken."""
    with contextlib.suppress(FileNotFoundError):
        _unlink(name)
