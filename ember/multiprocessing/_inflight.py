"""Descriptors in flight, and pool workers that wait for theirs to be collected before exiting.

Under the ``file_descriptor`` strategy a message carries a handle that its receiver redeems
from the sender's resource sharer (a thread serving a Unix socket), so the sender must still
be alive when the message is read; PyTorch leaves that to the program (keep the sender
waiting). A ``Pool`` worker's life is not the program's to extend: the pool ends it after
``maxtasksperchild`` tasks or at ``close()``, possibly just after it sent a result, and the
pool's result thread then dies on the dead handle, hanging the pool (PyTorch's too). So a pool
worker that sent descriptors waits at exit until each has been collected, its parent has gone,
or ``EXIT_WAIT`` seconds have passed. Other processes exit when they like, as in PyTorch.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from multiprocessing import context, process, reduction, resource_sharer, util

EXIT_WAIT = 60.0  # seconds; the pool's result thread collects at once unless the machine stalls

_lock = threading.Lock()
_pending = 0  # this process's descriptors sent and not yet collected
_waits_at_exit = None  # the pid that registered the exit wait (forked children start anew)


def _after_fork_in_child() -> None:
    global _lock, _pending
    _lock, _pending = threading.Lock(), 0  # the parent's messages are the parent's to wait for


if hasattr(os, "register_at_fork"):  # POSIX; Windows neither forks nor passes descriptors
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _count(delta: int) -> None:
    global _pending
    with _lock:
        _pending += delta


def pending() -> int:
    """How many descriptors this process has sent that no receiver has collected yet."""
    return _pending


class SharedFd(getattr(resource_sharer, "DupFd", object)):  # Windows: never made (no "fd")
    """``resource_sharer.DupFd`` that counts itself in flight until its receiver has it
    (``detach``, inherited, redeems it in the receiver)."""

    def __init__(self, fd: int):
        new_fd = os.dup(fd)
        owner = os.getpid()

        def send(conn, pid):
            reduction.send_handle(conn, new_fd, pid)

        def close():  # after send (or in a forked child, which discards the parent's)
            os.close(new_fd)
            if os.getpid() == owner:
                _count(-1)

        _count(1)
        try:
            self._id = resource_sharer._resource_sharer.register(send, close)
        except BaseException:
            close()
            raise
        _wait_at_exit_if_pool_worker()


def dup_fd(fd: int):
    """A picklable handle of ``fd``: passed at start-up to a process being spawned (its
    arguments), else served by this process's resource sharer until the receiver collects it."""
    if context.get_spawning_popen() is not None:
        return reduction.DupFd(fd)
    return SharedFd(fd)


def _wait_at_exit_if_pool_worker() -> None:
    global _waits_at_exit
    if _waits_at_exit == os.getpid():
        return
    pool = sys.modules.get("multiprocessing.pool")
    if pool is None or getattr(process.current_process(), "_target", None) is not pool.worker:
        return
    _waits_at_exit = os.getpid()
    # Priority above the default 0: runs first in multiprocessing's exit, while the resource
    # sharer's thread still serves.
    util.Finalize(None, wait_for_receivers, exitpriority=100)


def wait_for_receivers(timeout: float = EXIT_WAIT) -> bool:
    """Wait until every descriptor this process sent has been collected (True), its parent
    has exited or ``timeout`` seconds have passed (False)."""
    parent = process.parent_process()
    deadline = time.monotonic() + timeout
    while pending():
        if time.monotonic() > deadline or (parent is not None and not parent.is_alive()):
            return False
        time.sleep(0.005)
    return True
