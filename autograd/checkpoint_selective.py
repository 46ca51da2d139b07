"""Selective activation checkpointing (``create_selective_checkpoint_contexts``), as PyTorch's:
a policy says, op by op, which outputs of a checkpointed block to keep from the forward; the
recomputation reuses those and reruns the rest.

Two dispatch layers, below autograd (priority 50: they see the calls autograd records, as
PyTorch's dispatch modes see aten ops), one per context manager: during the forward the caching
layer runs each op, asks the policy, and stores the detached outputs it says to save, keyed by
(op, how many calls of that op came before); during the recomputation the cached layer gives
those back and reruns the others. A layer handles only the outermost call: what an op runs
inside (its decomposition) is part of it, so counts agree between both runs even when the
cached op's parts do not run again.

The policy gets ember's ops (``ember.ops.mm``), where PyTorch's gets ``torch.ops.aten.mm.default``.
"""

from __future__ import annotations

import enum
from collections import defaultdict

from ember._tensor import Tensor

from ..dispatcher.layers import Layer, installed
from ..dispatcher.op import Op


class CheckpointPolicy(enum.Enum):
    """Whether an op's output is kept from the forward (``*_SAVE``) or recomputed
    (``*_RECOMPUTE``); ``MUST_*`` and ``PREFER_*`` only differ for compilers. ``*_CPU_OFFLOAD``
    recomputes in eager mode, as in PyTorch."""

    MUST_SAVE = 0
    PREFER_SAVE = 1
    MUST_RECOMPUTE = 2
    PREFER_RECOMPUTE = 3
    MUST_CPU_OFFLOAD = 4
    PREFER_CPU_OFFLOAD = 5


class SelectiveCheckpointContext:
    """What the policy function gets first: ``op_output`` (the op's result); ``is_recompute``
    is always False (the policy only runs in the forward)."""

    def __init__(self, *, is_recompute, op_output=None) -> None:
        self.is_recompute = is_recompute
        self.op_output = op_output


_SAVED = (CheckpointPolicy.MUST_SAVE, CheckpointPolicy.PREFER_SAVE)
# Checkpointing itself detaches a different number of times in the forward and the
# recomputation: those calls are not counted (PyTorch's SAC_IGNORED_OPS).
_IGNORED = frozenset({"detach"})
_RECOMPUTE = object()
_CONSUMED = object()
_MISMATCH = (
    "This can happen if the operations in the checkpointed region are nondeterministic or "
    "depend on global state that changed between forward and backward."
)


class _Kept:
    """A saved output, detached, with its storage's version at the time (PyTorch's
    _VersionWrapper: a cached tensor changed since is refused)."""

    def __init__(self, value):
        self.value = value.detach() if isinstance(value, Tensor) else value
        self.version = value._storage.version if isinstance(value, Tensor) else None

    def get(self, allow_mutation: bool):
        if isinstance(self.value, Tensor):
            if not allow_mutation and self.value._storage.version != self.version:
                raise RuntimeError(
                    "Tensor cached during selective activation checkpoint has been mutated"
                )
            return self.value.detach()  # a fresh tensor, which autograd may give a history
        return self.value


def _map(fn, out):
    if isinstance(out, tuple):
        items = [_map(fn, o) for o in out]
        return type(out)(*items) if hasattr(out, "_fields") else tuple(items)
    if isinstance(out, list):
        return [_map(fn, o) for o in out]
    return fn(out)


class _OuterOnly(Layer):
    """A layer that counts only the outermost op calls (see the module docstring)."""

    priority = 50

    def __init__(self, storage):
        self.storage = storage
        self.counts: dict = defaultdict(int)
        self.depth = 0

    def handle(self, op, args):
        if self.depth or op.name in _IGNORED:
            return op.redispatch(self, args)
        index = self.counts[op]
        self.counts[op] += 1
        self.depth += 1
        try:
            return self.outermost(op, args, index)
        finally:
            self.depth -= 1


class _Caching(_OuterOnly):
    name = "selective checkpoint (forward)"

    def __init__(self, policy_fn, storage):
        super().__init__(storage)
        self.policy_fn = policy_fn

    def outermost(self, op, args, index: int):
        out = op.redispatch(self, args)
        context = SelectiveCheckpointContext(is_recompute=False, op_output=out)
        policy = self.policy_fn(context, op, *args)
        if isinstance(policy, bool):  # PyTorch's older policies answer True for "save"
            policy = CheckpointPolicy.MUST_SAVE if policy else CheckpointPolicy.PREFER_RECOMPUTE
        self.storage[op][index] = _map(_Kept, out) if policy in _SAVED else _RECOMPUTE
        return out


class _Cached(_OuterOnly):
    name = "selective checkpoint (recomputation)"

    def __init__(self, storage, allow_mutation: bool):
        super().__init__(storage)
        self.allow_mutation = allow_mutation

    def outermost(self, op, args, index: int):
        entries = self.storage.get(op)
        if entries is None:
            raise RuntimeError(
                f"{op.name} encountered during backward but not found in storage. {_MISMATCH}"
            )
        entry = entries.get(index)
        if entry is None:
            raise RuntimeError(
                f"{op.name} invocation index {index} encountered during backward but not found "
                f"in storage. {_MISMATCH}"
            )
        if entry is _CONSUMED:
            raise RuntimeError(
                "Trying to backward an extra time. You are only allowed to backward once on any "
                "region computed under selective activation checkpoint."
            )
        if entry is _RECOMPUTE:
            return op.redispatch(self, args)
        entries[index] = _CONSUMED
        return _map(lambda kept: kept.get(self.allow_mutation), entry)


class _Installed(installed):
    """Installs its layer for a block; the recomputation starts counting afresh each time."""

    def __enter__(self):
        self.layer.counts.clear()
        self.layer.depth = 0
        return super().__enter__()


def create_selective_checkpoint_contexts(policy_fn_or_list, allow_cache_entry_mutation=False):
    """The ``context_fn`` result for ``checkpoint(..., use_reentrant=False, context_fn=...)``
    that keeps the outputs a policy chooses.

    Args:
        policy_fn_or_list: ``policy_fn(ctx, op, *args)`` returning a ``CheckpointPolicy`` (or a
            bool: True saves), or a list of ops (``ember.ops.mm``...) to save, all others being
            recomputed.
        allow_cache_entry_mutation: let cached tensors change in place before the backward.

    Example:
        >>> context_fn = functools.partial(create_selective_checkpoint_contexts, [ember.ops.mm])
        >>> out = checkpoint(block, x, use_reentrant=False, context_fn=context_fn)
    """
    if isinstance(policy_fn_or_list, list):
        for op in policy_fn_or_list:
            if not isinstance(op, Op):
                raise ValueError(
                    f"Expected op in `op_list` to be an OpOverload but got: {op} of type "
                    f"{type(op)}. Use ember.ops.<name> (ember's ops play PyTorch's OpOverloads)."
                )
        saved = frozenset(policy_fn_or_list)

        def policy_fn(ctx, op, *args):
            return CheckpointPolicy.MUST_SAVE if op in saved else CheckpointPolicy.PREFER_RECOMPUTE

    elif callable(policy_fn_or_list):
        policy_fn = policy_fn_or_list
    else:
        raise TypeError("policy_fn_or_list must be either a function or a list of ops.")
    storage: dict = defaultdict(dict)
    return (
        _Installed(_Caching(policy_fn, storage)),
        _Installed(_Cached(storage, allow_cache_entry_mutation)),
    )


__all__ = ["CheckpointPolicy", "SelectiveCheckpointContext", "create_selective_checkpoint_contexts"]
