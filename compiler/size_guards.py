"""Guards on comparisons of sizes: ``if x.size(0) > 3:`` in a dynamic capture.

A comparison of a traced size (``==``, ``<``..., or its truth) gives a plain bool, so the capture
took one branch. As PyTorch does, the graph stays size-generic and the entry is guarded on the
comparison's outcome: each call evaluates the comparison on its own sizes, and a call where the
outcome differs misses the entry and captures again (the other branch), with the failed guard
as the recompile reason. A compared size must be computed from the inputs' sizes (a
``prim::size`` of an input, constants, integer arithmetic); another (the size of an
intermediate) is a baked size as before: every size specialised from then on. An op that splits
a dynamic input dim (``split``, ``chunk``, ``unbind``: size_rules.counted) guards the entry on
its number of outputs the same way (``outputs_count``).
"""

from __future__ import annotations

import operator

import ember
from ember.jit.prims import PRIMS

COMPARING = {
    "__eq__": (operator.eq, "=="), "__ne__": (operator.ne, "!="), "__lt__": (operator.lt, "<"),
    "__le__": (operator.le, "<="), "__gt__": (operator.gt, ">"), "__ge__": (operator.ge, ">="),
    "__bool__": (None, ""),
}  # fmt: skip
ARITHMETIC = frozenset(
    ("prim::add", "prim::sub", "prim::mul", "prim::floordiv", "prim::mod", "prim::neg")
)


class SizeGuards:
    """The comparisons an entry assumed; ``self(tensors)`` is whether they all still hold."""

    def __init__(self, checks: list):
        self.checks = checks  # (fn(tensors) -> bool, text of what held, where)

    def __call__(self, tensors) -> bool:
        return all(check(tensors) for check, _text, _where in self.checks)

    def failure(self, tensors) -> str | None:
        for check, text, where in self.checks:
            if not check(tensors):
                return f"{text}  # {where}"
        return None

    def describe(self) -> list:
        return [text for _check, text, _where in self.checks]


def read(name, size, other, outcome, where, state):
    """A comparison as the capture sees it, made evaluable at once (the trace's dead-code
    pass later drops the ``prim::size`` nodes nothing reads): ``(check, text, where)``, or a
    baked-size line when it cannot be guarded."""
    inputs = list(state.graph.inputs())
    left = _evaluator(size, inputs)
    right = _evaluator(other, inputs) if hasattr(other, "_value") else (other, repr(other))
    if left is None or right is None:
        return f"{name} of a size in {where}"
    text = _Text(_text(name, left, right, outcome), inputs)
    return _check(name, left[0], right[0], outcome), text, where


def outputs_count(counted: tuple, inputs: list):
    """A guard on the number of outputs of an op that splits a dynamic input dim
    (size_rules.counted's ``(input index, dim, op, arguments, count, where)``): the op's own
    rule, run on a meta tensor of the call's size."""
    k, d, op, args, count, where = counted
    empty = ember.empty

    def check(ts) -> bool:
        return len(op(empty((ts[k]._shape[d],), device="meta"), *args)) == count

    shown = "".join(f", {a!r}" for a in args)
    return check, _Text(f"len({op.name}({{{k}}}.size()[{d}]{shown})) == {count}", inputs), where


def build(compares: list):
    """``(SizeGuards or None, baked-size lines)`` from the capture's ``read`` results."""
    checks = [c for c in compares if not isinstance(c, str)]
    baked = [c for c in compares if isinstance(c, str)]
    return (SizeGuards(checks) if checks else None), baked


class _Text:
    """A guard's text, with the inputs' names as the graph has them when it is printed (the
    capture names its inputs after the function's parameters once it is done)."""

    def __init__(self, template: str, inputs: list):
        self.template, self.inputs = template, inputs

    def __str__(self) -> str:
        return self.template.format(*(v.debugName() for v in self.inputs))


def dynamic(size, state, dims: dict) -> bool:
    """Whether traced ``size`` depends on a dynamic dim (``{graph input index: dims}``); the
    size of an intermediate counts as dynamic (its shape rule may read one)."""
    value = getattr(size, "_value", None)
    return value is not None and _depends(value, list(state.graph.inputs()), dims)


def _depends(value, inputs, dims) -> bool:
    node = value.node()
    kind = node.kind()
    if kind == "prim::Constant":
        return False
    if kind == "prim::size" and len(node.inputs()) == 2 and node.inputsAt(0) in inputs:
        dim = node.inputsAt(1).node()
        if dim.kind() == "prim::Constant" and type(dim["value"]) is int:
            rank = len(node.inputsAt(0).type().sizes() or ())
            d = dim["value"] % rank if rank else dim["value"]
            return d in dims.get(inputs.index(node.inputsAt(0)), ())
    if kind in ARITHMETIC:
        return any(_depends(v, inputs, dims) for v in node.inputs())
    return True


def _check(name, left, right, outcome):
    op = COMPARING[name][0]
    if op is None:
        return lambda ts: bool(left(ts)) is outcome
    if callable(right):
        return lambda ts: op(left(ts), right(ts)) is outcome
    return lambda ts: op(left(ts), right) is outcome


def _text(name, left, right, outcome) -> str:
    if name == "__bool__":
        return f"{left[1]} != 0" if outcome else f"{left[1]} == 0"
    symbol = COMPARING[name][1]
    text = f"{left[1]} {symbol} {right[1]}"
    return text if outcome else f"not {text}"


def _evaluator(size, inputs):
    """``(fn(tensors) -> int, text)`` computing a traced size from the call's inputs, or None."""
    value = getattr(size, "_value", None)
    return None if value is None else _of(value, inputs)


def _of(value, inputs):
    node = value.node()
    kind = node.kind()
    if kind == "prim::Constant" and type(node["value"]) is int:
        number = node["value"]
        return (lambda ts: number), repr(number)
    if kind == "prim::size" and len(node.inputs()) == 2 and node.inputsAt(0) in inputs:
        dim = node.inputsAt(1).node()
        if dim.kind() != "prim::Constant" or type(dim["value"]) is not int:
            return None
        k, d = inputs.index(node.inputsAt(0)), dim["value"]
        return (lambda ts: ts[k]._shape[d]), f"{{{k}}}.size()[{d}]"  # named when printed
    if kind in ARITHMETIC:
        operands = [_of(v, inputs) for v in node.inputs()]
        if any(o is None for o in operands):
            return None
        run = PRIMS[kind].run
        fns = [o[0] for o in operands]
        symbol = {"prim::add": "+", "prim::sub": "-", "prim::mul": "*", "prim::floordiv": "//",
                  "prim::mod": "%", "prim::neg": "-"}[kind]  # fmt: skip
        text = (
            f"-{operands[0][1]}"
            if kind == "prim::neg"
            else f" {symbol} ".join(o[1] for o in operands)
        )
        return (lambda ts: run(*(f(ts) for f in fns))), f"({text})"
    return None
