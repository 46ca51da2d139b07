"""The user's allowlist for weights-only loads, as ``torch.serialization.add_safe_globals``.

Entries are callables (classes, functions), allowed under ``f"{__module__}.{__qualname__}"``, or
``(callable, "module.name")`` pairs for objects saved under another name. A weights-only load
resolves such a name to the entry, may call it or build an instance of it, and may set the state
of instances of allowed classes; everything else stays refused.
"""

from __future__ import annotations

import contextlib

_SAFE: list = []


def add_safe_globals(safe_globals: list) -> None:
    """Allow ``safe_globals`` (callables or ``(callable, "module.name")``) in weights-only loads.

    Raises:
        TypeError: an entry is neither a callable nor a ``(callable, str)`` pair.

    Example:
        >>> ember.serialization.add_safe_globals([MyConfig])
    """
    for entry in safe_globals:
        pair = isinstance(entry, tuple) and len(entry) == 2 and isinstance(entry[1], str)
        if not (pair or callable(entry)):
            raise TypeError(
                "Expected safe_globals to contain callables or (callable, str) tuples, "
                f"got {type(entry).__name__}"
            )
    _SAFE.extend(safe_globals)


def get_safe_globals() -> list:
    """The entries added by ``add_safe_globals`` (a copy)."""
    return list(_SAFE)


def clear_safe_globals() -> None:
    """Forget every entry added by ``add_safe_globals``."""
    _SAFE.clear()


@contextlib.contextmanager
def safe_globals(safe_globals: list):
    """Allow ``safe_globals`` for weights-only loads inside the ``with`` block only."""
    before = list(_SAFE)
    add_safe_globals(safe_globals)
    try:
        yield
    finally:
        _SAFE[:] = before


def lookup(module: str, name: str):
    """The allowed object saved as ``module.name``, or None."""
    wanted = f"{module}.{name}"
    for entry in _SAFE:
        if isinstance(entry, tuple):
            if entry[1] == wanted:
                return entry[0]
        elif f"{entry.__module__}.{entry.__qualname__}" == wanted:
            return entry
    return None


def allows_state_of(obj) -> bool:
    """Whether a weights-only load may set ``obj``'s state (its class is allowlisted)."""
    cls = type(obj)
    return any((e[0] if isinstance(e, tuple) else e) is cls for e in _SAFE)
