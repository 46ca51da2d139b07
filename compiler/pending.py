"""Pending tensors of a segmented call (segments.py): how one gets its data, and the reads
that must give it its data first.

A pending tensor is made by a deferred op: its sizes, strides, dtype and device are known, its
storage object is empty until the segment's region runs (``fill``: the storage object is filled,
not replaced, so a view made of it outside an op sees the data). Tensor's methods that read
data (``.item()``, ``bool()``, ``print``...) or autograd's history (``grad_fn``, ``is_leaf``)
are wrapped once (``watch_reads``) so that a read of a pending tensor runs the segment first.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import threading

from ember._storage import Storage
from ember._tensor import Tensor
from ember.autograd.node import SavedTensor

RUNNING = threading.local()
# Tensor methods that read data: a pending tensor must have it first
_READS = (
    "item", "tolist", "numpy", "__array__", "__bool__", "__int__", "__float__", "__index__",
    "__repr__", "__str__", "__format__", "data_ptr", "untyped_storage", "storage",
    "__dlpack__", "backward", "grad_fn", "is_leaf", "retain_grad", "register_hook",
    "requires_grad_",
)  # fmt: skip
# Properties whose setting flushes first: ``x.requires_grad = True`` on a pending tensor makes
# it a leaf the Python differentiates against (``autograd.grad(y, x)``), which the segment's
# region, computing from its own copy, would not connect to.
_SETS = ("requires_grad",)


def running():
    """The segmented call running on this thread, or None."""
    return getattr(RUNNING, "run", None)


@contextlib.contextmanager
def eager_piece(*holding):
    """A piece of a segmented call that runs eagerly (an ``ember.compiler.disable``d function,
    code a graph would not hold): the segment so far runs first, giving the pending tensors
    the piece receives (``holding``) their data, and the piece's ops are not deferred."""
    run = running()
    if run is None:
        yield
        return
    run.flush(holding)
    run.suspended += 1
    try:
        yield
    finally:
        run.suspended -= 1


def _copier(names: tuple):
    """``copy(a, b)`` setting each attribute of ``names`` of ``a`` to ``b``'s, unrolled (a
    flush fills every pending tensor the Python holds: a loop of getattr/setattr was a
    third of it)."""
    body = "".join(f"    a.{name} = b.{name}\n" for name in names)
    namespace: dict = {}
    exec(f"def copy(a, b):\n{body}", namespace)  # our own source, from slot names
    return namespace["copy"]


_copy_storage = _copier(tuple(slot for slot in Storage.__slots__ if slot != "__weakref__"))
# the layout, and autograd's history: the compiled pair's node (joint.py) or, for a recording,
# the eager ops' nodes
_copy_layout = _copier(
    ("_shape", "_stride", "_offset", "_contig", "_base", "_requires_grad", "_grad_fn")
)


def fill(holder: Tensor, real: Tensor) -> None:
    """Give a pending tensor ``real``'s data (its storage object is filled, not replaced, so a
    view made of it outside an op, before the flush, sees the data too)."""
    storage, source = holder._storage, real._storage
    _copy_storage(storage, source)
    if source.__class__ is not Storage:  # a read-only one (ReadOnlyStorage: no more slots)
        storage.__class__ = source.__class__
    _copy_layout(holder, real)
    extra = real.__dict__
    if extra:  # a view's math bits (conj, neg: dispatcher/mathbits.py) live there
        holder.__dict__.update(extra)


def saved_by_autograd(objects: list) -> dict:
    """id(tensor) -> how many of autograd's saved-tensor slots hold it. One scan of the heap
    (``gc.get_referrers``), at a recording's flush only: the segment's region returns the
    tensors the Python holds, not the ones eager's backward would have read."""
    counts: dict = {}
    if objects:
        for referrer in gc.get_referrers(*objects):
            if referrer.__class__ is SavedTensor and referrer.tensor is not None:
                key = id(referrer.tensor)
                counts[key] = counts.get(key, 0) + 1
    return counts


WATCHED: list = []


