"""Replacing a file so that it is always either the complete old file or the complete new one.

``atomic_write(path)`` gives a binary file in the target's folder; when the block ends it is
flushed, fsynced and renamed over the target (``os.replace`` is atomic on POSIX and Windows),
and the folder is fsynced so the rename itself survives a power cut. Until then the target is
untouched, so a crash, a kill or a full disk mid-save never leaves a half-written checkpoint.

On Linux the temporary is an unnamed file (``O_TMPFILE``) that only gets a name an instant
before the rename, so even a SIGKILL leaves no stray temporary behind; elsewhere it is a hidden
``.<name>.<random>.tmp`` file, removed on any error the process lives through.

Permissions are what ``open(path, "wb")`` would give: an existing file keeps its mode (and, where
the process may, its owner), a new one gets ``0o666`` minus the umask. A target that is not a
regular file (``/dev/null``, a FIFO) is written in place, as there is nothing to replace; a
symlink is followed, so the file it points to is replaced. Hard links to the old file keep the
old contents.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat

# Linux with /proc: unnamed temporaries can be given a name through /proc/self/fd.
_TMPFILE = hasattr(os, "O_TMPFILE") and os.path.isdir("/proc/self/fd")
# What open(2) answers when the filesystem (or kernel) cannot make unnamed files.
_NO_TMPFILE = frozenset({errno.EOPNOTSUPP, errno.ENOTSUP, errno.EISDIR, errno.EINVAL})
_NEW_FILE_MODE = 0o666  # the kernel applies the umask, as for open()
_NAMED_FLAGS = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)


@contextlib.contextmanager
def atomic_write(path):
    """A binary file whose contents replace ``path`` when the block exits without an error."""
    target = os.path.realpath(os.fspath(path))
    in_place, old = _inspect_target(target)
    if in_place:
        with open(target, "wb") as f:
            yield f
        return
    folder = os.path.dirname(target)
    fd, name = _create(folder, target)
    try:
        with os.fdopen(fd, "wb") as f:
            if old is not None:
                _keep_mode_and_owner(fd, old)
            yield f
            f.flush()
            os.fsync(f.fileno())
            if name is None:
                name = _give_name(f.fileno(), target)
        os.replace(name, target)
        name = None
    finally:
        if name is not None:  # an error before the rename: the target is untouched
            with contextlib.suppress(OSError):
                os.unlink(name)
    _sync_folder(folder)


def _inspect_target(target: str) -> tuple[bool, os.stat_result | None]:
    """``(write in place, the existing file's stat or None)``; raises what
    ``open(target, "wb")`` would raise up front."""
    try:
        info = os.stat(target)
    except FileNotFoundError:
        return False, None
    if stat.S_ISDIR(info.st_mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), target)
    if not stat.S_ISREG(info.st_mode):
        return True, None
    if not os.access(target, os.W_OK):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), target)
    return False, info


def _create(folder: str, target: str) -> tuple[int, str | None]:
    """An open descriptor for the new contents, and its name (None while it has none)."""
    fd = None
    if _TMPFILE:
        try:
            fd = os.open(folder, os.O_TMPFILE | os.O_RDWR | os.O_CLOEXEC, _NEW_FILE_MODE)
            name = None
        except OSError as error:
            if error.errno not in _NO_TMPFILE:
                raise OSError(error.errno, error.strerror, target) from None
    if fd is None:
        fd, name = _named_temporary(target, lambda tmp: os.open(tmp, _NAMED_FLAGS, _NEW_FILE_MODE))
    return fd, name


def _keep_mode_and_owner(fd: int, old: os.stat_result) -> None:
    # What writing into the old file would have kept. Ownership is best effort: only root may
    # give a file away, and then only on filesystems that have owners.
    if hasattr(os, "fchmod"):
        os.fchmod(fd, stat.S_IMODE(old.st_mode))
    if hasattr(os, "fchown") and (old.st_uid, old.st_gid) != (os.geteuid(), os.getegid()):
        with contextlib.suppress(OSError):
            os.fchown(fd, old.st_uid, old.st_gid)


def _named_temporary(target: str, make):
    """``make(name)`` under a fresh hidden name beside ``target``; ``(its result, name)``."""
    folder, base = os.path.split(target)
    for _ in range(100):
        name = os.path.join(folder, f".{base}.{os.urandom(6).hex()}.tmp")
        try:
            return make(name), name
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary file name", target)


def _give_name(fd: int, target: str) -> str:
    """Links the unnamed file into the folder (the rename then follows at once)."""
    # linkat(AT_SYMLINK_FOLLOW) on /proc/self/fd/N links the open file itself; Python only
    # passes that flag through linkat when a directory descriptor is given.
    fds = os.open("/proc/self/fd", os.O_RDONLY | os.O_DIRECTORY)
    try:
        link = lambda tmp: os.link(str(fd), tmp, src_dir_fd=fds, follow_symlinks=True)  # noqa: E731
        return _named_temporary(target, link)[1]
    finally:
        os.close(fds)


def _sync_folder(folder: str) -> None:
    # Best effort: some filesystems (and Windows) cannot fsync a folder, and the file is
    # already complete and in place by now.
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
