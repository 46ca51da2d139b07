"""Forward-mode AD (``ember.autograd.forward_ad``): dual tensors and the forward-AD layer.

A dual tensor carries a tangent per level in ``t.__dict__["_fw"]`` (``{level: tangent}``), always
on a *physical* tensor: ``make_dual`` of a BatchedTensor puts the tangent on the tensor it wraps,
so vmap never needs to know about tangents. The forward-AD layer (priority 150: below vmap, which
hands it physical ops, above autograd, which records what the JVP rules compute, so reverse over
forward works) takes any op with a tangent at an open level: it runs the op below with that level
*suspended*, computes the output's tangent with the op's JVP rule (autograd/jvp_rules.py, beside
the VJP formulas) also with the level suspended, and attaches it. A tangent may itself be
batched when its primal is not (``jacfwd`` maps over tangents); the ops of the JVP rules then go
through vmap. Suspension is what makes nesting work: ops inside see only the other levels, so
``jvp`` of ``jvp`` (and of ``grad``) propagates each level once. Backward formulas run on saved
dual tensors, so forward-over-reverse (``jacfwd(jacrev(f))``) works too.

``dual_level`` is one level at a time, as in PyTorch; ``ember.func.jvp`` nests its own.
"""

from __future__ import annotations

import threading
import weakref
from typing import NamedTuple

from ember._tensor import Tensor

from ..dispatcher.layers import STACK, Layer
from .batched import BatchedTensor, level_of, to_physical, wrap, wrap_at


class _State(threading.local):
    def __init__(self):
        self.levels: list = []  # active level ids, innermost last
        self.public = 0  # how many of them came from enter_dual_level
        self.open: frozenset = frozenset()  # active and not suspended
        # level -> {id: weakref} of the tensors with a tangent there (not a WeakSet: tensors
        # compare elementwise)
        self.registry: dict = {}


STATE = _State()


class suspended:  # noqa: N801 - used like a function
    """Within the block, tangents of ``level`` are not propagated (the layer's own work)."""

    __slots__ = ("level", "was_open")

    def __init__(self, level: int):
        self.level = level

    def __enter__(self):
        self.was_open = self.level in STATE.open
        if self.was_open:
            STATE.open = STATE.open - {self.level}
        return self

    def __exit__(self, *exc):
        if self.was_open and self.level in STATE.levels:
            STATE.open = STATE.open | {self.level}


def enter_level(public: bool = False) -> int:
    """A new forward-AD level (installs the layer with the first one)."""
    if public and STATE.public:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    level = len(STATE.levels)
    if not STATE.levels:
        STACK.install(LAYER)
    STATE.levels.append(level)
    STATE.public += public
    STATE.registry[level] = {}
    STATE.open = STATE.open | {level}
    return level


def exit_level(level: int, public: bool = False) -> None:
    """Leave ``level`` (the innermost): every tangent recorded at it is dropped."""
    if not STATE.levels or STATE.levels[-1] != level:
        raise RuntimeError(
            "Trying to exit a forward AD level that was not the last one that was created. This "
            "is not supported."
        )
    STATE.levels.pop()
    STATE.public -= public
    STATE.open = STATE.open - {level}
    for ref in STATE.registry.pop(level, {}).values():
        t = ref()
        tangents = None if t is None else t.__dict__.get("_fw")
        if tangents is not None:
            tangents.pop(level, None)
            if not tangents:
                del t.__dict__["_fw"]
    if not STATE.levels:
        STACK.remove(LAYER)


def current_level() -> int:
    return STATE.levels[-1] if STATE.levels else -1


def tangent_of(t, level: int):
    tangents = t.__dict__.get("_fw") if isinstance(t, Tensor) else None
    return None if tangents is None else tangents.get(level)


def set_tangent(t: Tensor, level: int, tangent) -> None:
    tangents = t.__dict__.get("_fw")
    if tangents is None:
        tangents = t.__dict__["_fw"] = {}
    tangents[level] = tangent
    STATE.registry[level][id(t)] = weakref.ref(t)


def copy_tangents(source: Tensor, target: Tensor) -> None:
    """Give ``target`` every tangent ``source`` has (a fresh leaf standing for ``source``)."""
    for level, tangent in (source.__dict__.get("_fw") or {}).items():
        set_tangent(target, level, tangent)


# ---- the public API ---------------------------------------------------------------------------
def enter_dual_level() -> int:
    """Enter a new forward grad level (one at a time); returns its number."""
    return enter_level(public=True)


def exit_dual_level(*, level=None) -> None:
    """Exit the forward grad level ``level`` (the current one): its tangents are deleted."""
    exit_level(current_level() if level is None else level, public=True)


