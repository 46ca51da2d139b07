"""Running a function for its results' metadata only: every op it calls runs on the meta device
(sizes, strides and dtypes, no data, no kernels), so ``ember.cond`` can check the branch it does
not take, as PyTorch's fake-tensor trace of both branches does, without computing it.

A dispatch layer at priority 500 (above profiling, tracing, segments and vmap) turns each
tensor argument into a meta tensor of the same sizes, strides and dtype, and points factories
(``zeros``, ``randn``...) at the meta device, so nothing is allocated and no random generator
advances. It then continues below priority 201, past the modes: a capture must not record the
ops (they are not the program's), a segment must not defer them, and a profiler must not count
them; autocast (200) and the layers below still apply, so dtypes are those eager gives. Tensors
outside the function (a module's parameters) are converted at each use and never written: an
in-place op acts on the meta copy.
"""

from __future__ import annotations

import threading

from ember._tensor import Tensor
from ember.dispatcher.layers import STACK, Layer

_META = None  # ember.device("meta"), made on first use


class _BelowModes:
    """Where the meta layer continues: ``op.redispatch`` looks only at ``priority``."""

    priority = 201


_BELOW_MODES = _BelowModes()


class MetaLayer(Layer):
    name = "meta evaluation"
    priority = 500

    def __init__(self):
        self.thread = threading.get_ident()

    def wants(self, op, args) -> bool:
        return self.thread == threading.get_ident()

    def handle(self, op, args):
        args = tuple(_to_meta(a) for a in args)
        names = op.schema.args
        for i, arg in enumerate(names[: len(args)]):
            if arg.name == "device":  # a factory: make it on the meta device
                args = (*args[:i], _meta_device(), *args[i + 1 :])
        return op.redispatch(_BELOW_MODES, args)


def _meta_device():
    global _META
    if _META is None:
        from ember import device

        _META = device("meta")
    return _META


def _to_meta(value):
    if isinstance(value, Tensor):
        if value.device.type == "meta":
            return value
        from ember import empty_strided

        return empty_strided(value.shape, value.stride(), dtype=value.dtype, device=_meta_device())
    if isinstance(value, (list, tuple)) and any(isinstance(v, Tensor) for v in value):
        return type(value)(_to_meta(v) for v in value)
    return value


_ACTIVE = threading.local()


def active() -> bool:
    """Whether the calling code runs under ``run`` (its tensors are meta tensors)."""
    return getattr(_ACTIVE, "depth", 0) > 0


def run(fn, *args):
    """``fn(*args)`` with every op on the meta device; the result's tensors are meta tensors.
    Raises what ``fn`` raises there (a data read such as ``.item()`` cannot run on meta)."""
    from ember.jit.tracer import current

    if active():
        return fn(*args)
    layer = MetaLayer()
    state = current()
    saved = STACK.saved()
    STACK.install(layer)
    _ACTIVE.depth = getattr(_ACTIVE, "depth", 0) + 1
    if state is not None:
        state.suspended += 1  # the Python reads of a capture (sizes, data) are not the program's
    try:
        return fn(*args)
    finally:
        if state is not None:
            state.suspended -= 1
        _ACTIVE.depth -= 1
        STACK.restore(saved)
