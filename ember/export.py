"""``ember.export``: whole-program capture to an ExportedProgram (``torch.export``); the
implementation lives in ``ember.jit.export``, beside the graph IR it produces."""

from __future__ import annotations

from .jit.export import *  # noqa: F403 - the public names of ember.jit.export, listed there
from .jit.export import __all__  # noqa: F401
