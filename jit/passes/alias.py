"""Which values may share memory with a tensor some node writes into.

Views (and ops that may return their input: ``reshape``, ``contiguous``) alias their first
input; in-place ops alias (and write) theirs. Passes that move, merge or precompute nodes leave
alone anything in a written alias group: its value depends on when it is read.
"""

from __future__ import annotations

from ..ops import is_view, mutates, prim_writes


class Aliases:
    """Union-find over the graph's values, and the groups some node writes into."""

    def __init__(self, graph):
        self.parent: dict = {}
        written = []
        for node in graph.all_nodes():
            op = node.op()
            if op is None and node.inputs() and prim_writes(node):
                written.append(node.inputsAt(0))  # x[idx] = v in scripted code
            if op is None or not node.inputs():
                continue
            first = node.inputsAt(0)
            if is_view(op) or mutates(op):
                for out in node.outputs():
                    self.union(out, first)
            if mutates(op):
                written.append(first)
        self.written = {self.find(v) for v in written}

    def find(self, value):
        parent = self.parent.get(value, value)
        if parent is value:
            return value
        root = self.find(parent)
        self.parent[value] = root
        return root

    def union(self, a, b) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra is not rb:
            self.parent[ra] = rb

    def is_written(self, value) -> bool:
        return self.find(value) in self.written

    def touches_written(self, node) -> bool:
        return any(self.is_written(v) for v in (*node.inputs(), *node.outputs()))
