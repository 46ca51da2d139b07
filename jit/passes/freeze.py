"""Freezing: parameters and buffers a graph reads become constants of the graph."""

from __future__ import annotations

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


def attribute_of(module, qualified: str):
    """The parameter or buffer of ``module`` called ``qualified`` (``"layer.0.weight"``)."""
    *path, leaf = qualified.split(".")
    for part in path:
        module = module._modules[part]
    found = module._parameters.get(leaf)
    return found if found is not None else module._buffers[leaf]
