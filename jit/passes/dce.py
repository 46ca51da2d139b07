"""Dead-code elimination: nodes whose outputs nothing uses, unless they have effects."""

from __future__ import annotations

from ..ops import has_side_effects


def eliminate_dead_code(graph):
    """Remove dead nodes (nested blocks included); returns the graph."""
    _sweep(graph.block())
    return graph


def _sweep(block) -> bool:
    """Sweep ``block`` from the end; True when something in it has effects (and so must stay)."""
    effects = False
    for node in reversed(list(block.nodes())):
        inner = False
        for nested in node.blocks():
            inner = _sweep(nested) or inner
        keep = inner or has_side_effects(node) or any(v.uses() for v in node.outputs())
        if keep:
            effects = effects or inner or has_side_effects(node)
        else:
            node.destroy()
    return effects
