"""Which values may share memory with a tensor some node writes into.

Views (and ops that may return their input: ``reshape``, ``contiguous``) alias their first
input; in-place ops alias (and write) theirs. Passes that move, merge or precompute nodes leave
alone anything in a written alias group: its value depends on when it is read.

Lists and dicts are references (``xs[0].append(v)`` writes a list that ``xs`` holds, ``ys = xs``
is the same list), so when a node writes into one, every value that may hold a container is
taken as written: no container is folded into a constant (each run must build its own) or
merged with another.
"""

from __future__ import annotations

from .. import types as T
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
        self.containers = any(holds_container(v.type()) for v in written)

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
        if self.containers and holds_container(value.type()):
            return True
        return self.find(value) in self.written

    def touches_container(self, node) -> bool:
        """Whether the node reads or makes a container while some node writes containers."""
        values = (*node.inputs(), *node.outputs())
        return self.containers and any(holds_container(v.type()) for v in values)

    def touches_written(self, node) -> bool:
        return any(self.is_written(v) for v in (*node.inputs(), *node.outputs()))


def holds_container(kind) -> bool:
    """Whether a value of type ``kind`` may be, or hold, a list or dict."""
    if isinstance(kind, (T.ListType, T.DictType)) or kind == T.AnyType:
        return True
    if isinstance(kind, (T.OptionalType,)):
        return holds_container(kind.elem)
    if isinstance(kind, (T.TupleType, T.UnionType)):
        return any(holds_container(e) for e in kind.elems)
    return False
