"""List methods in scripted code (``insert``, ``extend``, ``pop``, ``reverse``, ``sort``,
``remove``, ``clear``, ``copy``, ``index``, ``count``), ``xs[i] = v``, and ``sum``/``min``/
``max`` of a list, as TorchScript has them.

Lists are values in the graph (see docs/jit.md): a method that mutates the list computes the new
list (``prim::list_<name>``) and rebinds the variable (or the run-time attribute) it was called
on, as ``append`` does in ``containers.py``.
"""

from __future__ import annotations

import ast

from .. import types as T
from ..ir import Value

# method -> (mutates, result): result "elem", "int", "list", or None (the call is None).
METHODS = {
    "insert": (True, None),
    "extend": (True, None),
    "pop": (True, "elem"),
    "reverse": (True, None),
    "sort": (True, None),
    "remove": (True, None),
    "clear": (True, None),
    "copy": (False, "list"),
    "index": (False, "int"),
    "count": (False, "int"),
}


class Lists:
    def list_method(self, value, name: str, args, kwargs, node):
        if kwargs:
            raise self.source.not_supported(f"keyword arguments to list.{name}()", node)
        mutates, result = METHODS[name]
        kind = value.type()
        args = [self.materialize(a) for a in args]
        if name in ("insert", "remove", "index", "count") or name == "extend":
            self.check_items(kind, name, args, node)
        out = None
        if name == "pop":
            index = args[0] if args else self.constant(-1)
            out = self.prim("prim::ListIndex", [value, index], kind.elem)
            args = [index]
        elif result == "int":
            out = self.prim(f"prim::list_{name}", [value, *args], T.IntType)
        elif result == "list":
            out = self.prim(f"prim::list_{name}", [value, *args], kind)
        if mutates:
            owner = node.func.value
            if not isinstance(owner, (ast.Name, ast.Attribute)):
                raise self.source.not_supported(f"{name}() on a list that is not a variable", node)
            updated = self.prim(f"prim::list_{name}", [value, *args], kind)
            self.assign(owner, updated)
        return out if out is not None else self.constant(None)

    def check_items(self, kind, name: str, args, node) -> None:
        want = [kind.elem] if name != "insert" else [T.IntType, kind.elem]
        if name == "extend":
            want = [kind]
        if len(args) != len(want) or not all(self.fits(a.type(), w) for a, w in zip(args, want)):
            given = ", ".join(a.type().annotation() for a in args)
            raise self.source.error(
                f"list.{name}() of a {kind.annotation()} got arguments ({given})", node
            )

    def set_list_item(self, target, value) -> None:
        """``xs[i] = v`` on a list variable: rebinds ``xs`` to the updated list."""
        current = self.expr(target.value)
        kind = current.type()
        index = self.coerce(self.value(target.slice), T.IntType, target)
        item = self.coerce(self.materialize(value), kind.elem, target)
        self.assign(target.value, self.prim("prim::list_set", [current, index, item], kind))

    def delete_item(self, target) -> None:
        """``del xs[i]`` / ``del d[k]`` / ``del xs[i][j]`` on a variable: rebinds it to the
        container without the item (a nested container is written back into its owner)."""
        if isinstance(target.slice, ast.Slice):
            raise self.source.error(
                "del statements only support deletion at a single index, slicing is not "
                "supported (see https://github.com/pytorch/pytorch/issues/31430)",
                target,
            )
        current = self.expr(target.value)
        kind = current.type() if isinstance(current, Value) else None
        owner = isinstance(target.value, (ast.Name, ast.Subscript))
        if not owner or not isinstance(kind, (T.ListType, T.DictType)):
            raise self.source.not_supported(
                "del of items of containers other than variables", target
            )
        wanted = T.IntType if isinstance(kind, T.ListType) else kind.key
        key = self.coerce(self.value(target.slice), wanted, target)
        prim = "prim::list_delete" if isinstance(kind, T.ListType) else "prim::dict_delete"
        self.assign(target.value, self.prim(prim, [current, key], kind))

    def list_reduce(self, fn_name: str, value, node):
        """``sum(xs)`` / ``min(xs)`` / ``max(xs)`` of a list of numbers."""
        kind = value.type()
        if kind.elem not in (T.IntType, T.FloatType):
            raise self.source.error(
                f"{fn_name}() of a {kind.annotation()} isn't supported (lists of numbers)", node
            )
        return self.prim(f"prim::list_{fn_name}", [value], kind.elem)


def is_list_method(name: str) -> bool:
    return name in METHODS
