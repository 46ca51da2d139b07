"""Transposes that cancel: ``t(t(x))`` is ``x`` (same sizes, same strides, same storage).

Backward formulas make such pairs: a linear layer's weight gradient is computed transposed
(``g.t().mm(a).t()``, so it comes out laid out like the weight: autograd/formulas.py) and the
``weight.t()`` the forward took then transposes it back. Eagerly each is a view, a Python call;
in a compiled backward the pair is folded away and the gradient is the product itself.

Nothing is folded where either value is written into (alias.py): then the view's identity can
matter to what a later read sees.
"""

from __future__ import annotations

from .alias import Aliases
from .dce import eliminate_dead_code

TRANSPOSE = "ember::t"


def fold_double_transposes(graph):
    """Replace each ``t(t(x))`` of ``graph``'s top block by ``x``; returns the graph."""
    aliases = Aliases(graph)
    folded = 0
    for node in graph.block().nodes():
        if node.kind() != TRANSPOSE or len(node.inputs()) != 1:
            continue
        inner = node.inputsAt(0).node()
        if inner.kind() != TRANSPOSE or len(inner.inputs()) != 1:
            continue
        source = inner.inputsAt(0)
        if aliases.touches_written(node) or aliases.touches_written(inner):
            continue
        node.output().replaceAllUsesWith(source)
        folded += 1
    if folded:
        eliminate_dead_code(graph)
    return graph
