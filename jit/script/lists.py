"""List methods in scripted code (``append``, ``insert``, ``extend``, ``pop``, ``reverse``,
``sort``, ``remove``, ``clear``, ``copy``, ``index``, ``count``), ``xs[i] = v``, ``d[k] = v``,
``del xs[i]`` and ``sum``/``min``/``max`` of a list, as TorchScript has them.

Lists and dicts are references, as in Python and TorchScript: a method that mutates a list is
an in-place node (``prim::list_<name>_``, jit/mutation.py) on whatever expression gives the list
(``xs[0].append(v)``, ``d["k"].append(v)``, ``self.names.append(v)``), so every name and
container holding it sees the update; nothing is rebound.
"""

from __future__ import annotations

import ast

from .. import types as T

# method -> (mutates, result): result "elem", "int", "list", or None (the call is None).
METHODS = {
    "append": (True, None),
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
_CHECKED = ("append", "insert", "extend", "remove", "index", "count")


class Lists:
    def list_method(self, value, name: str, args, kwargs, node):
        if kwargs:
            raise self.source.not_supported(f"keyword arguments to list.{name}()", node)
        mutates, result = METHODS[name]
        kind = value.type()
        args = [self.materialize(a) for a in args]
        if name in _CHECKED:
            self.check_items(value, name, args, node)
        if name == "pop":
            index = args[0] if args else self.constant(-1)
            return self.prim("prim::list_pop_", [value, index], kind.elem)
        if mutates:
            self.graph.insert(f"prim::list_{name}_", [value, *args], num_outputs=0)
            return self.constant(None)
        return self.prim(
            f"prim::list_{name}", [value, *args], T.IntType if result == "int" else kind
        )

    def check_items(self, value, name: str, args, node) -> None:
        kind = value.type()
        want = {"insert": [T.IntType, kind.elem], "extend": [kind]}.get(name, [kind.elem])
        if len(args) != len(want) or not all(self.fits(a.type(), w) for a, w in zip(args, want)):
            given = ", ".join(a.type().annotation() for a in args)
            if name == "append" and len(args) == 1 and self.is_empty_list(value):
                raise self.source.error(
                    f"Could not append a value of type {given} to a list of "
                    f"{kind.elem.annotation()} (annotate the empty list: "
                    "ember.jit.annotate(List[...], []))",
                    node,
                )
            raise self.source.error(
                f"list.{name}() of a {kind.annotation()} got arguments ({given})", node
            )

    def set_item(self, container, target, value) -> None:
        """``xs[i] = v`` / ``d[k] = v``: written into the list or dict in place."""
        kind = container.type()
        if isinstance(kind, T.ListType):
            key = self.coerce(self.value(target.slice), T.IntType, target)
            item = self.coerce(self.materialize(value), kind.elem, target)
            kind_ = "prim::list_set_"
        else:
            key = self.coerce(self.value(target.slice), kind.key, target)
            item = self.coerce(self.materialize(value), kind.value, target)
            kind_ = "prim::dict_set_"
        self.graph.insert(kind_, [container, key, item], num_outputs=0)

    def delete_item(self, target) -> None:
        """``del xs[i]`` / ``del d[k]`` / ``del xs[i][j]``: the item is removed in place."""
        if isinstance(target.slice, ast.Slice):
            raise self.source.error(
                "del statements only support deletion at a single index, slicing is not "
                "supported (see https://github.com/pytorch/pytorch/issues/31430)",
                target,
            )
        current = self.value(target.value)
        kind = current.type()
        if not isinstance(kind, (T.ListType, T.DictType)):
            raise self.source.not_supported(
                "del of items of containers other than lists and dicts", target
            )
        wanted = T.IntType if isinstance(kind, T.ListType) else kind.key
        key = self.coerce(self.value(target.slice), wanted, target)
        prim = "prim::list_delete_" if isinstance(kind, T.ListType) else "prim::dict_delete_"
        self.graph.insert(prim, [current, key], num_outputs=0)

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
