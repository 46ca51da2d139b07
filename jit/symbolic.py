"""Sizes that remember where they came from, so traced graphs keep working for other sizes.

While a trace runs, ``x.shape``, ``x.size(d)`` and ``x.numel()`` of a traced tensor are
``SymInt``s: ints (every Python use works as before) that also carry a graph value
(``prim::size(%x, d)``). Integer arithmetic on them is recorded (``prim::mul``...), and when
one reaches an op argument the op node takes the value instead of a constant, so
``x.view(x.size(0), -1)`` replays with the new batch size. Anything else (comparisons,
``range``, ``int()``) sees a plain int: its value is baked in, as in PyTorch's tracer.
"""

from __future__ import annotations

import operator

from .prims import OPERATORS
from .types import IntType


class SymInt(int):
    """An int of a traced shape; ``_value`` is its graph value, ``_state`` its trace."""

    def __new__(cls, number: int, value, state):
        self = int.__new__(cls, number)
        self._value = value
        self._state = state
        return self

    def __repr__(self) -> str:
        return int.__repr__(int(self))

    def __pos__(self):
        return self

    def __neg__(self):
        return _unary(operator.neg, self)

    def __reduce__(self):  # a SymInt outside its trace is just its number
        return (int, (int(self),))


def _plain(x):
    return int(x) if isinstance(x, SymInt) else x


def _unary(fn, a):
    result = fn(int(a))
    return _record(fn, (a,), result)


def _record(fn, operands, result):
    """``result`` as a SymInt recording ``fn(*operands)`` in the live trace, or plain."""
    state = next((o._state for o in operands if isinstance(o, SymInt)), None)
    if (
        state is None
        or not state.recording()
        or type(result) is not int
        or not all(isinstance(o, int) for o in operands)
    ):
        return result
    inputs = [state.value_of(o) for o in operands]
    node = state.insert(OPERATORS[fn], inputs, IntType)
    return SymInt(result, node.output(), state)


def _binary(fn, reflected: bool):
    if reflected:

        def method(self, other):
            if not isinstance(other, int):
                return NotImplemented
            return _record(fn, (other, self), fn(_plain(other), int(self)))

    else:

        def method(self, other):
            if not isinstance(other, int):
                return getattr(int, f"__{fn.__name__.strip('_')}__")(int(self), other)
            return _record(fn, (self, other), fn(int(self), _plain(other)))

    return method


for _fn in (operator.add, operator.sub, operator.mul, operator.floordiv, operator.mod):
    _name = _fn.__name__.strip("_")
    setattr(SymInt, f"__{_name}__", _binary(_fn, False))
    setattr(SymInt, f"__r{_name}__", _binary(_fn, True))


def plain(value):
    """``value`` with SymInts replaced by ints, in lists and tuples too (what runners get)."""
    if value.__class__ is SymInt:
        return int(value)
    if isinstance(value, (list, tuple)) and any(item.__class__ is SymInt for item in value):
        items = [_plain(item) for item in value]
        return items if isinstance(value, list) else tuple(items)
    return value
