"""ember.fx: Python-level program capture and transformation (``torch.fx``).

``symbolic_trace`` runs a module's forward on proxies and records a ``Graph`` of ``Node``s
(placeholder, get_attr, call_function, call_method, call_module, output); ``GraphModule``
turns a graph back into a module whose ``forward`` is generated Python. Passes edit graphs
with ``inserting_after``, ``replace_all_uses_with``, ``erase_node`` and ``recompile``;
``Interpreter`` and ``Transformer`` run or rebuild them node by node. Unlike the graph IR of
``ember.jit`` (op-table ops only, serializable), fx targets may be any Python callable: this is
the layer users write their own graph passes on.
"""

from __future__ import annotations

from .graph import Graph
from .graph_module import GraphModule
from .interpreter import Interpreter, Transformer
from .node import Node, map_arg
from .proxy import Attribute, Proxy, TraceError
from .tracer import Tracer, symbolic_trace, wrap

__all__ = [
    "Attribute",
    "Graph",
    "GraphModule",
    "Interpreter",
    "Node",
    "Proxy",
    "TraceError",
    "Tracer",
    "Transformer",
    "map_arg",
    "symbolic_trace",
    "wrap",
]
