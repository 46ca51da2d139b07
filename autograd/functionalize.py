"""``ember.func.functionalize``: run a function without mutating its inputs in the middle of it.

Ember runs the function eagerly on copies of its tensor arguments, as PyTorch's eager
functionalization runs it on functional wrappers: the inputs it mutated are written back once,
at the end (one ``copy_`` each), and no output aliases an input unless it is one; with
``remove="mutations_and_views"`` no output aliases another either. The copies are
differentiable, so gradients reach the arguments. Ember has no graph pass that rewrites the
ops themselves: inside the function, mutations and views run as written.
"""

from __future__ import annotations

import functools

from ember._tensor import Tensor
from ember.utils._pytree import tree_flatten, tree_unflatten

_REMOVE = ("mutations", "mutations_and_views")
_INVALID = (
    "functionalize(f, remove='mutations'): received invalid argument for remove={remove}. "
    "Valid options are:\n"
    "     remove='mutations': all inplace and out= operators will be removed from the program, "
    "and replaced with their out-of-place equivalents.\n"
    "     remove='mutations_and_views': In addition to the above, all aliasing operators {{view}} "
    "will be replaced with their non-aliasing counterparts, {{view}}_copy.\n"
)


def functionalize(func, *, remove: str = "mutations"):
    """``func`` with its input mutations applied after it returns, outputs not aliasing inputs.

    Args:
        func: a function of tensors (nested in tuples, lists, dicts).
        remove: ``"mutations"`` or ``"mutations_and_views"`` (outputs never alias each other).

    Returns:
        A function with ``func``'s signature and outputs.

    Example:
        >>> def f(x):
        ...     y = x.view(-1)
        ...     y.add_(1)
        ...     return y
        >>> out = ember.func.functionalize(f)(x)  # x was incremented; out is not a view of x
    """
    if remove not in _REMOVE:
        raise RuntimeError(_INVALID.format(remove=remove))

    @functools.wraps(func)
    def functionalized(*args, **kwargs):
        leaves, spec = tree_flatten((args, kwargs))
        copies = [x.clone() if isinstance(x, Tensor) else x for x in leaves]
        versions = [x._version if isinstance(x, Tensor) else None for x in copies]
        cargs, ckwargs = tree_unflatten(copies, spec)
        out = func(*cargs, **ckwargs)
        mutated = set()
        for original, copy, version in zip(leaves, copies, versions):
            if isinstance(copy, Tensor) and copy._version != version:
                original.copy_(copy)
                mutated.add(id(copy))
        unmutated = {
            _storage(c): x
            for x, c in zip(leaves, copies)
            if isinstance(c, Tensor) and id(c) not in mutated
        }
        outs, out_spec = tree_flatten(out)
        seen: set = set()
        result = []
        for t in outs:
            if isinstance(t, Tensor):
                t = _unaliased(t, unmutated, seen, views=remove == "mutations")
            result.append(t)
        return tree_unflatten(result, out_spec)

    return functionalized


def _storage(t: Tensor) -> int:
    return t.untyped_storage().data_ptr()


def _unaliased(t: Tensor, unmutated: dict, seen: set, views: bool) -> Tensor:
    """What PyTorch returns for output ``t``: an unmutated input itself; with ``views`` a view
    of one as the same view of the caller's tensor; otherwise a tensor aliasing no input (and,
    without ``views``, no other output)."""
    original = unmutated.get(_storage(t))
    same = original is not None and t.shape == original.shape and t.stride() == original.stride()
    if same and t.storage_offset() == original.storage_offset() and t._base is None:
        return original
    if original is not None and views:
        return original.as_strided(t.shape, t.stride(), t.storage_offset())
    if not views and (_storage(t) in seen or t._base is not None):
        t = t.clone()
    seen.add(_storage(t))
    return t
