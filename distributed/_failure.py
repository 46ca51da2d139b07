"""What a failed rank leaves behind (its traceback, in an error file) and the launcher's report.

The rank entry point writes the traceback of an exception that ends the script to
``$EMBER_ERROR_DIR/rank<RANK>.json`` (``TORCHELASTIC_ERROR_FILE`` when set, as torchrun's
``@record`` does) before the process exits; the launcher reads the first failure's file and
prints it in a summary shaped like torchrun's.
"""

from __future__ import annotations

import json
import os
import socket
import time
import traceback


def error_file() -> str | None:
    explicit = os.environ.get("TORCHELASTIC_ERROR_FILE")
    if explicit:
        return explicit
    directory = os.environ.get("EMBER_ERROR_DIR")
    if not directory:
        return None
    return os.path.join(directory, f"rank{os.environ.get('RANK', 'unknown')}.json")


def record(exc: BaseException) -> None:
    """Write ``exc``'s traceback where the launcher will look for it."""
    path = error_file()
    if path is None:
        return
    text = "".join(traceback.format_exception(exc))
    entry = {
        "message": f"{type(exc).__name__}: {exc}",
        "traceback": text,
        "timestamp": time.time(),
        "rank": os.environ.get("RANK"),
        "local_rank": os.environ.get("LOCAL_RANK"),
    }
    try:
        with open(path, "w") as f:
            json.dump({"message": entry}, f)
    except OSError:
        pass  # the traceback is on stderr all the same


class Failure:
    """One rank that ended badly."""

    def __init__(self, rank: int, local_rank: int, exitcode: int, pid: int | None, error_file):
        self.rank, self.local_rank, self.exitcode, self.pid = rank, local_rank, exitcode, pid
        self.error_file = error_file
        self.time = time.strftime("%Y-%m-%d_%H:%M:%S")

    def entry(self) -> dict:
        """What the rank recorded (empty without an error file)."""
        if self.error_file and os.path.exists(self.error_file):
            try:
                with open(self.error_file) as f:
                    return json.load(f)["message"]
            except (OSError, ValueError, KeyError):
                pass
        return {}

    def traceback(self) -> str:
        if "traceback" in self.entry():
            return self.entry()["traceback"]
        if self.exitcode < 0:
            return f"Signal {-self.exitcode} received by PID {self.pid}"
        return "To enable traceback see: the rank's stderr above"


def summary(script: str, failures: list[Failure]) -> str:
    """torchrun's failure report: the first failure in full, the others listed."""
    bar, rule = "=" * 60, "-" * 60

    def block(index: int, failure: Failure, with_traceback: bool) -> str:
        lines = [
            f"[{index}]:",
            f"  time      : {failure.time}",
            f"  host      : {socket.gethostname()}",
            f"  rank      : {failure.rank} (local_rank: {failure.local_rank})",
            f"  exitcode  : {failure.exitcode} (pid: {failure.pid})",
            f"  error_file: {failure.error_file or '<N/A>'}",
        ]
        if with_traceback:
            text = failure.traceback().rstrip().replace("\n", "\n  ")
            lines.append(f"  traceback : {text}")
        return "\n".join(lines)

    first, others = failures[0], failures[1:]
    rest = (
        "\n".join(block(i + 1, f, False) for i, f in enumerate(others)) or "  <NO_OTHER_FAILURES>"
    )
    return "\n".join(
        [
            bar,
            f"{script} FAILED",
            rule,
            "Failures:",
            rest,
            rule,
            "Root Cause (first observed failure):",
            block(0, first, True),
            bar,
        ]
    )
