"""ember.jit: the graph IR, capture by tracing, serialization and graph passes.

See docs/jit.md. Public entry points: ``trace``, ``trace_module``, ``save``, ``load``,
``freeze``, ``optimize_for_inference``; the IR itself is ``ember.jit.ir`` (Graph, Node, Value)
with types in ``ember.jit.types``.
"""

from __future__ import annotations

from . import ir, types
from .freezing import freeze, optimize_for_inference
from .ir import Graph, Node, Value
from .script_module import (
    RecursiveScriptModule,
    ScriptFunction,
    ScriptModule,
    TopLevelTracedModule,
    TracedModule,
)
from .serialize import ArchiveError, load, save
from .trace import TracingCheckError, trace, trace_module
from .tracer import TracerWarning, is_tracing

__all__ = [
    "ArchiveError",
    "Graph",
    "Node",
    "RecursiveScriptModule",
    "ScriptFunction",
    "ScriptModule",
    "TopLevelTracedModule",
    "TracedModule",
    "TracerWarning",
    "TracingCheckError",
    "Value",
    "freeze",
    "is_tracing",
    "load",
    "optimize_for_inference",
    "save",
    "trace",
    "trace_module",
]
