"""An exported graph IR as an ``ember.fx`` graph: what ``ExportedProgram.graph`` shows.

Every IR input becomes a placeholder, each op node a ``call_function`` of its ``Op`` (written
``ember.ops.add(...)``), constants go inline, lists and tuples become Python containers in the
arguments, and the prim vocabulary maps to Python functions (``operator.add``, ``sym_size``).
"""

from __future__ import annotations

import operator

from .. import packed
from ..fx.graph import Graph as FxGraph
from ..prims import _BINARY


def sym_size(x, dim: int) -> int:
    """``x.size(dim)``: a size the exported program reads at run time."""
    return x.size(dim)


def sym_numel(x) -> int:
    return x.numel()


_PRIM_FUNCTIONS = {f"prim::{name}": fn for name, (fn, _symbol) in _BINARY.items()}
_PRIM_FUNCTIONS.update(
    {
        "prim::size": sym_size,
        "prim::numel": sym_numel,
        "prim::neg": operator.neg,
        "prim::int": int,
        "prim::float": float,
        "prim::min": min,
        "prim::max": max,
        "prim::TupleIndex": operator.getitem,
        "prim::ListIndex": operator.getitem,
        # a PackedSequence through a recurrent layer (jit/packed.py)
        "prim::PackPadded": packed.pack,
        "prim::PackedRNN": packed.recurrent,
        "prim::PadPacked": packed.pad,
    }
)


def to_fx(graph, input_names: list[str]) -> FxGraph:
    """The fx graph of an IR graph without control flow; placeholders named ``input_names``."""
    fx = FxGraph()
    env: dict = {}
    for value, name in zip(graph.inputs(), input_names, strict=True):
        env[value] = fx.placeholder(name)
    for node in graph.nodes():
        _convert(fx, node, env)
    outputs = tuple(env[v] for v in graph.outputs())
    fx.output(outputs)
    return fx


def _convert(fx: FxGraph, node, env: dict) -> None:
    kind = node.kind()
    args = [env[v] for v in node.inputs()]
    if kind == "prim::Constant":
        env[node.output()] = node["value"]
        return
    if kind in ("prim::ListConstruct", "prim::TupleConstruct"):
        env[node.output()] = list(args) if kind == "prim::ListConstruct" else tuple(args)
        return
    if kind in ("prim::ListUnpack", "prim::TupleUnpack"):
        for i, value in enumerate(node.outputs()):
            env[value] = fx.call_function(operator.getitem, (args[0], i))
        return
    if node.blocks() or kind in ("prim::GetAttr", "prim::RaiseException"):
        raise NotImplementedError(f"ember.export: {kind} has no fx form (export lifts attributes "
                                  "and traces control flow away)")  # fmt: skip
    target = _PRIM_FUNCTIONS.get(kind) if kind.startswith("prim::") else node.op()
    if target is None:
        raise NotImplementedError(f"ember.export: no fx form for {kind}")
    made = fx.call_function(target, tuple(args))
    made.meta["val"] = [v.type() for v in node.outputs()]
    if node.scopeName():
        made.meta["nn_module_stack"] = node.scopeName()
    if node.sourceRange():
        made.meta["stack_trace"] = node.sourceRange()
    if len(node.outputs()) == 1:
        env[node.output()] = made
    else:
        for i, value in enumerate(node.outputs()):
            env[value] = fx.call_function(operator.getitem, (made, i))
