"""``ember.multiprocessing``: the standard library's ``multiprocessing``, sharing tensors.

A drop-in for ``multiprocessing`` (every name it exports is here: ``Process``, ``Queue``,
``SimpleQueue``, ``Pool``, ``get_context``...) that registers pickler reductions sending tensor
memory instead of copies: a CPU tensor put on a queue or passed to a process moves into shared
memory (in place, on first send) and the receiver maps the same bytes, so writes on either side
are seen by both (Hogwild training). ``spawn`` and ``start_processes`` run a function in several
processes and raise a failing child's traceback in the parent.

CPU memory travels by file descriptor (``"file_descriptor"``, the default on Linux: no name in
/dev/shm, freed by the kernel when the last process lets go, killed ones included) or by name
(``"file_system"``: no descriptor held per storage; names left by killed processes are removed
when the process tree exits). CUDA and HIP tensors travel as the driver's IPC handles; xpu
tensors cannot be shared and are copied, with a warning. See docs/multiprocessing.md.

Example:
    >>> import ember.multiprocessing as mp
    >>> model.share_memory()
    >>> workers = [mp.Process(target=train, args=(model,)) for _ in range(4)]
"""

import multiprocessing
import sys

from .. import _shm
from .reductions import init_reductions

__all__ = ["get_all_sharing_strategies", "get_sharing_strategy", "set_sharing_strategy"]

from multiprocessing import *  # noqa: F403 - the drop-in's whole point

__all__ += multiprocessing.__all__

from .spawn import (  # noqa: E402
    ProcessContext,
    ProcessException,
    ProcessExitedException,
    ProcessRaisedException,
    SpawnContext,
    spawn,
    start_processes,
)

_all_sharing_strategies = set(_shm.STRATEGIES)


def set_sharing_strategy(new_strategy: str) -> None:
    """Set how CPU tensors are shared: ``"file_descriptor"`` or ``"file_system"``.

    Args:
        new_strategy: one of ``get_all_sharing_strategies()``.
    """
    if new_strategy not in _all_sharing_strategies:
        raise AssertionError(
            f"invalid sharing strategy {new_strategy!r}, expected one of {_all_sharing_strategies}"
        )
    if new_strategy == "file_system" and sys.platform != "win32":
        # Children forked from now on report names to this process's resource tracker, which
        # removes what killed processes leave once the whole tree has exited.
        from multiprocessing import resource_tracker

        resource_tracker.ensure_running()
    _shm.strategy = new_strategy


def get_sharing_strategy() -> str:
    """The current strategy for sharing CPU tensors."""
    return _shm.strategy


def get_all_sharing_strategies() -> set:
    """The strategies this system supports."""
    return _all_sharing_strategies


init_reductions()
