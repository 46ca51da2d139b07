"""What a trace changes while it runs, and restores after: the Tensor methods that turn a traced
tensor into Python values (sizes become ``SymInt``s; data reads warn), ``ember.tensor`` (its
result is a constant), and ``Module.__call__`` (module scopes for the nodes).

Patching the classes for the duration of a trace costs nothing outside one; the replacements
defer to the originals for tensors the trace does not know.
"""

from __future__ import annotations

import contextlib
import sys
import warnings

from ember._size import Size
from ember._tensor import Tensor

from . import types as T
from .symbolic import SymInt

_SUFFIX = (
    " might cause the trace to be incorrect. We can't record the data flow of Python values, so "
    "this value will be treated as a constant in the future. This means that the trace might not "
    "generalize to other inputs!"
)
# Tensor method -> what PyTorch's TracerWarning says it converts to.
_READS = {
    "item": "Converting a tensor to a Python number",
    "__bool__": "Converting a tensor to a Python boolean",
    "__int__": "Converting a tensor to a Python integer",
    "__float__": "Converting a tensor to a Python float",
    "__index__": "Converting a tensor to a Python index",
    "tolist": "Converting a tensor to a Python list",
    "numpy": "Converting a tensor to a NumPy array",
    "__array__": "Converting a tensor to a NumPy array",
}
_ITERATION = (
    "Iterating over a tensor might cause the trace to be incorrect. Passing a tensor of different "
    "shape won't change the number of iterations executed (and might lead to errors or silently "
    "give incorrect results)."
)
_LENGTH = (
    "Using len to get tensor shape might cause the trace to be incorrect. Recommended usage would "
    "be tensor.shape[0]. Passing a tensor of different shape might lead to errors or silently "
    "give incorrect results."
)
_TENSOR_CONSTANT = (
    "ember.tensor results are registered as constants in the trace. You can safely ignore this "
    "warning if you use this function to create tensors out of constant variables that would be "
    "the same every time you call this function. In any other case, this might cause the trace "
    "to be incorrect."
)


def _warn(message: str) -> None:
    from ember.dispatcher.registry import _user_stacklevel

    from .tracer import TracerWarning

    warnings.warn(message, TracerWarning, stacklevel=_user_stacklevel())


def _traced(state, t):
    """The value of a traced tensor whose sizes may vary (not a parameter's: those are fixed,
    and reading them as constants keeps graphs simple)."""
    if not state.recording():
        return None
    value = state.env.get(id(t))
    if value is None or value.node().kind() == "prim::GetAttr":
        return None
    return value


def _in_graph(state, t) -> bool:
    """Whether ``t`` is a graph value or a parameter/buffer of the traced module."""
    return id(t) in state.env or id(t) in state.attrs


def _size(state, value, t, dim: int) -> SymInt:
    key = (value, dim)
    found = state.sizes.get(key)
    if found is None:
        node = state.insert("prim::size", [value, state.constant(dim)], T.IntType)
        found = state.sizes[key] = SymInt(t._shape[dim], node.output(), state)
    return found


def _shape_methods(state, originals: dict) -> dict:
    def shape(self):
        value = _traced(state, self)
        if value is None:
            return Size(self._shape)
        return Size(_size(state, value, self, d) for d in range(len(self._shape)))

    def size(self, dim=None):
        value = _traced(state, self)
        if value is None or dim is None:
            return shape(self) if dim is None else originals["size"](self, dim)
        ndim = len(self._shape)
        if isinstance(dim, int) and -ndim <= dim < ndim:
            return _size(state, value, self, dim % ndim)
        return originals["size"](self, dim)

    def numel(self):
        value = _traced(state, self)
        if value is None:
            return originals["numel"](self)
        node = state.insert("prim::numel", [value], T.IntType)
        return SymInt(originals["numel"](self), node.output(), state)

    return {"shape": property(shape), "size": size, "numel": numel}


def _read_methods(state, originals: dict) -> dict:
    def make(name: str, what: str):
        original = originals[name]

        def method(self, *args, **kwargs):
            observer = state.observer
            if observer is not None and state.recording() and _in_graph(state, self):
                observer.read(name)  # ember.compile: the read ends the graph (raises)
            if _traced(state, self) is None:
                return original(self, *args, **kwargs)
            _warn(what + _SUFFIX)
            state.suspended += 1  # the read's own ops (detach, copy to host) are not the model's
            try:
                return original(self, *args, **kwargs)
            finally:
                state.suspended -= 1

        method.__name__ = name
        return method

    methods = {name: make(name, what) for name, what in _READS.items()}

    def iterate(self):
        if _traced(state, self) is not None:
            _warn(_ITERATION)
        return originals["__iter__"](self)

    def length(self):
        if _traced(state, self) is not None:
            _warn(_LENGTH)  # the int is baked in, as PyTorch's Tensor.__len__ warns
        return originals["__len__"](self)

    methods["__iter__"] = iterate
    methods["__len__"] = length
    return methods


@contextlib.contextmanager
def tracing_patches(state):
    import ember
    from ember import _factories
    from ember.nn.modules.module import Module

    from . import packed_trace

    state.sizes = {}
    names = ["shape", "size", "numel", "__iter__", "__len__", *_READS]
    originals = {name: Tensor.__dict__[name] for name in names}
    replacements = {**_shape_methods(state, originals), **_read_methods(state, originals)}
    original_tensor = _factories.tensor
    original_call = Module.__call__

    def tensor(*args, **kwargs):
        if state.recording() and not _called_from_ember():
            _warn(_TENSOR_CONSTANT)
        return original_tensor(*args, **kwargs)

    def call(module, *args, **kwargs):
        if not state.recording():
            return original_call(module, *args, **kwargs)
        name = state.module_names.get(id(module))
        if name is None:  # a module the traced one does not own (built in forward)
            name = type(module).__name__
        if state.observer is not None:
            state.observer.module(module)
        state.scope.append(name)
        try:
            return original_call(module, *args, **kwargs)
        finally:
            state.scope.pop()

    patched = [(Tensor, name, fn, originals[name]) for name, fn in replacements.items()]
    patched += [(ember, "tensor", tensor, original_tensor)]
    patched += [(_factories, "tensor", tensor, original_tensor)]
    patched += [(Module, "__call__", call, original_call)]
    patched += [(m, name, cached.__wrapped__, cached) for m, name, cached in _shape_caches()]
    patched += packed_trace.replacements(state)
    try:
        for owner, name, replacement, _original in patched:
            setattr(owner, name, replacement)
        yield
    finally:
        for owner, name, _replacement, original in patched:
            setattr(owner, name, original)


def _shape_caches() -> list:
    """``(module, name, function)`` for the memoised helpers of ember.nn (masks, pooling
    windows, padding indices, all keyed by sizes). A trace calls them uncached: a cached result
    computed for other sizes, or by another trace, would be baked into the graph, and what
    they compute from a traced size must be recorded."""
    found = []
    for module_name, module in list(sys.modules.items()):
        if not module_name.startswith("ember.nn") or module is None:
            continue
        for name, value in list(vars(module).items()):
            if hasattr(value, "cache_info") and hasattr(value, "__wrapped__"):
                found.append((module, name, value))
    return found


def _called_from_ember() -> bool:
    """Whether ember.tensor's caller is ember itself (a library helper, not the user's model)."""
    caller = sys._getframe(2).f_globals.get("__name__") or ""
    return caller == "ember" or caller.startswith("ember.")
