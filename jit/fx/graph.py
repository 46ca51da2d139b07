"""ember.fx.Graph: the nodes of a Python-level program, in order, as ``torch.fx.Graph``.

Nodes are kept in a circular list behind a sentinel; insertion happens at a movable point
(``inserting_before``/``inserting_after``). Names are unique Python identifiers derived from
targets (``relu``, ``relu_1``...; builtins such as ``sum`` get a suffix). ``python_code``
writes the program back as source (``jit.fx.codegen``).
"""

from __future__ import annotations

import builtins
import contextlib
import inspect
import keyword
import re

from .codegen import python_code
from .node import Node, map_arg, qualified_name


class _NodeList:
    def __init__(self, graph, reverse: bool = False):
        self.graph = graph
        self.reverse = reverse

    def __len__(self) -> int:
        return self.graph._len

    def __iter__(self):
        root = self.graph._root
        node = root._prev if self.reverse else root._next
        while node is not root:
            following = node._prev if self.reverse else node._next
            if not node._erased:
                yield node
            node = following

    def __reversed__(self):
        return iter(_NodeList(self.graph, not self.reverse))


def _sentinel(graph) -> Node:
    root = object.__new__(Node)
    root.graph, root.name, root.op, root.target = graph, "root", "root", None
    root.users, root._input_nodes, root._erased = {}, {}, False
    root._prev = root._next = root
    return root


class Graph:
    """A program of fx nodes. Build with ``placeholder``, ``call_function``... and ``output``."""

    def __init__(self, owning_module=None, tracer_cls=None, tracer_extras=None):
        self._root = _sentinel(self)
        self._insert = self._root.prepend
        self._len = 0
        self._names: set = set()
        self.owning_module = owning_module
        self._tracer_cls = tracer_cls

    @property
    def nodes(self) -> _NodeList:
        return _NodeList(self)

    # ---- names -------------------------------------------------------------------------------
    def _unique_name(self, candidate: str) -> str:
        base = re.sub(r"[^0-9a-zA-Z_]+", "_", candidate) or "_"
        if base[0].isdigit():
            base = f"_{base}"
        match = re.match(r"(.*)_(\d+)$", base)
        stem, n = (match.group(1), int(match.group(2))) if match else (base, 0)
        name = base
        while name in self._names or keyword.iskeyword(name) or hasattr(builtins, name):
            n += 1
            name = f"{stem}_{n}"
        self._names.add(name)
        return name

    def _name_for(self, op: str, target) -> str:
        if op in ("placeholder", "get_attr", "call_module", "call_method"):
            return target.replace(".", "_").lstrip("*")
        if op == "output":
            return "output"
        return qualified_name(target).rsplit(".", 1)[-1]

    # ---- building ----------------------------------------------------------------------------
    def create_node(self, op: str, target, args=None, kwargs=None, name=None, type_expr=None):
        name = self._unique_name(name or self._name_for(op, target))
        node = Node(self, name, op, target, tuple(args or ()), dict(kwargs or {}), type_expr)
        self._insert(node)
        self._len += 1
        return node

    def placeholder(self, name: str, type_expr=None, default_value=inspect.Signature.empty):
        args = () if default_value is inspect.Signature.empty else (default_value,)
        return self.create_node("placeholder", name, args, type_expr=type_expr)

    def get_attr(self, qualified_name: str, type_expr=None):
        return self.create_node("get_attr", qualified_name, type_expr=type_expr)

    def call_module(self, module_name: str, args=None, kwargs=None, type_expr=None):
        return self.create_node("call_module", module_name, args, kwargs, type_expr=type_expr)

    def call_method(self, method_name: str, args=None, kwargs=None, type_expr=None):
        return self.create_node("call_method", method_name, args, kwargs, type_expr=type_expr)

    def call_function(self, the_function, args=None, kwargs=None, type_expr=None):
        return self.create_node("call_function", the_function, args, kwargs, type_expr=type_expr)

    def output(self, result, type_expr=None):
        return self.create_node("output", "output", (result,), type_expr=type_expr)

    @contextlib.contextmanager
    def inserting_before(self, n: Node | None = None):
        """Insert new nodes before ``n`` (before the first node when None)."""
        saved = self._insert
        self._insert = (n or self._root._next).prepend
        try:
            yield
        finally:
            self._insert = saved

    @contextlib.contextmanager
    def inserting_after(self, n: Node | None = None):
        """Insert new nodes after ``n`` (and after each other); at the start when None."""
        saved = self._insert
        anchor = [n or self._root]

        def insert(node):
            anchor[0].append(node)
            anchor[0] = node

        self._insert = insert
        try:
            yield
        finally:
            self._insert = saved

    def erase_node(self, to_erase: Node) -> None:
        if to_erase.users:
            raise RuntimeError(
                f"Tried to erase Node {to_erase} but it still had {len(to_erase.users)} users in "
                f"the graph: {to_erase.users}!"
            )
        if to_erase.graph is not self:
            raise RuntimeError(f"Attempting to remove {to_erase} from wrong graph!")
        if to_erase._erased:
            return
        to_erase._remove_from_list()
        to_erase._erased = True
        self._len -= 1
        to_erase._update_args_kwargs((), {})

    def node_copy(self, node: Node, arg_transform=lambda x: x) -> Node:
        """A copy of ``node`` (from any graph) here, its inputs mapped by ``arg_transform``."""
        args = map_arg(node.args, arg_transform)
        kwargs = map_arg(node.kwargs, arg_transform)
        made = self.create_node(node.op, node.target, args, kwargs, node.name, node.type)
        made.meta = dict(node.meta)
        return made

    def graph_copy(self, g: Graph, val_map: dict, return_output_node: bool = False):
        """Copy the nodes of ``g`` (all but its output) here; ``val_map`` maps old to new
        nodes. Returns the copied output value."""
        for node in g.nodes:
            if node.op == "output":
                output = map_arg(node.args[0], lambda n: val_map[n])
                return (output, node) if return_output_node else output
            val_map[node] = self.node_copy(node, lambda n: val_map[n])
        return None

    def find_nodes(self, *, op: str, target=None) -> list[Node]:
        return [n for n in self.nodes if n.op == op and (target is None or n.target == target)]

    def eliminate_dead_code(self, is_impure_node=None) -> bool:
        """Erase nodes nothing uses and that have no effects; True when something went."""
        impure = is_impure_node or (lambda n: n.is_impure())
        changed = False
        for node in reversed(self.nodes):
            if not node.users and not impure(node):
                self.erase_node(node)
                changed = True
        return changed

    # ---- checks and text ---------------------------------------------------------------------
    def lint(self) -> None:
        """Check the graph: inputs defined before use, user lists consistent, unique names,
        one output at the end, targets that exist in the owning module."""
        from .lint import lint

        lint(self)

    def print_tabular(self) -> None:
        try:
            from tabulate import tabulate
        except ImportError:
            print(
                "`print_tabular` relies on the library `tabulate`, which could not be found on "
                "this machine. Run `pip install tabulate` to install the library."
            )
            raise
        rows = [[n.op, n.name, n.target, n.args, n.kwargs] for n in self.nodes]
        print(tabulate(rows, headers=["opcode", "name", "target", "args", "kwargs"]))

    def python_code(self, root_module: str = "self"):
        return python_code(self)

    def __str__(self) -> str:
        lines = ["graph():"] + [f"    {n.format_node()}" for n in self.nodes]
        return "\n".join(lines)
