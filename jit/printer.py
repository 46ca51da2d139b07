"""Graphs as text, in TorchScript's notation::

graph(%x : Float(2, 3, device=cpu)):
  %fc.weight : Float(4, 3, requires_grad=1, device=cpu) = prim::GetAttr[name="fc.weight"]()
  %2 : Float(2, 4, device=cpu) = ember::matmul(%x, %1)  # scope: fc
  return (%2)
"""

from __future__ import annotations

import json

from ember._tensor import Tensor

from .types import TensorType


class _Names:
    """Printed names: the debug name when it is unique in the graph, else with a suffix."""

    def __init__(self):
        self.names: dict = {}
        self.taken: set = set()

    def __call__(self, value) -> str:
        found = self.names.get(value)
        if found is None:
            base = value.debugName()
            found, n = base, 0
            while found in self.taken:
                n += 1
                found = f"{base}.{n}"
            self.taken.add(found)
            self.names[value] = found
        return "%" + found


def graph_text(graph, print_source_locations: bool = True) -> str:
    names = _Names()
    params = [f"{names(v)} : {v.type()}" for v in graph.inputs()]
    lines = ["graph(" + ",\n      ".join(params) + "):"]
    _block_lines(graph.block(), names, "  ", lines, print_source_locations)
    outputs = ", ".join(names(v) for v in graph.outputs())
    lines.append(f"  return ({outputs})")
    return "\n".join(lines) + "\n"


def node_text(node, names=None, indent: str = "", sources: bool = True) -> str:
    lines: list = []
    _node_lines(node, names or _Names(), indent, lines, sources)
    return "\n".join(lines) + "\n"


def _block_lines(block, names, indent: str, lines: list, sources: bool) -> None:
    for node in block.nodes():
        _node_lines(node, names, indent, lines, sources)


def _node_lines(node, names, indent: str, lines: list, sources: bool) -> None:
    outputs = ", ".join(f"{names(v)} : {v.type()}" for v in node.outputs())
    attrs = ""
    if node.attributeNames():
        attrs = "[" + ", ".join(f"{k}={_attr(node[k])}" for k in node.attributeNames()) + "]"
    args = ", ".join(names(v) for v in node.inputs())
    text = f"{indent}{outputs + ' = ' if outputs else ''}{node.kind()}{attrs}({args})"
    notes = []
    if node.scopeName():
        notes.append(f"scope: {node.scopeName()}")
    if sources and node.sourceRange():
        notes.append(node.sourceRange())
    if notes:
        text += "  # " + "  # ".join(notes)
    lines.append(text)
    for i, block in enumerate(node.blocks()):
        params = ", ".join(f"{names(v)} : {v.type()}" for v in block.inputs())
        lines.append(f"{indent}  block{i}({params}):")
        _block_lines(block, names, indent + "    ", lines, sources)
        lines.append(f"{indent}    -> ({', '.join(names(v) for v in block.outputs())})")


def _attr(value) -> str:
    if isinstance(value, Tensor):
        return f"<Tensor {TensorType.of(value)}>"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (list, tuple)):
        inner = ", ".join(_attr(v) for v in value)
        if isinstance(value, list):
            return f"[{inner}]"
        return f"({inner}{',' if len(value) == 1 else ''})"
    return repr(value)
