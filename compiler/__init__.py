"""ember.compiler: ``ember.compile`` captures calls into graphs, guards them and replays them.

See docs/compile.md. ``ember.compile`` and ``nn.Module.compile`` are the entry points;
``reset``, ``is_compiling``, ``disable``, ``list_backends`` and the hints of hints.py are
PyTorch's ``torch.compiler`` functions; ``ember._dynamo`` holds ``explain``, ``config`` and
``exc`` under PyTorch's names.
Importing this package is cheap: the capture machinery loads on the first compiled call.
"""

from __future__ import annotations

from . import config, exc
from .api import compile, disable
from .hints import (
    assume_constant_result,
    get_default_backend,
    is_exporting,
    nested_compile_region,
    set_default_backend,
    wrap_numpy,
)
from .marks import allow_in_graph
from .options import list_backends
from .stance import set_stance


def reset() -> None:
    """Forget every compiled graph: the next call of each compiled function captures again."""
    from .frame import reset_all

    reset_all()


def is_compiling() -> bool:
    """Whether the calling code runs inside an ember.compile capture (PyTorch's
    ``torch.compiler.is_compiling``); False in eager code and in replays."""
    from .region import is_compiling as compiling

    return compiling()


def cudagraph_mark_step_begin() -> None:
    """Mark the start of a new iteration (PyTorch's ``torch.compiler.cudagraph_mark_step_begin``).

    Outputs of ``mode="reduce-overhead"`` regions on the CUDA device stay valid until the next
    mark instead of until the region's next call: call it at the top of each training or
    inference step when one step calls a compiled function more than once and keeps all the
    results. Elsewhere (as in PyTorch, which records CUDA graphs on CUDA alone) every call's
    outputs are its own and a mark changes nothing.

    Example:
        >>> @ember.compile(mode="reduce-overhead")
        ... def rand_foo():
        ...     return ember.rand([4])
        >>> for _ in range(5):
        ...     ember.compiler.cudagraph_mark_step_begin()
        ...     rand_foo() + rand_foo()
    """
    from .overhead import mark_step_begin

    mark_step_begin()


is_dynamo_compiling = is_compiling  # PyTorch's other name

__all__ = [
    "allow_in_graph",
    "assume_constant_result",
    "compile",
    "config",
    "cudagraph_mark_step_begin",
    "disable",
    "exc",
    "get_default_backend",
    "is_compiling",
    "is_dynamo_compiling",
    "is_exporting",
    "list_backends",
    "nested_compile_region",
    "reset",
    "set_default_backend",
    "set_stance",
    "wrap_numpy",
]
