"""PyTorch's shape marks (``torch._dynamo.mark_dynamic``...) and ``allow_in_graph``. A mark is
kept on the tensor, as PyTorch keeps it; a compiled function reads the dynamic marks at its
next capture and guards those dims by rank only (compiler/dynamic.py)."""

from __future__ import annotations


def _mark(t, attribute: str, index) -> None:
    indices = [index] if isinstance(index, int) else list(index)
    ndim = t.dim()
    for i in indices:
        if not -ndim <= i < ndim:
            raise IndexError(f"mark: dimension {i} out of range for a {ndim}-d tensor")
    found = t.__dict__.setdefault(attribute, set())
    found.update(i % ndim for i in indices)


def mark_dynamic(t, index, min=None, max=None) -> None:
    """Mark dimension(s) ``index`` of ``t`` dynamic: guarded by rank, not size, when compiled."""
    _mark(t, "_dynamo_dynamic_indices", index)


def maybe_mark_dynamic(t, index) -> None:
    """As ``mark_dynamic``, a hint only."""
    _mark(t, "_dynamo_weak_dynamic_indices", index)


def mark_static(t, index=None) -> None:
    """Mark dimension(s) of ``t`` static (kept on the tensor; sizes are specialised unless
    marked or found dynamic)."""
    _mark(t, "_dynamo_static_indices", range(t.dim()) if index is None else index)


def allow_in_graph(fn):
    """``fn`` is traced into the graph (what the capture does for every function): ``fn``."""
    return fn
