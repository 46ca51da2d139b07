"""Runner of the nn.functional rows (linear, conv2d, the losses...): a dtype check, then the
decomposition.

These ops are rows so that the dispatch layers see them whole: autocast casts ``linear``'s
inputs once (bias included) as PyTorch does, rather than ``mm``'s and then promoting at the bias
add, and the profiler names them. Their code stays in ``ember.nn.functional`` beside the public
functions, which load after the op table; a row names its decomposition by module and function
(``from_nn``) and the first call imports it.
"""

from __future__ import annotations

import importlib

from ember._tensor import Tensor

from ._common import unsupported_dtype

# Tensor arguments whose dtype is not what the op computes in (class indices, boolean masks).
_NOT_COMPUTED = frozenset(("target", "attn_mask"))


def from_nn(module: str, name: str):
    """The function ``name`` of ``ember.nn.functional.<module>``, imported at its first call."""
    where = f"ember.nn.functional.{module}"
    found: list = []

    def decomposition(*args):
        if not found:
            found.append(getattr(importlib.import_module(where), name))
        return found[0](*args)

    decomposition.__qualname__ = f"{where}.{name}"
    return decomposition


def refuse_non_tensors(op, args) -> None:
    """PyTorch's TypeError for a non-tensor (a list...) where the schema says Tensor."""
    schema_args = op.schema.args
    for i in op.tensor_positions:
        t = args[i] if i < len(args) else None
        if t is not None and not schema_args[i].is_list and not isinstance(t, Tensor):
            raise TypeError(
                f"{op.name}(): argument '{schema_args[i].name}' (position {i + 1}) must be "
                f"Tensor, not {type(t).__name__}"
            )


def run(op, *args):
    """Refuse non-tensors where the schema says Tensor (a decomposition could compute silently
    wrong numbers from a list) and computed tensors of dtypes outside the row, then decompose."""
    refuse_non_tensors(op, args)
    schema_args = op.schema.args
    for i in op.tensor_positions:
        t = args[i] if i < len(args) else None
        computed = isinstance(t, Tensor) and schema_args[i].name not in _NOT_COMPUTED
        if computed and t._dtype not in op.dtypes:
            raise unsupported_dtype(op, t._dtype)
    return op.decomposition(*args)


def runs_decomposition(op) -> bool:
    """Whether ``op`` computes by its decomposition alone: a plain composite, or a row of this
    kind (its runner only checks its arguments first). The transforms (vmap, forward AD) run such an
    op as its parts, which carry the batch dims and tangents."""
    runner = op.defn.runner
    return op.decomposition is not None and (
        runner in (None, run)
        or getattr(runner, "only_decomposes", False)
        or getattr(runner, "fused", False)  # kinds/fused: a kernel where a backend has one
    )


def call_decomposition(op, args):
    """Run an op for which ``runs_decomposition`` holds, with its runner's checks (a fused
    runner's kernel would not see the transforms' batch dims and tangents: its parts run)."""
    runner = op.defn.runner
    if runner is None or getattr(runner, "fused", False):
        return op.decomposition(*args)
    return runner(op, *args)
