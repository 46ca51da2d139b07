"""ember.fx nodes: one operation of a Python-level graph, as ``torch.fx.Node``.

``op`` is one of ``placeholder``, ``get_attr``, ``call_function``, ``call_method``,
``call_module``, ``output``; ``target`` is what it calls (a function, a method or module name,
an attribute path); ``args``/``kwargs`` hold other nodes and constants, nested in tuples, lists,
dicts and slices. Every node knows its ``users``, so rewrites (``replace_all_uses_with``,
``Graph.erase_node``) keep the graph consistent.
"""

from __future__ import annotations

import builtins
import operator
import sys

OPCODES = ("placeholder", "get_attr", "call_function", "call_method", "call_module", "output")

# Functions whose effects make a node live even when nothing uses its value.
_IMPURE = {operator.setitem, print}


def map_aggregate(a, fn):
    """Apply ``fn`` to every leaf of a nested tuple/list/dict/slice structure."""
    if isinstance(a, tuple):
        mapped = tuple(map_aggregate(elem, fn) for elem in a)
        return type(a)(*mapped) if hasattr(a, "_fields") else mapped
    if isinstance(a, list):
        return [map_aggregate(elem, fn) for elem in a]
    if isinstance(a, dict):
        return {k: map_aggregate(v, fn) for k, v in a.items()}
    if isinstance(a, slice):
        return slice(
            map_aggregate(a.start, fn), map_aggregate(a.stop, fn), map_aggregate(a.step, fn)
        )
    return fn(a)


def map_arg(a, fn):
    """Apply ``fn`` to every Node in a nested argument structure."""
    return map_aggregate(a, lambda x: fn(x) if isinstance(x, Node) else x)


class Node:
    """A node of an ``ember.fx.Graph``."""

    def __init__(self, graph, name: str, op: str, target, args: tuple, kwargs: dict,
                 return_type=None):  # fmt: skip
        if op not in OPCODES:
            raise ValueError(f"invalid op {op!r}: expected one of {OPCODES}")
        where = f"Node [graph = {graph}, name = '{name}'] target {target} has type {type(target)}"
        named = op in ("call_method", "call_module", "get_attr", "placeholder")
        if named and not isinstance(target, str):
            raise ValueError(f"{where} but a {op} node requires a string target")
        if op == "call_function" and not callable(target):
            raise ValueError(f"{where} but a Callable is expected")
        self.graph = graph
        self.name = name
        self.op = op
        self.target = target
        self.type = return_type
        self.users: dict = {}
        self.meta: dict = {}
        self._input_nodes: dict = {}
        self._args: tuple = ()
        self._kwargs: dict = {}
        self._prev = self._next = self
        self._erased = False
        self._update_args_kwargs(args, kwargs)

    # ---- list links (the graph keeps nodes in a circular list with a sentinel) -------------
    @property
    def next(self) -> Node:
        return self._next

    @property
    def prev(self) -> Node:
        return self._prev

    def prepend(self, x: Node) -> None:
        """Put ``x`` just before this node."""
        if x is self:
            return
        x._remove_from_list()
        p = self._prev
        p._next, x._prev = x, p
        x._next, self._prev = self, x

    def append(self, x: Node) -> None:
        """Put ``x`` just after this node."""
        self._next.prepend(x)

    def _remove_from_list(self) -> None:
        p, n = self._prev, self._next
        p._next, n._prev = n, p
        self._prev = self._next = self

    # ---- arguments ---------------------------------------------------------------------------
    @property
    def args(self) -> tuple:
        return self._args

    @args.setter
    def args(self, value) -> None:
        self._update_args_kwargs(value, self._kwargs)

    @property
    def kwargs(self) -> dict:
        return self._kwargs

    @kwargs.setter
    def kwargs(self, value) -> None:
        self._update_args_kwargs(self._args, value)

    @property
    def all_input_nodes(self) -> list[Node]:
        return list(self._input_nodes)

    def update_arg(self, idx: int, arg) -> None:
        args = list(self._args)
        args[idx] = arg
        self.args = tuple(args)

    def insert_arg(self, idx: int, arg) -> None:
        args = list(self._args)
        args.insert(idx, arg)
        self.args = tuple(args)

    def update_kwarg(self, key: str, arg) -> None:
        self.kwargs = {**self._kwargs, key: arg}

    def _update_args_kwargs(self, args, kwargs) -> None:
        for old in self._input_nodes:
            old.users.pop(self, None)
        self._input_nodes = {}
        self._args = tuple(map_arg(tuple(args), self._note_input))
        self._kwargs = dict(map_arg(dict(kwargs), self._note_input))

    def _note_input(self, node: Node) -> Node:
        if node.graph is not self.graph:
            raise RuntimeError(f"argument {node} of {self} belongs to another graph")
        self._input_nodes.setdefault(node)
        node.users.setdefault(self)
        return node

    def replace_all_uses_with(self, replace_with: Node, delete_user_cb=lambda user: True, *,
                              propagate_meta: bool = False) -> list[Node]:  # fmt: skip
        """Make every user of this node use ``replace_with`` instead; returns the users changed
        (those ``delete_user_cb`` accepts)."""
        if propagate_meta:
            for key, value in self.meta.items():
                replace_with.meta.setdefault(key, value)
        changed = [user for user in list(self.users) if delete_user_cb(user)]
        for user in changed:
            user.replace_input_with(self, replace_with)
        return changed

    def replace_input_with(self, old_input: Node, new_input: Node) -> None:
        swap = lambda n: new_input if n is old_input else n  # noqa: E731
        self._update_args_kwargs(map_arg(self._args, swap), map_arg(self._kwargs, swap))

    def is_impure(self) -> bool:
        if self.op in ("placeholder", "output"):
            return True
        if self.op == "call_function":
            return self.target in _IMPURE or getattr(self.target, "mutates", False)
        if self.op == "call_method":  # in-place methods: add_, copy_...
            return isinstance(self.target, str) and self.target.endswith("_")
        return False

    # ---- text --------------------------------------------------------------------------------
    def __repr__(self) -> str:
        return self.name

    def format_node(self) -> str:
        """The line ``str(graph)`` prints for this node."""
        if self.op == "output":
            return f"return {_format(self.args[0])}"
        users = f"[num_users={len(self.users)}]"
        head = f"%{self.name} : {users} = {self.op}[target={_target_name(self.target)}]"
        if self.op == "placeholder":
            return head + (f"(default={self.args[0]})" if self.args else "")
        if self.op == "get_attr":
            return head
        return head + f"(args = {_format_arg(self.args)}, kwargs = {_format_arg(self.kwargs)})"


