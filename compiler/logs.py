"""``EMBER_LOGS=graphs,guards,fusion,recompiles`` (PyTorch's ``TORCH_LOGS`` artifacts): what the
compiler prints to stderr while it works. ``set_logs(graphs=True)`` does the same from code."""

from __future__ import annotations

import logging
import os
import sys
import warnings

ARTIFACTS = ("graphs", "guards", "fusion", "recompiles", "graph_breaks")
LOGGER = logging.getLogger("ember.compiler")
_enabled: set = set()
_handler: logging.Handler | None = None


def set_logs(**artifacts: bool) -> None:
    """Turn artifacts on or off: ``set_logs(graphs=True, recompiles=True)``."""
    for name, on in artifacts.items():
        if name not in ARTIFACTS:
            raise ValueError(f"Unknown log artifact {name!r}; valid ones: {', '.join(ARTIFACTS)}")
        if on:
            _enabled.add(name)
        else:
            _enabled.discard(name)
    _attach()


def from_env(value: str | None = None) -> None:
    """Read ``EMBER_LOGS`` (comma separated artifact names; ``+``/``-`` prefixes are ignored)."""
    value = os.environ.get("EMBER_LOGS", "") if value is None else value
    _enabled.clear()
    for item in value.split(","):
        name = item.strip().lstrip("+-")
        if not name:
            continue
        if name in ARTIFACTS:
            _enabled.add(name)
        else:
            warnings.warn(
                f"EMBER_LOGS: unknown artifact {name!r} (known: {', '.join(ARTIFACTS)})",
                stacklevel=2,
            )
    _attach()


def enabled(artifact: str) -> bool:
    return artifact in _enabled


def log(artifact: str, message: str) -> None:
    if artifact in _enabled:
        LOGGER.info("[%s] %s", artifact, message)


def _attach() -> None:
    """A stderr handler while any artifact is on (as TORCH_LOGS prints without setup)."""
    global _handler
    if _enabled and _handler is None:
        _handler = logging.StreamHandler(sys.stderr)
        LOGGER.addHandler(_handler)
        LOGGER.setLevel(logging.INFO)
    elif not _enabled and _handler is not None:
        LOGGER.removeHandler(_handler)
        _handler = None


from_env()
