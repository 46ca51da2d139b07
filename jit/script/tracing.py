"""Scripted code called while ``ember.jit.trace`` records: its graph goes into the trace whole,
control flow included (PyTorch's tracer does the same), instead of the ops one run took.

The call still runs (recording suspended) so the trace continues with real tensors; the
scripted graph's nodes are copied into the trace with its inputs mapped to the traced values
and its outputs bound to the tensors the run returned.
"""

from __future__ import annotations

from ember._tensor import Tensor

from .. import types as T
from ..graph_utils import copy_node


def active_trace():
    """The TracingState recording on this thread, or None."""
    from ..tracer import current

    state = current()
    return state if state is not None and state.recording() else None


def record(state, method, owner, args: tuple, run):
    """``run()``'s result, with ``method``'s graph recorded into ``state``'s trace; None when
    the graph cannot be placed (its module is not part of the traced model): then the caller
    runs and the tracer records the ops as usual."""
    prefix = ""
    if owner is not None:
        prefix = state.module_names.get(id(owner))
        if prefix is None:
            return None
    state.suspended += 1
    try:
        result = run()
    finally:
        state.suspended -= 1
    graph = method.graph
    mapping = {}
    for value, arg in zip(graph.inputs(), args):
        mapping[value] = state.value_of(arg) if isinstance(arg, Tensor) else state.constant(arg)
    for node in graph.nodes():
        made = state.graph.insertNode(copy_node(node, state.graph, mapping))
        _qualify(made, prefix)
    _bind(state, mapping[graph.outputs()[0]], result)
    return result


def _qualify(node, prefix: str) -> None:
    if prefix and node.kind() == "prim::GetAttr":
        node.setAttr("name", f"{prefix}.{node['name']}")
    for block in node.blocks():
        for inner in block.nodes():
            _qualify(inner, prefix)


def _bind(state, value, result) -> None:
    if isinstance(result, Tensor):
        state.bind(result, value)
    elif isinstance(result, tuple) and isinstance(value.type(), T.TupleType):
        unpack = state.graph.insert("prim::TupleUnpack", [value], num_outputs=len(result))
        for item, out, kind in zip(result, unpack.outputs(), value.type().elems):
            out.setType(kind)
            _bind(state, out, item)