def watch_reads() -> None:
    """Wrap Tensor's data reads, once: a read of a pending tensor flushes the running call's
    segment first. (Wrapping them per call would flush the method caches of the class at
    every call.) Outside a segmented call the wrapper costs one thread-local read."""
    for name in _READS:
        original = Tensor.__dict__.get(name)
        if isinstance(original, property):  # grad_fn, is_leaf: history comes with the data
            setattr(Tensor, name, property(_reading(original.fget), doc=original.__doc__))
        elif original is not None:
            setattr(Tensor, name, _reading(original))
    for name in _SETS:
        original = Tensor.__dict__[name]
        setattr(Tensor, name, original.setter(_reading(original.fset)))
    from ember import autograd
    from ember._random import Generator

    for name in _GENERATOR_CALLS:  # a generator's state read or set: after the deferred draws
        setattr(Generator, name, _drawn_first(Generator.__dict__[name]))
    for name in _AUTOGRAD_CALLS:  # they read the outputs' history below the properties
        setattr(autograd, name, _eager_after_flush(getattr(autograd, name)))
    for module, name in _TRANSFORM_CALLS:
        owner = importlib.import_module(module)
        setattr(owner, name, _eager_after_flush(getattr(owner, name)))
    forward_ad = importlib.import_module("ember.autograd.forward_ad")
    forward_ad.enter_level = _level_entered(forward_ad.enter_level)
    forward_ad.exit_level = _level_exited(forward_ad.exit_level)
    WATCHED.append(True)


# ``autograd.grad(y, x)`` and ``autograd.backward(ys)`` walk ``y``'s history through its
# fields, not the ``grad_fn`` property: a pending ``y`` (its segment not run yet) had none, so
# ``grad`` found ``x`` unused from the first replay on. They run after a flush, and their own
# ops (the backward's, ``ones_like(y)``) run then, as ``Tensor.backward``'s do.
_AUTOGRAD_CALLS = ("grad", "backward")
# vmap and jvp run their function under layers of their own, below this one: its ops are not
# deferred through them, so they run eagerly after a flush (observer.py makes them graph
# breaks in a capture for the same reason); vjp's too, whose graph jacrev differentiates again
# (a segment's compiled pair has no double backward)
_TRANSFORM_CALLS = (
    ("ember.autograd.vmap", "_flat_vmap"),
    ("ember.autograd.vmap", "_chunked"),
    ("ember.autograd.transforms", "jvp_with_argnums"),
    # vjp's function and its vjp_fn's backward (jacrev vmaps it, with create_graph): eager
    ("ember.autograd.transforms", "vjp_with_argnums"),
    ("ember.autograd.transforms", "backward"),
)


# Forward AD's levels (``with forward_ad.dual_level():``): the ops between a level's entry and
# exit run eagerly (dual tensors' tangents live in the level's registry, which a pending tensor
# would miss); the runs suspended at each entry, innermost last.
_LEVELS = threading.local()


def _level_entered(original):
    def call(*args, **kwargs):
        run = getattr(RUNNING, "run", None)
        if run is not None and run.suspended:
            run = None  # inside an eager piece already: nothing to suspend
        if run is not None and run.calls:
            run.flush()
        level = original(*args, **kwargs)
        if run is not None:
            run.suspended += 1
        _LEVELS.__dict__.setdefault("runs", []).append(run)
        return level

    call.__name__ = original.__name__
    call.__wrapped__ = original
    return call


def _level_exited(original):
    def call(*args, **kwargs):
        try:
            return original(*args, **kwargs)
        finally:
            runs = _LEVELS.__dict__.get("runs")
            run = runs.pop() if runs else None
            if run is not None:
                run.suspended -= 1

    call.__name__ = original.__name__
    call.__wrapped__ = original
    return call


def _eager_after_flush(original):
    def call(*args, **kwargs):
        run = getattr(RUNNING, "run", None)
        if run is None or run.suspended:
            return original(*args, **kwargs)
        if run.calls:
            run.flush()
        run.suspended += 1
        try:
            return original(*args, **kwargs)
        finally:
            run.suspended -= 1

    call.__name__ = original.__name__
    call.__doc__ = original.__doc__
    call.__wrapped__ = original
    return call


# The Generator methods that read or set its state: the segment's random calls are deferred,
# so without a flush ``get_rng_state()`` would miss their draws and ``set_rng_state(s)`` would
# come before them (eager: ``s = get_rng_state(); rand(); set_rng_state(s); rand()`` repeats).
_GENERATOR_CALLS = ("get_state", "set_state", "manual_seed", "seed", "initial_seed")


def _drawn_first(original):
    def method(self, *args, **kwargs):
        run = getattr(RUNNING, "run", None)
        if run is not None and not run.suspended and run.calls:
            run.flush()
        return original(self, *args, **kwargs)

    method.__name__ = original.__name__
    method.__wrapped__ = original
    return method


def _reading(original):
    def method(self, *args, **kwargs):
        run = getattr(RUNNING, "run", None)
        if run is None or run.suspended:  # a read inside a read (bool's item), an eager
            return original(self, *args, **kwargs)  # piece: the segment was flushed first
        if id(self) in run.refs:
            run.flush(self)
        run.suspended += 1  # the read's own ops (a copy to the host) run now
        try:
            return original(self, *args, **kwargs)
        finally:
            run.suspended -= 1

    method.__name__ = getattr(original, "__name__", "read")
    method.__wrapped__ = original
    return method
