"""ember.jit: the graph IR, capture by tracing, serialization and graph passes.

See docs/jit.md. Public entry points: ``trace``, ``trace_module``, ``save``, ``load``,
``freeze``, ``optimize_for_inference``, ``script`` (with ``ignore``, ``unused``, ``export``,
``annotate``, ``is_scripting``, ``Final``); the IR itself is ``ember.jit.ir`` (Graph, Node, Value)
with types in ``ember.jit.types``.
"""

from __future__ import annotations

from . import (
    export,  # the package; calling it is the @export decorator (see there)
    frontend,
    ir,
    types,
)
from .fork import fork, wait
from .freezing import freeze, optimize_for_inference
from .ir import Graph, Node, Value
from .script import (
    Attribute,
    Final,
    annotate,
    ignore,
    is_scripting,
    script,
    unused,
)
from .script.interfaces import interface
from .script.overloads import _overload, _overload_method
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
    "Attribute",
    "ArchiveError",
    "Final",
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
    "annotate",
    "export",
    "fork",
    "frontend",
    "ignore",
    "interface",
    "is_scripting",
    "freeze",
    "is_tracing",
    "load",
    "optimize_for_inference",
    "save",
    "script",
    "trace",
    "trace_module",
    "unused",
    "wait",
]
