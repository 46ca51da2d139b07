"""``ember.utils.checkpoint``: activation checkpointing, as ``torch.utils.checkpoint`` (the
implementation is ember.autograd.checkpoint)."""

from __future__ import annotations

from ember.autograd.checkpoint import (
    CheckpointError,
    CheckpointFunction,
    DefaultDeviceType,
    check_backward_validity,
    checkpoint,
    checkpoint_sequential,
    detach_variable,
    noop_context_fn,
    set_checkpoint_early_stop,
)

__all__ = [
    "CheckpointError",
    "CheckpointFunction",
    "DefaultDeviceType",
    "check_backward_validity",
    "checkpoint",
    "checkpoint_sequential",
    "detach_variable",
    "noop_context_fn",
    "set_checkpoint_early_stop",
]
