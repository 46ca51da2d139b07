"""Graph breaks at module granularity: a module whose capture broke runs its own Python eagerly
while its direct children run compiled, each with its own guards and cache (a child that breaks
in turn splits the same way, down to the module holding the construct). So one ``print`` in one
block leaves the other blocks compiled: compiled regions around the eager piece.

The children are reached by patching ``Module.__call__`` for the duration of the eager call
(as a trace patches it), which keeps the class's call path untouched outside."""

from __future__ import annotations

import contextlib

from ember.nn.modules.module import Module


@contextlib.contextmanager
def compiled_children(table: dict):
    """While active, a call of a module whose id is in ``table`` runs ``table[id]`` instead."""
    original = Module.__dict__["__call__"]

    def call(module, *args, **kwargs):
        compiled = table.get(id(module))
        if compiled is not None:
            return compiled(*args, **kwargs)
        return original(module, *args, **kwargs)

    Module.__call__ = call
    try:
        yield
    finally:
        Module.__call__ = original
