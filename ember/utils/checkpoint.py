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
    get_device_states,
    noop_context_fn,
    set_checkpoint_debug_enabled,
    set_checkpoint_early_stop,
    set_device_states,
)
from ember.autograd.checkpoint_selective import (
    CheckpointPolicy,
    SelectiveCheckpointContext,
    create_selective_checkpoint_contexts,
)

__all__ = [
    "CheckpointPolicy",
    "SelectiveCheckpointContext",
    "create_selective_checkpoint_contexts",
    "CheckpointError",
    "CheckpointFunction",
    "DefaultDeviceType",
    "check_backward_validity",
    "checkpoint",
    "checkpoint_sequential",
    "detach_variable",
    "get_device_states",
    "noop_context_fn",
    "set_checkpoint_debug_enabled",
    "set_checkpoint_early_stop",
    "set_device_states",
]