def _format(value) -> str:
    return str(map_arg(value, lambda n: _Raw(n.name)))


class _Raw:
    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return self.text


def _format_arg(value) -> str:
    if isinstance(value, Node):
        return f"%{value.name}"
    if isinstance(value, tuple):
        items = ", ".join(_format_arg(v) for v in value)
        return f"({items}{',' if len(value) == 1 else ''})"
    if isinstance(value, list):
        return "[" + ", ".join(_format_arg(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_format_arg(v)}" for k, v in value.items()) + "}"
    return str(value)


def _target_name(target) -> str:
    if isinstance(target, str):
        return target
    return qualified_name(target)


def qualified_name(fn) -> str:
    """``operator.add``, ``ember.relu``, ``ember.nn.functional.gelu``, ``ember.ops.add``."""
    op = getattr(fn, "schema", None)
    if op is not None and hasattr(fn, "runner"):  # an Op of the table
        return f"ember.ops.{fn.name.replace('::', '.')}"
    if getattr(fn, "__module__", None) == "_operator" or fn in vars(operator).values():
        return f"operator.{fn.__name__}"
    if fn in vars(builtins).values():
        return f"builtins.{fn.__name__}"
    module = getattr(fn, "__module__", None) or "__main__"
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", repr(fn))
    return f"{_shortest_home(module, name, fn)}.{name}"


def _shortest_home(module: str, name: str, fn) -> str:
    """The shortest package that exports ``fn`` under ``name``: ``ember.nn.functional`` rather
    than ``ember.nn.functional.activation``."""
    parts = module.split(".")
    for end in range(1, len(parts)):
        package = sys.modules.get(".".join(parts[:end]))
        if package is not None and getattr(package, name, None) is fn:
            return ".".join(parts[:end])
    return module
