"""``Graph.lint``: what must hold of an fx graph before it is run or compiled."""

from __future__ import annotations

from ember.nn.modules.module import Module

from .node import OPCODES


def lint(graph) -> None:
    seen: set = set()
    names: set = set()
    nodes = list(graph.nodes)
    for position, node in enumerate(nodes):
        if node.graph is not graph:
            raise RuntimeError(f"Node '{node}' does not belong to this Graph!")
        if node.op not in OPCODES:
            raise RuntimeError(f"Node {node} had unknown opcode {node.op}!")
        if node.name in names:
            raise RuntimeError(f"Node redefined name {node.name}!")
        names.add(node.name)
        for arg in node.all_input_nodes:
            if arg not in seen:
                raise RuntimeError(f"Argument '{arg}' of Node '{node}' was used before defined!")
            if node not in arg.users:
                raise RuntimeError(f"Node '{node}' is missing from the users of its input {arg}")
        for user in node.users:
            if node not in user.all_input_nodes:
                raise RuntimeError(f"Node '{node}' lists user '{user}' that does not use it")
        if node.op == "output" and position != len(nodes) - 1:
            raise RuntimeError(f"output node '{node}' is not the last node of the graph")
        _check_target(graph.owning_module, node)
        seen.add(node)
    if sum(n.op == "output" for n in nodes) > 1:
        raise RuntimeError("the graph has more than one output node")


def _check_target(module, node) -> None:
    if module is None or node.op not in ("get_attr", "call_module"):
        return
    current = module
    path = node.target.split(".")
    for i, part in enumerate(path):
        if not hasattr(current, part):
            where = ".".join(path[:i]) or "the root module"
            raise RuntimeError(
                f"Node {node} target {node.target} references nonexistent attribute {part} of "
                f"{where}"
            )
        current = getattr(current, part)
    if node.op == "call_module" and not isinstance(current, Module):
        raise RuntimeError(f"Node {node} target {node.target} {current} is not a Module")
