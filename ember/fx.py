"""``ember.fx``: program capture and transformation at the Python level (``torch.fx``); the
implementation lives in ``ember.jit.fx``, beside the graph IR."""

from __future__ import annotations

from .jit.fx import *  # noqa: F403 - the public names of ember.jit.fx, listed there
from .jit.fx import __all__  # noqa: F401
