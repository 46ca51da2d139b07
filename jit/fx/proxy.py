"""Proxies: stand-ins for values during symbolic tracing; what is done to them becomes nodes.

Operators become ``call_function`` nodes on ``operator`` functions, attribute reads become
``getattr`` (lazily: ``x.relu()`` is one ``call_method``), and anything that needs the value
itself (``if proxy:``, ``len(proxy)``, iterating without unpacking) raises ``TraceError``.
"""

from __future__ import annotations

import builtins
import dis
import inspect
import operator


class TraceError(ValueError):
    """Symbolic tracing met a Python construct that needs a value a proxy does not have."""


class Proxy:
    """A value of the program being traced: ``node`` in ``tracer``'s graph."""

    def __init__(self, node, tracer=None):
        self.node = node
        self.tracer = tracer

    def __repr__(self) -> str:
        return f"Proxy({self.node.name})"

    def __getattr__(self, name: str):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return Attribute(self, name)

    def __call__(self, *args, **kwargs):
        return self.tracer.create_proxy("call_method", "__call__", (self, *args), kwargs)

    def __iter__(self):
        frame = inspect.currentframe().f_back
        count = _unpack_count(frame)
        if count is not None:
            return iter(self[i] for i in range(count))
        raise TraceError(
            "Proxy object cannot be iterated. This can be attempted when the Proxy is used in a "
            "loop or as a *args or **kwargs function argument. See the ember.fx docs on "
            "symbolic tracing for details."
        )

    def __bool__(self):
        raise TraceError("symbolically traced variables cannot be used as inputs to control flow")

    def __len__(self):
        raise RuntimeError(
            "'len' is not supported in symbolic tracing by default. If you want this call to be "
            "recorded, please call ember.fx.wrap('len') at module scope"
        )

    def keys(self):
        return self.tracer.create_proxy("call_method", "keys", (self,), {})


def _unpack_count(frame) -> int | None:
    """``n`` when the caller is unpacking into n names (``a, b = proxy``): the instruction that
    asked for the iterator is UNPACK_SEQUENCE."""
    for instruction in dis.get_instructions(frame.f_code):
        if instruction.offset == frame.f_lasti:
            return instruction.argval if instruction.opname == "UNPACK_SEQUENCE" else None
    return None


class Attribute(Proxy):
    """``proxy.name``: becomes a node only when used as a value; called, a method call."""

    def __init__(self, root: Proxy, attr: str):
        self.root = root
        self.attr = attr
        self.tracer = root.tracer
        self._node = None

    @property
    def node(self):
        if self._node is None:
            self._node = self.tracer.create_proxy(
                "call_function", builtins.getattr, (self.root, self.attr), {}
            ).node
        return self._node

    def __call__(self, *args, **kwargs):
        return self.tracer.create_proxy("call_method", self.attr, (self.root, *args), kwargs)


_MAGIC = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul, "truediv": operator.truediv,
    "floordiv": operator.floordiv, "mod": operator.mod, "pow": operator.pow,
    "matmul": operator.matmul, "and": operator.and_, "or": operator.or_, "xor": operator.xor,
    "lshift": operator.lshift, "rshift": operator.rshift,
}  # fmt: skip
_COMPARE = {
    "eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le,
    "gt": operator.gt, "ge": operator.ge, "getitem": operator.getitem,
}  # fmt: skip
_UNARY = {"neg": operator.neg, "pos": operator.pos, "invert": operator.invert,
          "abs": operator.abs}  # fmt: skip


def _forward(fn):
    def method(self, *args):
        return self.tracer.create_proxy("call_function", fn, (self, *args), {})

    return method


def _reflected(fn):
    def method(self, other):
        return self.tracer.create_proxy("call_function", fn, (other, self), {})

    return method


for _name, _fn in {**_MAGIC, **_COMPARE, **_UNARY}.items():
    setattr(Proxy, f"__{_name}__", _forward(_fn))
for _name, _fn in _MAGIC.items():
    setattr(Proxy, f"__r{_name}__", _reflected(_fn))
Proxy.__hash__ = object.__hash__  # __eq__ records a node; proxies still key dicts


def has_proxy(value) -> bool:
    """Whether a proxy is anywhere in a nested argument structure."""
    if isinstance(value, Proxy):
        return True
    if isinstance(value, (list, tuple)):
        return any(has_proxy(v) for v in value)
    if isinstance(value, dict):
        return any(has_proxy(v) for v in value.values())
    if isinstance(value, slice):
        return has_proxy((value.start, value.stop, value.step))
    return False


def tracer_of(args, kwargs):
    for value in (*args, *kwargs.values()):
        found = _find(value)
        if found is not None:
            return found
    return None


def _find(value):
    if isinstance(value, Proxy):
        return value.tracer
    if isinstance(value, (list, tuple)):
        return next((t for t in map(_find, value) if t is not None), None)
    if isinstance(value, dict):
        return next((t for t in map(_find, value.values()) if t is not None), None)
    return None
