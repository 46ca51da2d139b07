"""``ember.autograd.graph.allow_mutation_on_saved_tensors``, as PyTorch's: inside the block, a
tensor saved for backward may be changed in place; backward sees the values it had when saved.

Saved tensors are packed (saved-tensor hooks) as handles filed by storage; a dispatch layer
(priority 60: below autograd, so the copy is not recorded, above selective checkpointing) sees
each in-place op and, before it writes, clones every saved tensor of the target's storage not
cloned yet. Unpacking gives the clone where there is one. The handles go when the block ends,
so a backward outside it is refused, as in PyTorch.
"""

from __future__ import annotations

import contextlib
from collections import defaultdict

from ember._tensor import Tensor

from ..dispatcher.layers import Layer, installed
from . import grad_mode
from .graph import saved_tensors_hooks


class _Saved:
    __slots__ = ("clone", "tensor")

    def __init__(self, tensor: Tensor):
        self.tensor = tensor
        self.clone = None


class _AllowMutationOnSavedContext:
    """What one block saved, by storage (the object the block yields)."""

    def __init__(self):
        self.by_storage: dict = defaultdict(list)
        self.open = True

    def pack(self, t: Tensor) -> _Saved:
        saved = _Saved(t)
        self.by_storage[id(t._storage)].append(saved)
        return saved

    def unpack(self, saved: _Saved) -> Tensor:
        if not self.open:
            raise AssertionError(  # PyTorch's type and words (its missing space too)
                "Trying to backward outside of the 'allow_mutation_on_saved_tensors' context"
                "in which the graph was originally recorded."
            )
        return saved.tensor if saved.clone is None else saved.clone

    def before_write(self, t: Tensor) -> None:
        pending = [s for s in self.by_storage.get(id(t._storage), ()) if s.clone is None]
        if pending:
            with grad_mode.no_grad():
                for saved in pending:
                    saved.clone = saved.tensor.clone()

    def clear(self) -> None:
        self.by_storage.clear()
        self.open = False


class _CloneBeforeWrite(Layer):
    name = "allow mutation on saved tensors"
    priority = 60

    def __init__(self, context: _AllowMutationOnSavedContext):
        self.context = context

    def wants(self, op, args) -> bool:
        return op.mutates

    def handle(self, op, args):
        if args and isinstance(args[0], Tensor):
            self.context.before_write(args[0])
        return op.redispatch(self, args)


_ACTIVE: list = []


@contextlib.contextmanager
def allow_mutation_on_saved_tensors():
    """Let tensors saved for backward be changed in place inside the block; backward (inside
    it too) uses the values they had when saved.

    Example:
        >>> with ember.autograd.graph.allow_mutation_on_saved_tensors():
        ...     y = x.sin()
        ...     x.mul_(2)  # sin's backward still sees the old x
        ...     y.sum().backward()
    """
    if _ACTIVE:
        raise RuntimeError("allow_mutation_on_saved_tensors contexts cannot be nested")
    context = _AllowMutationOnSavedContext()
    _ACTIVE.append(context)
    try:
        with (
            saved_tensors_hooks(context.pack, context.unpack),
            installed(_CloneBeforeWrite(context)),
        ):
            yield context
    finally:
        context.clear()
        _ACTIVE.pop()
