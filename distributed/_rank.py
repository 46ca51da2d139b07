"""The entry point of every rank emberrun starts: ``python -m ember.distributed._rank``.

It gives the script torchrun's environment (under MPI's launcher, ``RANK`` and friends come
from MPI's own variables), runs it as ``__main__``, and when an exception ends it, records the
traceback for the launcher and leaves at once with ``os._exit``: a normal exit would run
MPI_Finalize, which waits for the other ranks, and they wait in a collective for this one; the
MPI launcher instead sees a rank die and tears the job down.

Usage: ``python -m ember.distributed._rank [-m] target [args...]`` or ``--exec cmd [args...]``.
"""

from __future__ import annotations

import os
import runpy
import sys
import traceback

from . import _failure
from .backends.mpi import launcher_environment


def _environment() -> None:
    for key, value in launcher_environment().items():
        os.environ.setdefault(key, value)
    os.environ.setdefault("GROUP_RANK", os.environ.get("EMBER_NODE_RANK", "0"))


def _run(argv: list[str]) -> None:
    if argv[0] == "--exec":
        os.execvp(argv[1], argv[1:])
    if argv[0] == "-m":
        sys.argv = [argv[1], *argv[2:]]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        return
    sys.argv = list(argv)
    sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))
    runpy.run_path(argv[0], run_name="__main__")


def main() -> None:
    _environment()
    try:
        _run(sys.argv[1:])
    except SystemExit as exc:
        if exc.code in (None, 0):
            raise
        if not isinstance(exc.code, int):
            print(exc.code, file=sys.stderr)  # sys.exit("message"), as Python prints it
        _leave(exc, exc.code if isinstance(exc.code, int) else 1)
    except BaseException as exc:
        _strip_entry_frames(exc)
        traceback.print_exception(exc)
        _leave(exc, 1)


def _strip_entry_frames(exc: BaseException) -> None:
    """Start the traceback at the script: this module's and runpy's frames say nothing."""
    tb = exc.__traceback__
    while tb is not None and (
        tb.tb_frame.f_code.co_filename in (__file__, "<frozen runpy>")
        or tb.tb_frame.f_code.co_filename.endswith("runpy.py")
    ):
        tb = tb.tb_next
    if tb is not None:
        exc.__traceback__ = tb


def _leave(exc: BaseException, code: int) -> None:
    _failure.record(exc)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    main()
