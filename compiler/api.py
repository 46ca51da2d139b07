"""``ember.compile`` and ``ember.compiler.disable``: the entry points (PyTorch's signatures)."""

from __future__ import annotations

import functools


def compile(
    model=None,
    *,
    fullgraph: bool = False,
    dynamic: bool | None = None,
    backend=None,
    mode: str | None = None,
    options: dict | None = None,
    disable: bool = False,
):
    """Compile a function or module: calls are captured into graphs, guarded, and replayed.

    Args:
        model: a function or ``nn.Module``; omitted, ``compile`` returns a decorator.
        fullgraph: raise ``ember._dynamo.exc.Unsupported`` naming the construct when the call
            cannot be captured whole, instead of running it eagerly.
        dynamic: ``True``: sizes are symbolic from the first call (guarded by rank; 0 and 1
            specialised); ``None`` (default): a dim becomes symbolic once a recompile shows
            its size changing, or when ``mark_dynamic`` marks it; ``False``: a graph per size
            (up to ``ember._dynamo.config.recompile_limit`` graphs). A graph that bakes a size
            in falls back to a graph per size (docs/compile.md).
        backend: ``None`` (default): ``get_default_backend()``, initially ``"ember"``; or
            ``"ember"``, or PyTorch's names (``"inductor"``, ``"eager"``,
            ``"aot_eager"``, ``"cudagraphs"``: see ``ember.compiler.options``).
        mode: ``"default"``, ``"lite"``, ``"reduce-overhead"``, ``"max-autotune-no-cudagraphs"``
            or ``"max-autotune"``.
        options: backend options (not together with ``mode``).
        disable: return ``model`` unchanged (for testing).

    Returns:
        A callable with ``model``'s signature; for a module, an ``OptimizedModule``.

    Example:
        >>> model = ember.compile(model)
        >>> @ember.compile(fullgraph=True)
        ... def f(x):
        ...     return x.sin() + x.cos()
    """
    from . import options as opts
    from .hints import get_default_backend

    if backend is None:
        backend = get_default_backend()
    if model is None:

        def decorate(fn):
            if fn is None:
                raise RuntimeError("Model can't be None")
            return compile(
                fn,
                fullgraph=fullgraph,
                dynamic=dynamic,
                backend=backend,
                mode=mode,
                options=options,
                disable=disable,
            )

        return decorate
    resolved = opts.resolve(backend, mode, options, fullgraph, dynamic)
    if disable:
        return model
    return _wrap(model, resolved)


def _wrap(model, resolved):
    from ember.nn.modules.module import Module

    from .frame import CompiledFunction
    from .module import OptimizedModule
    from .optim_step import compiled_step_for

    if callable(resolved.backend):
        raise NotImplementedError(
            f"ember.compile: custom backend callables ({resolved.backend_name}) are not "
            "supported yet; use backend='ember', 'inductor' or 'eager'"
        )
    step = compiled_step_for(model, resolved)
    if step is not None:  # opt.step = ember.compile(opt.step): a plan of fused-op calls
        return step
    if isinstance(model, Module):
        return OptimizedModule(model, CompiledFunction(model._call_impl, resolved, root=model))
    if not callable(model):
        raise RuntimeError("ember.compile: the model must be a function or an nn.Module")
    return CompiledFunction(model, resolved)


def compile_module(module, *args, **kwargs) -> None:
    """``Module.compile(...)``: compile the module's calls in place (PyTorch's method)."""
    from .frame import CompiledFunction
    from .hints import get_default_backend
    from .options import resolve

    bound = dict(zip(("fullgraph", "dynamic", "backend", "mode", "options", "disable"), args))
    bound.update(kwargs)
    if bound.pop("disable", False):
        return
    resolved = resolve(
        bound.get("backend") or get_default_backend(),
        bound.get("mode"),
        bound.get("options"),
        bound.get("fullgraph", False),
        bound.get("dynamic"),
    )
    if callable(resolved.backend):
        _wrap(None, resolved)  # raises: not supported yet
    compiled = CompiledFunction(module._call_impl, resolved, root=module)
    object.__setattr__(module, "_compiled_call_impl", compiled)


def disable(fn=None, recursive: bool = True, *, reason: str | None = None):
    """Run ``fn`` eagerly, never captured (a call inside a compiled function is a graph break
    named after it). Usable as ``@ember.compiler.disable`` or ``disable(fn)``."""
    if fn is None:
        return functools.partial(disable, recursive=recursive, reason=reason)

    @functools.wraps(fn)
    def eager(*args, **kwargs):
        from ember.jit.tracer import current

        from .pending import eager_piece

        state = current()
        observer = getattr(state, "observer", None) if state is not None else None
        if observer is not None and state.recording():
            observer.graph_break("disable", getattr(fn, "__qualname__", repr(fn)))
        if state is None:
            with eager_piece(args, kwargs):
                return fn(*args, **kwargs)
        state.suspended += 1
        try:
            return fn(*args, **kwargs)
        finally:
            state.suspended -= 1

    eager._ember_disabled = True
    return eager
