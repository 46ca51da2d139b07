"""Two backward graphs side by side, ember's against torch's, from their outputs down to the
leaves: every node's type and name, its next_functions (output indices, None entries) and the
value of every ``_saved_*`` attribute torch's node has. Each pair of nodes is compared once
(graphs of real models share subgraphs: a path walk would be exponential). Used by the einsum
graph tests and the nn module graph tests."""

from __future__ import annotations

import numpy as np
import torch

import ember


def same(ours, theirs) -> bool:
    """Whether an ember value equals a torch one: tensors by shape, dtype and values, tuples item
    by item, bools, None and strings exactly, numbers by value."""
    if isinstance(theirs, torch.Tensor):
        if not isinstance(ours, ember.Tensor) or tuple(ours.shape) != tuple(theirs.shape):
            return False
        a, b = ours.detach().cpu().numpy(), theirs.detach().numpy()
        return a.dtype == b.dtype and np.allclose(a, b, equal_nan=True)
    if isinstance(theirs, (tuple, list)):
        return (
            isinstance(ours, (tuple, list))
            and len(ours) == len(theirs)
            and all(same(o, t) for o, t in zip(ours, theirs))
        )
    if isinstance(theirs, bool) or theirs is None or isinstance(theirs, str):
        return type(ours) is type(theirs) and ours == theirs
    return isinstance(ours, (int, float)) and not isinstance(ours, bool) and ours == theirs


def differences(ours, theirs, random=frozenset()) -> list[str]:
    """Every difference between the graphs under grad_fns ``ours`` and ``theirs``, one line each
    (``path: what``); ``random`` names ``_saved_*`` attributes compared by presence only."""
    found, seen, stack = [], set(), [(ours, theirs, "out")]
    while stack:
        a, b, path = stack.pop()
        if a is None or b is None:
            if a is not b:
                found.append(f"{path}: {_label(a)} where torch has {_label(b)}")
            continue
        if (id(a), id(b)) in seen:
            continue
        seen.add((id(a), id(b)))
        if _label(a) != _label(b):
            found.append(f"{path}: {_label(a)} where torch has {_label(b)}")
            continue
        found.extend(f"{path}: {line}" for line in _saved_differences(a, b, random))
        mine, want = a.next_functions, b.next_functions
        if [i for _, i in mine] != [i for _, i in want]:
            found.append(f"{path}: next_functions indices {[i for _, i in mine]}, torch's "
                         f"{[i for _, i in want]}")  # fmt: skip
            continue
        for k, ((x, _), (y, _)) in enumerate(zip(mine, want)):
            stack.append((x, y, f"{path}/{b.name()}[{k}]"))
    return found


def _label(node) -> str:
    return "None" if node is None else f"{type(node).__name__} ({node.name()})"


def _saved_differences(ours, theirs, random) -> list[str]:
    lines = []
    for attribute in sorted(a for a in dir(theirs) if a.startswith("_saved_")):
        want = getattr(theirs, attribute)
        try:
            got = getattr(ours, attribute)
        except (AttributeError, RuntimeError) as error:
            lines.append(f"{attribute} missing ({type(error).__name__})")
            continue
        if attribute not in random and not same(got, want):
            lines.append(f"{attribute} = {_short(got)}, torch's {_short(want)}")
    return lines


def _short(value) -> str:
    if isinstance(value, (ember.Tensor, torch.Tensor)):
        return f"tensor{tuple(value.shape)} {value.dtype}"
    return repr(value)[:80]
