"""Strings in scripted code: f-strings and ``str.format`` (``prim::format``), ``str(x)``,
``+`` of strings and string methods (``prim::str_<name>``), as TorchScript has them."""

from __future__ import annotations

import ast

from .. import types as T
from ..scalars import STR_METHODS, format_, to_str

_RESULTS = {"str": T.StrType, "bool": T.BoolType, "int": T.IntType, "List[str]": None}


class Strings:
    def expr_JoinedStr(self, node, wanted=None):  # noqa: N802
        """``f"{a}-{b}"`` is ``"{}-{}".format(a, b)`` (TorchScript refuses format specs)."""
        pieces, args = [], []
        for part in node.values:
            if isinstance(part, ast.Constant):
                pieces.append(str(part.value).replace("{", "{{").replace("}", "}}"))
                continue
            if part.format_spec is not None or part.conversion != -1:
                raise self.source.not_supported("Don't support formatting in JoinedStr", node)
            pieces.append("{}")
            args.append(self.value(part.value))
        return self.format_values(self.constant("".join(pieces)), args)

    def format_values(self, fmt, args):
        values = [self.materialize(a) for a in args]
        if all(self.is_constant(v) for v in [fmt, *values]):
            return self.constant(format_(self.known(fmt), *(self.known(v) for v in values)))
        return self.prim("prim::format", [fmt, *values], T.StrType)

    def to_text(self, value):
        """``str(value)``."""
        value = self.materialize(value)
        if value.type() == T.StrType:
            return value
        if self.is_constant(value):
            return self.constant(to_str(self.known(value)))
        return self.prim("prim::str", [value], T.StrType)

    def str_method(self, value, name: str, args, kwargs, node):
        if kwargs:
            raise self.source.not_supported(f"keyword arguments to str.{name}()", node)
        if name == "format":
            return self.format_values(value, args)
        args = [self.materialize(a) for a in args]
        if name == "join":
            if len(args) != 1 or args[0].type() != T.ListType(T.StrType):
                raise self.source.error("str.join() expects one List[str] argument", node)
        else:
            for arg in args:
                if arg.type() not in (T.StrType, T.IntType, T.NoneType):
                    raise self.source.error(
                        f"str.{name}() got an argument of type {arg.type().annotation()}", node
                    )
        kind = _RESULTS[STR_METHODS[name]] or T.ListType(T.StrType)
        return self.prim(f"prim::str_{name}", [value, *args], kind)


def is_str_method(name: str) -> bool:
    return name == "format" or name in STR_METHODS
