"""``ember.jit.script``: the TorchScript subset of Python, compiled from source into the graph
IR that tracing produces (see docs/jit.md).

One concept per module: ``frontend`` (source, ``ast``, errors), ``annotations`` (types),
``sugar`` (compile-time values), ``emitter`` (statements and control flow), ``expressions``,
``calls`` (attributes and calls), ``builtins`` (library calls as op-table nodes), ``modules``
(ember's layers), ``compiler`` (the entry point and inlining), ``api`` (decorators).
"""

from __future__ import annotations

from . import frontend
from .api import Final, FunctionModifiers, annotate, export, ignore, is_scripting, unused
from .compiler import script

__all__ = [
    "Final",
    "FunctionModifiers",
    "annotate",
    "export",
    "frontend",
    "ignore",
    "is_scripting",
    "script",
    "unused",
]
