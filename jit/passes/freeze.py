"""Freezing: parameters and buffers a graph reads become constants of the graph."""

from __future__ import annotations

from .._paths import tensor_at
from ..types import TensorType


def inline_attributes(graph, module, preserved: set = frozenset()):
    """Replace ``prim::GetAttr`` nodes by constants holding ``module``'s current tensors
    (detached: a frozen graph is for inference), except the names in ``preserved``."""
    for node in graph.findAllNodes("prim::GetAttr"):
        name = node["name"]
        if name in preserved:
            continue
        tensor = attribute_of(module, name).detach()
        with graph.insert_point_guard(node):
            value = graph.insertConstant(tensor, TensorType.of(tensor))
        value.setDebugName(node.output().debugName())
        node.output().replaceAllUsesWith(value)
        node.destroy()
    return graph


attribute_of = tensor_at  # the parameter or buffer a prim::GetAttr names
