"""Constant folding: a node whose inputs are all constants runs once, now, and its outputs
become constants; ``prim::If`` on a constant condition is replaced by the branch it takes.

Only pure nodes fold (no random draws, no writes, nothing aliasing a tensor that some node
writes into, no list or dict when some node writes one), and a folded tensor may not be much
larger than what it came from (folding
``zeros(4096, 4096)`` would store 64 MiB in the graph to save a fill).
"""

from __future__ import annotations

import math

from ember._tensor import Tensor
from ember.autograd import no_grad

from ..ops import has_side_effects, is_nondeterministic
from ..prims import PRIMS
from ..types import type_of
from .alias import Aliases
from .dce import eliminate_dead_code

MAX_BYTES = 1 << 20  # a folded tensor above this must not outgrow its inputs
_NEVER = {"prim::Constant", "prim::GetAttr", "prim::If", "prim::Loop", "prim::RaiseException"}


def fold_constants(graph, max_bytes: int = MAX_BYTES):
    """Fold every foldable node (nested blocks included); returns the graph."""
    aliases = Aliases(graph)
    with no_grad():
        _fold_block(graph, graph.block(), aliases, max_bytes)
    eliminate_dead_code(graph)
    return graph


def _fold_block(graph, block, aliases: Aliases, max_bytes: int) -> None:
    for node in block.nodes():
        for inner in node.blocks():
            _fold_block(graph, inner, aliases, max_bytes)
        if node.kind() == "prim::If" and _is_constant(node.inputsAt(0)):
            _inline_branch(node)
            continue
        _size_from_numel(graph, node)
        if not _foldable(node, aliases):
            continue
        results = _evaluate(node)
        if results is None or not _small_enough(results, node, max_bytes):
            continue
        with graph.insert_point_guard(node):
            for value, result in zip(node.outputs(), results):
                folded = graph.insertConstant(result, type_of(result))
                folded.setDebugName(value._debug_name)
                value.replaceAllUsesWith(folded)


def _is_constant(value) -> bool:
    return value.node().kind() == "prim::Constant"


def constant_value(value):
    return value.node()["value"]


def _foldable(node, aliases: Aliases) -> bool:
    kind = node.kind()
    if kind in _NEVER or not node.outputs():
        return False
    if not all(_is_constant(v) for v in node.inputs()) or aliases.touches_container(node):
        return False
    if kind.startswith("prim::"):
        spec = PRIMS.get(kind)
        return spec is not None and spec.run is not None
    if has_side_effects(node) or is_nondeterministic(node):
        return False
    return not aliases.touches_written(node)


def _evaluate(node):
    args = [constant_value(v) for v in node.inputs()]
    if any(isinstance(a, Tensor) and a.requires_grad for a in args):
        return None  # a trainable value is no constant (only frozen graphs fold weights)
    try:
        if node.kind().startswith("prim::"):
            result = PRIMS[node.kind()].run(*args)
        else:
            result = node.op()(*args)
    except Exception:  # the graph raises here at run time too; leave it to do so
        return None
    if len(node.outputs()) == 1:
        return [result]
    return list(result)


def _bytes(value) -> int:
    if isinstance(value, Tensor):
        return math.prod(value.shape) * value.dtype.itemsize
    if isinstance(value, (list, tuple)):
        return sum(_bytes(v) for v in value)
    return 0


def _small_enough(results, node, max_bytes: int) -> bool:
    produced = sum(_bytes(r) for r in results)
    consumed = sum(_bytes(constant_value(v)) for v in node.inputs())
    return produced <= max(max_bytes, consumed)


def _size_from_numel(graph, node) -> None:
    """``view(constant, [1, n, 1, 1])`` with ``n`` computed at run time: the constant's element
    count fixes ``n`` (a view keeps it), so the size becomes ``-1`` and the view can fold."""
    if node.kind() not in ("ember::view", "ember::reshape") or not _is_constant(node.inputsAt(0)):
        return
    sizes = node.inputsAt(1).node()
    if sizes.kind() != "prim::ListConstruct":
        return
    items = sizes.inputs()
    dynamic = [i for i, v in enumerate(items) if not _is_constant(v)]
    if len(dynamic) != 1 or any(constant_value(v) == -1 for v in items if _is_constant(v)):
        return
    known = [-1 if i == dynamic[0] else constant_value(v) for i, v in enumerate(items)]
    with graph.insert_point_guard(node):
        node.replaceInput(1, graph.insertConstant(known))


def _inline_branch(node) -> None:
    """Replace ``prim::If`` on a constant by the nodes of the branch it takes."""
    taken = node.blocks()[0 if constant_value(node.inputsAt(0)) else 1]
    for inner in taken.nodes():
        inner.moveBefore(node)
    for out, result in zip(node.outputs(), taken.outputs()):
        out.replaceAllUsesWith(result)
    node.destroy()
