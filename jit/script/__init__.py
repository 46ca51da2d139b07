"""``ember.jit.script``: the TorchScript subset of Python, compiled from source into the graph
IR that tracing produces (see docs/jit.md).

One concept per module: ``frontend`` (source, ``ast``, errors), ``annotations`` (types),
``sugar`` (compile-time values), ``emitter`` (statements and control flow), ``expressions``,
``conditions``, ``containers``, ``lists`` (list methods), ``strings``, ``classes`` (user
classes), ``attributes`` (run-time module state), ``calls`` (attributes and calls),
``pybuiltins`` (Python's builtins), ``builtins`` (library calls as op-table nodes),
``modules`` (ember's layers; ``recurrent``, ``attention``, ``pooling`` hold the layers
written in the subset), ``arguments`` (calling a compiled function), ``tracing`` (scripted
code under ``ember.jit.trace``), ``compiler`` (the entry point and inlining), ``api``
(decorators). The compiler loads on the first ``script`` call.
"""

from __future__ import annotations

from . import frontend
from .api import Final, FunctionModifiers, annotate, export, ignore, is_scripting, unused
from .attributes import Attribute


def script(obj, optimize=None, _frames_up=0, _rcb=None, example_inputs=None):
    """Compile a function or an ``nn.Module`` from its Python source into a graph.

    Args:
        obj: a function (annotated: unannotated parameters are Tensors) or a module (its
            ``forward`` and ``@ember.jit.export`` methods are compiled, with the submodules,
            parameters and buffers they use).

    Returns:
        ``ScriptFunction`` or ``RecursiveScriptModule``, with ``.graph``, ``.code`` and
        ``.save()``; calls run the graph.

    Raises:
        NotSupportedError: a construct outside the TorchScript subset (the message names the
            file, the line and the construct).

    Example:
        >>> @ember.jit.script
        ... def f(x, n: int):
        ...     for _ in range(n):
        ...         if x.sum() > 0:
        ...             x = x - 1
        ...     return x
    """
    from .compiler import script as compile_script

    return compile_script(obj)


__all__ = [
    "Attribute",
    "Final",
    "FunctionModifiers",
    "annotate",
    "export",
    "frontend",
    "ignore",
    "is_scripting",
    "script",
    "unused",
]
