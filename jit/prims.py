"""The ``prim::`` vocabulary: what graph nodes that are not op-table ops mean.

One record per kind says how to evaluate it (constant folding), how to write it in generated
Python (``jit.codegen``), which attributes it carries (the serializer checks them) and whether it
has effects. Control flow (``prim::If``, ``prim::Loop``) and attribute reads (``prim::GetAttr``)
are written by the code generator itself; their records only describe them.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Prim:
    """One ``prim::`` kind.

    Attributes:
        run: evaluates the node from its input values (None: not foldable).
        code: the Python expression, given the input expressions (None: codegen special-cases).
        attrs: attribute names the node must carry.
        effects: kept by dead-code elimination even when unused.
        outputs: the fixed number of outputs, or None when it varies (unpacks, If, Loop).
    """

    run: Callable | None
    code: Callable | None
    attrs: tuple = ()
    effects: bool = False
    outputs: int | None = 1
    doc: str = ""
    extra: dict = field(default_factory=dict)


def _infix(symbol: str):
    return lambda a, b: f"({a} {symbol} {b})"


def _call(name: str):
    return lambda *args: f"{name}({', '.join(args)})"


def _sequence(open_: str, close: str):
    def code(*items):
        if open_ == "(" and len(items) == 1:
            return f"({items[0]},)"
        return f"{open_}{', '.join(items)}{close}"

    return code


def _dict_pairs(*items):
    pairs = ", ".join(f"{k}: {v}" for k, v in zip(items[::2], items[1::2]))
    return "{" + pairs + "}"


def _raise(message):
    raise RuntimeError(message)


_BINARY = {
    "add": (operator.add, "+"),
    "sub": (operator.sub, "-"),
    "mul": (operator.mul, "*"),
    "floordiv": (operator.floordiv, "//"),
    "truediv": (operator.truediv, "/"),
    "mod": (operator.mod, "%"),
    "pow": (operator.pow, "**"),
    "eq": (operator.eq, "=="),
    "ne": (operator.ne, "!="),
    "lt": (operator.lt, "<"),
    "le": (operator.le, "<="),
    "gt": (operator.gt, ">"),
    "ge": (operator.ge, ">="),
    "and": (lambda a, b: a and b, "and"),
    "or": (lambda a, b: a or b, "or"),
}

PRIMS: dict[str, Prim] = {
    "prim::Constant": Prim(None, None, attrs=("value",), doc="a constant value"),
    "prim::GetAttr": Prim(None, None, attrs=("name",), doc="a parameter or buffer, by its name"),
    "prim::ListConstruct": Prim(lambda *xs: list(xs), _sequence("[", "]")),
    "prim::TupleConstruct": Prim(lambda *xs: tuple(xs), _sequence("(", ")")),
    "prim::DictConstruct": Prim(lambda *xs: dict(zip(xs[::2], xs[1::2])), _dict_pairs),
    "prim::ListUnpack": Prim(lambda x: tuple(x), None, outputs=None),
    "prim::TupleUnpack": Prim(lambda x: tuple(x), None, outputs=None),
    "prim::TupleIndex": Prim(operator.getitem, lambda x, i: f"{x}[{i}]"),
    "prim::ListIndex": Prim(operator.getitem, lambda x, i: f"{x}[{i}]"),
    "prim::DictIndex": Prim(operator.getitem, lambda x, k: f"{x}[{k}]"),
    "prim::size": Prim(lambda t, d: t.size(d), lambda t, d: f"{t}.size({d})"),
    "prim::dim": Prim(lambda t: t.dim(), lambda t: f"{t}.dim()"),
    "prim::numel": Prim(lambda t: t.numel(), lambda t: f"{t}.numel()"),
    "prim::dtype": Prim(lambda t: t.dtype, lambda t: f"{t}.dtype"),
    "prim::device": Prim(lambda t: t.device, lambda t: f"{t}.device"),
    "prim::neg": Prim(operator.neg, lambda a: f"(-{a})"),
    "prim::not": Prim(operator.not_, lambda a: f"(not {a})"),
    "prim::int": Prim(int, _call("int")),
    "prim::float": Prim(float, _call("float")),
    "prim::bool": Prim(bool, _call("bool")),
    "prim::min": Prim(min, _call("min")),
    "prim::max": Prim(max, _call("max")),
    "prim::If": Prim(None, None, outputs=None, doc="if cond: block0 else: block1"),
    "prim::Loop": Prim(None, None, outputs=None, doc="for i < max_trip while cond: block0"),
    "prim::RaiseException": Prim(
        None, lambda msg: f"_raise({msg})", effects=True, outputs=0, extra={"run": _raise}
    ),
}
for _name, (_fn, _symbol) in _BINARY.items():
    PRIMS[f"prim::{_name}"] = Prim(_fn, _infix(_symbol))

# Python operators -> prim kinds, for recording arithmetic on traced sizes (jit.symbolic).
OPERATORS = {fn: f"prim::{name}" for name, (fn, _symbol) in _BINARY.items()}
OPERATORS[operator.neg] = "prim::neg"
