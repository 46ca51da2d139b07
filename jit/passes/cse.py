"""Common subexpression elimination: a pure node that repeats an earlier one (same kind, same
inputs, same attributes) is replaced by it. Constants merge by value.

A value in a nested block may reuse one from an enclosing block, never the other way round;
nothing that reads or aliases a tensor some node writes into is merged (the two reads may see
different contents).
"""

from __future__ import annotations

from ember._tensor import Tensor

from ..ops import has_side_effects, is_nondeterministic
from .alias import Aliases
from .dce import eliminate_dead_code


def eliminate_common_subexpressions(graph):
    _block(graph.block(), {}, Aliases(graph))
    eliminate_dead_code(graph)
    return graph


def _block(block, seen: dict, aliases: Aliases) -> None:
    seen = dict(seen)
    for node in block.nodes():
        for inner in node.blocks():
            _block(inner, seen, aliases)
        key = _key(node, aliases)
        if key is None:
            continue
        earlier = seen.get(key)
        if earlier is None:
            seen[key] = node
            continue
        for mine, theirs in zip(node.outputs(), earlier.outputs()):
            mine.replaceAllUsesWith(theirs)


def _key(node, aliases: Aliases):
    if node.blocks() or node.kind() in ("prim::GetAttr", "prim::RaiseException"):
        return None
    if aliases.touches_container(node):  # two equal lists are two lists once one is written
        return None
    if node.kind() == "prim::Constant":
        return _constant_key(node["value"])
    if has_side_effects(node) or is_nondeterministic(node) or aliases.touches_written(node):
        return None
    attrs = tuple(sorted((k, _constant_key(node[k])) for k in node.attributeNames()))
    if any(a[1] is None for a in attrs):
        return None
    return (node.kind(), tuple(id(v) for v in node.inputs()), attrs, len(node.outputs()))


def _constant_key(value):
    """A hashable key equal only for interchangeable constants (tensors: the same object)."""
    if isinstance(value, Tensor):
        return ("tensor", id(value))
    if isinstance(value, (list, tuple)):
        items = tuple(_constant_key(v) for v in value)
        return None if None in items else (type(value).__name__, items)
    if isinstance(value, float):
        return ("float", repr(value))  # 0.0 and -0.0 are equal, but not interchangeable
    try:
        hash(value)
    except TypeError:
        return None
    return (type(value).__name__, value)