class dual_level:  # noqa: N801 - PyTorch's name
    """Context manager (and decorator) for forward AD: a level for ``make_dual``/``unpack_dual``.

    Example:
        >>> with forward_ad.dual_level():
        ...     x = forward_ad.make_dual(ember.ones(3), ember.ones(3))
        ...     tangent = forward_ad.unpack_dual((x * x).sum()).tangent
    """

    def __enter__(self) -> int:
        self.level = enter_dual_level()
        return self.level

    def __exit__(self, *exc):
        exit_dual_level(level=self.level)
        return False

    def __call__(self, fn):
        import functools

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with dual_level():
                return fn(*args, **kwargs)

        return wrapper


def make_dual(tensor: Tensor, tangent: Tensor, *, level=None) -> Tensor:
    """A tensor aliasing ``tensor`` that carries ``tangent`` for forward AD at ``level``.

    Backward differentiable: the alias is a view of ``tensor`` in the autograd graph.
    """
    level = current_level() if level is None else level
    if level < 0 or level not in STATE.levels:
        raise RuntimeError(
            "Trying to create a dual Tensor for forward AD but no level exists, make sure to "
            "enter_dual_level() first."
        )
    if not (tensor.is_floating_point() or tensor.is_complex()):
        raise ValueError(
            f"Expected primal to be floating point or complex, but got: {tensor.dtype}"
        )
    if not (tangent.is_floating_point() or tangent.is_complex()):
        raise ValueError(
            f"Expected tangent to be floating point or complex, but got: {tangent.dtype}"
        )
    if tuple(tangent.shape) != tuple(tensor.shape):
        raise RuntimeError(
            "Trying to set a forward gradient that has a different size than that of the "
            "original Tensor, this is not supported. Tensor is of size "
            f"{list(tensor.shape)} while the given forward gradient is of size "
            f"{list(tangent.shape)}."
        )
    if tensor.__class__ is BatchedTensor:  # the tangent goes on the physical tensor
        size = level_of(tensor._level).batch_size
        inner = make_dual(tensor._value, to_physical(tangent, tensor._level, size), level=level)
        return wrap(inner, tensor._level)
    if tangent_of(tensor, level) is not None:
        raise RuntimeError(
            "Making a dual Tensor based on a Tensor that already has a forward gradient at the "
            f"same level {level} is not supported."
        )
    with suspended(level):
        dual = tensor.view_as(tensor)
    if tangent.dtype is not tensor.dtype and not (tangent.is_complex() and not tensor.is_complex()):
        tangent = tangent.to(tensor.dtype)  # PyTorch keeps a complex tangent of a real primal
    set_tangent(dual, level, tangent)
    return dual


class UnpackedDualTensor(NamedTuple):
    """``(primal, tangent)`` of a dual tensor (``tangent`` None when it has none)."""

    primal: Tensor
    tangent: Tensor | None


def unpack_dual(tensor: Tensor, *, level=None) -> UnpackedDualTensor:
    """The primal (a view of ``tensor`` without the tangent) and the tangent at ``level``."""
    level = current_level() if level is None else level
    if level < 0:
        return UnpackedDualTensor(tensor, None)
    if tensor.__class__ is BatchedTensor:
        primal, tangent = unpack_dual(tensor._value, level=level)
        if tangent is not None:
            tangent = wrap_at(tangent, tensor._level)
        return UnpackedDualTensor(wrap(primal, tensor._level), tangent)
    tangent = tangent_of(tensor, level)
    if tangent is None:
        return UnpackedDualTensor(tensor, None)
    with suspended(level):
        primal = tensor.view_as(tensor)
    return UnpackedDualTensor(primal, tangent)


# ---- the layer --------------------------------------------------------------------------------
class ForwardADLayer(Layer):
    name = "forward_ad"
    priority = 150

    def wants(self, op, args) -> bool:
        open_levels = STATE.open
        if not open_levels:
            return False
        for a in args:
            if isinstance(a, Tensor):
                tangents = a.__dict__.get("_fw")
                if tangents and not open_levels.isdisjoint(tangents):
                    return True
            elif a.__class__ is list or a.__class__ is tuple:
                for item in a:
                    if isinstance(item, Tensor):
                        tangents = item.__dict__.get("_fw")
                        if tangents and not open_levels.isdisjoint(tangents):
                            return True
        return False

    def handle(self, op, args):
        from .jvp_rules import run_with_tangents

        return run_with_tangents(self, op, args, self._level(args))

    @staticmethod
    def _level(args) -> int:
        found = -1
        for a in args:
            items = a if (a.__class__ is list or a.__class__ is tuple) else (a,)
            for item in items:
                if isinstance(item, Tensor):
                    for level in item.__dict__.get("_fw") or ():
                        if level in STATE.open and level > found:
                            found = level
        return found


LAYER = ForwardADLayer()

__all__ = [
    "UnpackedDualTensor",
    "dual_level",
    "enter_dual_level",
    "exit_dual_level",
    "make_dual",
    "unpack_dual",
]
