"""``ember._dynamo``: PyTorch's ``torch._dynamo`` names over ember.compiler (``explain``,
``reset``, ``config``, ``exc``, ``list_backends``, ``OptimizedModule``, ``optimize``,
``run``), so code written for PyTorch's compiler internals finds them."""

from __future__ import annotations

from ember.compiler import config, exc, is_compiling, list_backends, reset
from ember.compiler.api import disable
from ember.compiler.explain import ExplainOutput, explain
from ember.compiler.marks import allow_in_graph, mark_dynamic, mark_static, maybe_mark_dynamic
from ember.compiler.module import OptimizedModule
from ember.compiler.stance import set_stance

from .eval_frame import optimize, run

__all__ = [
    "ExplainOutput",
    "OptimizedModule",
    "allow_in_graph",
    "config",
    "disable",
    "exc",
    "explain",
    "is_compiling",
    "list_backends",
    "mark_dynamic",
    "mark_static",
    "maybe_mark_dynamic",
    "optimize",
    "reset",
    "run",
    "set_stance",
]
