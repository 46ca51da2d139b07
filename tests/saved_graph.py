"""Bytes a graph keeps for backward, walked from its output (ember's or torch's): the distinct
storages of what each node saved. Used by the step-memory tests (tests/autograd/
test_saved_memory.py) and the autocast ones (tests/amp/test_training.py)."""

from __future__ import annotations

import ember


def saved_bytes(out) -> int:
    """Bytes of the distinct storages the graph of ``out`` (ember or torch) keeps for backward."""
    storages, seen, stack = {}, set(), [out.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        for t in _saved(node):
            if isinstance(t, ember.Tensor):
                storages[id(t._storage)] = t._storage._nbytes
            elif hasattr(t, "untyped_storage"):  # a torch tensor (torch is the test oracle)
                storage = t.untyped_storage()
                storages[storage.data_ptr()] = storage.nbytes()
        stack.extend(edge[0] for edge in node.next_functions if edge is not None)
    return sum(storages.values())


def _saved(node):
    """The tensors a node keeps: ember's saved tensors, torch's ``_saved_*`` tensors."""
    if hasattr(node, "ctx"):  # ember's Node (AccumulateGrad has no context)
        kept = getattr(node.ctx, "_saved", None) or {}  # a custom Function's ctx: a tuple
        for item in kept.values() if isinstance(kept, dict) else kept:
            for saved in item if isinstance(item, tuple) else (item,):
                yield getattr(saved, "tensor", None)
        return
    for name in dir(node):
        if name.startswith("_saved_") and not name.endswith(("sym_sizes", "sym_strides")):
            value = getattr(node, name)
            yield from (v for v in (value if isinstance(value, (tuple, list)) else (value,)))
