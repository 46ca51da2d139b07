"""Compiler settings (``torch._dynamo.config``'s names; ``ember._dynamo.config`` is this module).

Set them as attributes: ``ember._dynamo.config.recompile_limit = 16``.
"""

from __future__ import annotations

# guard sets (compiled graphs or eager entries) one compiled function keeps before new guard
# sets run eagerly, with a warning (PyTorch's default)
recompile_limit = 8
cache_size_limit = recompile_limit  # PyTorch's older name; read when recompile_limit is unset
# every compiled function together, across resets
accumulated_recompile_limit = 256
# False: ember.compile(...) returns calls that run eagerly (as ``disable=True``)
enabled = True
# PyTorch's switch to turn compiler errors into eager fallbacks; ember falls back at graph breaks
# always and raises only for fullgraph=True, so it is read by nothing yet
suppress_errors = False
