"""``ember.utils.swap_tensors``: exchange two tensor objects' contents in place, as PyTorch's.

Every slot (storage, shape, strides, dtype, autograd state), the ``__dict__`` and the class are
swapped, so references held elsewhere (an optimizer's parameter list, a module's dict) see the
other tensor's data under the same object identity.
"""

from __future__ import annotations

import weakref

from ._tensor import Tensor

# A leaf's _leaf_edge is left out: its AccumulateGrad holds the leaf weakly, so a tensor that
# has one is refused below (it is unset, and unreadable, on every other tensor).
_SWAPPED = tuple(s for s in Tensor.__slots__ if s not in ("__dict__", "__weakref__", "_leaf_edge"))


def swap_tensors(t1, t2) -> None:
    """Swap the contents of tensors ``t1`` and ``t2`` (data, metadata, attributes and class).

    Raises:
        TypeError: an argument is not a tensor.
        RuntimeError: a weak reference to either tensor exists (it would silently point at the
            other data), as PyTorch.

    Example:
        >>> a, b = ember.ones(2), ember.zeros(3)
        >>> ember.utils.swap_tensors(a, b)
        >>> a.shape
        ember.Size([3])
    """
    for name, t in (("t1", t1), ("t2", t2)):
        if not isinstance(t, Tensor):
            raise TypeError(f"Expected {name} to be a Tensor, but got {type(t).__name__}")
        if weakref.getweakrefcount(t):
            raise RuntimeError(f"Cannot swap {name} because it has weakref associated with it")
    if t1 is t2:
        return
    for slot in _SWAPPED:
        first, second = getattr(t1, slot), getattr(t2, slot)
        object.__setattr__(t1, slot, second)
        object.__setattr__(t2, slot, first)
    t1.__dict__, t2.__dict__ = t2.__dict__, t1.__dict__
    t1.__class__, t2.__class__ = t2.__class__, t1.__class__
