"""Freezing: parameters and buffers a graph reads become constants of the graph."""

from __future__ import annotations

from .._paths import parent, tensor_at
from ..types import TensorType
from .alias import Aliases


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


def inline_module_state(graph, module) -> set:
    """Replace reads of run-time module attributes (``prim::ModuleAttr``: ``self.training``,
    scripted attributes) by their current values, except those the graph writes; returns the
    names it writes (they stay attributes of the frozen module, as PyTorch keeps them)."""
    written = {node["name"] for node in graph.findAllNodes("prim::SetModuleAttr")}
    aliases = Aliases(graph)  # a list or dict attribute updated in place stays an attribute
    for node in graph.findAllNodes("prim::ModuleAttr"):
        if aliases.touches_container(node):
            written.add(node["name"])
    for node in graph.findAllNodes("prim::ModuleAttr"):
        if node["name"] in written:
            continue
        owner, leaf = parent(module, node["name"])
        with graph.insert_point_guard(node):
            value = graph.insertConstant(getattr(owner, leaf), node.output().type())
        node.output().replaceAllUsesWith(value)
        node.destroy()
    return written


attribute_of = tensor_at  # the parameter or buffer a prim::GetAttr names
