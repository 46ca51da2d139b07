"""PyTorch's ``torch.compiler`` hints about user functions: ``assume_constant_result``,
``nested_compile_region``, ``wrap_numpy``; the default backend; ``is_exporting``."""

from __future__ import annotations

import functools

_default_backend = "ember"  # torch's is "inductor", which ember runs as "ember"


def set_default_backend(backend) -> None:
    """The backend ``ember.compile`` uses when none is given; ``None`` resets it to ``"ember"``.

    Example:
        >>> ember.compiler.set_default_backend("eager")
        >>> ember.compiler.get_default_backend()
        'eager'
    """
    global _default_backend
    if backend is None:
        _default_backend = "ember"
        return
    if not isinstance(backend, str) and not callable(backend):
        raise TypeError(f"backend must be a string or callable, got {type(backend)}")
    _default_backend = backend


def get_default_backend():
    """The backend ``ember.compile`` uses when none is given (initially ``"ember"``)."""
    return _default_backend


def is_exporting() -> bool:
    """Whether the calling code runs under ``ember.export.export`` (stricter than
    ``is_compiling``: False inside ``ember.compile``)."""
    from ember.jit.export.export import exporting

    return exporting()


def assume_constant_result(fn):
    """Mark ``fn``'s result a constant: inside an ``ember.compile`` capture the call runs once,
    unrecorded, and its result (a Python value or a tensor) is baked into the graph, so reads
    such as ``.item()`` inside it do not break the graph; replays do not call ``fn`` again. In
    eager code it just calls ``fn``. Nothing checks that the result really is constant.

    Example:
        >>> @ember.compiler.assume_constant_result
        ... def scale():
        ...     return CONFIG.scale
    """
    from ember.jit.tracer import current

    @functools.wraps(fn)
    def constant(*args, **kwargs):
        state = current()
        if state is None or not state.recording():
            return fn(*args, **kwargs)
        state.suspended += 1  # its ops and reads are not the graph's: only its result is
        try:
            return fn(*args, **kwargs)
        finally:
            state.suspended -= 1

    constant._dynamo_marked_constant = True
    return constant


def nested_compile_region(fn=None, *, options=None, max_reuse_entries: int = 8, reuse_hash_fn=None):
    """Mark ``fn`` a region repeated in the model (PyTorch compiles it once and reuses it).
    Ember's capture traces through calls, so the region is inlined like any other function;
    in eager code the call is unchanged."""
    del max_reuse_entries, reuse_hash_fn
    if options is not None:
        raise RuntimeError(
            "nested_compile_region config is an experimental feature for testing only."
        )
    if fn is None:
        return nested_compile_region

    @functools.wraps(fn)
    def region(*args, **kwargs):
        return fn(*args, **kwargs)

    region._ember_nested_compile_region = True
    return region


def wrap_numpy(fn):
    """Turn a function over ``np.ndarray``s into one over tensors: tensor arguments become
    arrays (``Tensor.numpy()``), array results become tensors (``ember.as_tensor``).

    Example:
        >>> @ember.compiler.wrap_numpy
        ... def fn(a):
        ...     return np.sum(a * a)
        >>> fn(ember.arange(6.0))
        tensor(55.)
    """
    import numpy as np

    from ember import as_tensor
    from ember._tensor import Tensor
    from ember.jit import pytree

    def convert(value, kind, how):
        leaves, spec = pytree.flatten(value)
        return pytree.unflatten([how(x) if isinstance(x, kind) else x for x in leaves], spec)

    @functools.wraps(fn)
    def wrap(*args, **kwargs):
        args, kwargs = convert((args, kwargs), Tensor, lambda t: t.numpy())
        return convert(fn(*args, **kwargs), np.ndarray, as_tensor)

    return wrap
