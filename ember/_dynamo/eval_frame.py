"""``ember._dynamo.optimize`` and ``ember._dynamo.run``: the entry points of PyTorch's
``torch._dynamo`` that scripts written before ``torch.compile`` call, over ``ember.compile``
and ``ember.compiler.set_stance``."""

from __future__ import annotations

from ember.compiler.api import compile
from ember.compiler.stance import set_stance

_CALLBACKS = ("guard_export_fn", "guard_fail_fn", "guard_filter_fn")


class _Optimize:
    """What ``optimize(...)`` returns: applied to a function or module, ``ember.compile``'s
    result."""

    def __init__(self, **compile_kwargs):
        self.compile_kwargs = compile_kwargs

    def __call__(self, fn):
        return compile(fn, **self.compile_kwargs)

    def __enter__(self):
        raise NotImplementedError(
            "ember._dynamo.optimize(...) as a context manager: ember compiles functions and "
            "modules, not blocks; decorate the function (optimize(...)(fn)) instead"
        )

    def __exit__(self, *exc) -> None:
        return None


def optimize(
    backend="inductor",
    *,
    nopython: bool = False,
    error_on_graph_break: bool | None = None,
    disable: bool = False,
    dynamic: bool | None = None,
    **kwargs,
) -> _Optimize:
    """PyTorch's ``torch._dynamo.optimize``: ``optimize(backend, nopython=True)(fn)`` is
    ``ember.compile(fn, backend=backend, fullgraph=True)``.

    Args:
        backend: a backend name, as ``ember.compile``'s.
        nopython: raise at a graph break (``fullgraph=True``).
        error_on_graph_break: True raises at a graph break too (ember's ``fullgraph``).
        disable: return the function unchanged.
        dynamic: as ``ember.compile``'s.
        kwargs: PyTorch's guard callbacks (``guard_fail_fn``...) raise NotImplementedError,
            since ember would never call them; its other arguments (``recompile_limit``...)
            raise TypeError.

    Returns:
        A decorator: applied to a function or module, the compiled one.

    Example:
        >>> @ember._dynamo.optimize("inductor")
        ... def f(x):
        ...     return x.sin() + x.cos()
    """
    for name in _CALLBACKS:
        if kwargs.pop(name, None) is not None:
            raise NotImplementedError(
                f"ember._dynamo.optimize({name}=...): ember does not call guard callbacks; "
                "EMBER_LOGS=guards,recompiles prints the guards and their failures"
            )
    if kwargs:
        raise TypeError(f"optimize() got an unexpected keyword argument '{next(iter(kwargs))}'")
    fullgraph = bool(nopython or error_on_graph_break)
    return _Optimize(backend=backend, fullgraph=fullgraph, dynamic=dynamic, disable=disable)


def run(fn=None):
    """PyTorch's ``torch._dynamo.run``: compile nothing new, replay what was compiled.

    Compiled functions called in ``fn`` (or in a ``with run():`` block) replay their cached
    graphs and run a call that would capture eagerly, as under
    ``ember.compiler.set_stance("eager_on_recompile")``.
    """
    stance = set_stance("eager_on_recompile")
    return stance(fn) if fn is not None else stance
