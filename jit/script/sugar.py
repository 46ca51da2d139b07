"""Compile-time values: what a name can stand for in scripted code besides a graph value.

TorchScript calls these sugared values: a Python module (``ember``, ``F``, ``math``), a
function, a submodule of ``self`` (its parameters become ``prim::GetAttr`` nodes, its calls
inline its forward), a bound method, a tensor method awaiting its call, ``range(...)``,
``enumerate``/``zip`` of iterables, and tuples holding any of these. They exist only while the
compiler runs; none reaches the graph.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir import Value


class Sugar:
    """Base of compile-time values."""

    def describe(self) -> str:
        return type(self).__name__


@dataclass
class PyObj(Sugar):
    """A Python object the source names (module, function, class, constant container)."""

    obj: object

    def describe(self) -> str:
        return repr(self.obj)


@dataclass
class ModuleRef(Sugar):
    """``self`` or one of its submodules; ``prefix`` is its qualified name ('' for the root)."""

    module: object
    prefix: str
    # a submodule read as a run-time value (prim::GetModule), where the compiled module
    # reassigns submodule slots: self.a, self.b = self.b, self.a reads both before either store
    runtime: Value | None = None
    # the interface the owner's class annotates this slot with (jit/script/interfaces.py):
    # calls go through the slot when the code runs
    interface: object = None

    def qualified(self, name: str) -> str:
        return f"{self.prefix}.{name}" if self.prefix else name

    def describe(self) -> str:
        return f"module {type(self.module).__name__}"


@dataclass
class MethodRef(Sugar):
    """``self.helper``: a method to compile (inline) when called."""

    owner: ModuleRef
    name: str
    fn: object


@dataclass
class TensorMethod(Sugar):
    """``x.view`` before its call."""

    value: Value
    name: str

    def describe(self) -> str:
        return f"the method or attribute '{self.name}' of a {self.value.type().annotation()}"


@dataclass
class Range(Sugar):
    start: Value
    stop: Value
    step: Value
    step_value: int


@dataclass
class Enumerate(Sugar):
    inner: object
    start: int = 0


@dataclass
class Zip(Sugar):
    items: list


@dataclass
class SugarTuple(Sugar):
    """A tuple some of whose items are compile-time values (unpacked or iterated statically)."""

    items: list
