"""Utilities with PyTorch's names: ``ember.utils.data`` (datasets, samplers, DataLoader),
``ember.utils.checkpoint`` (activation checkpointing)."""

from .._swap import swap_tensors
from . import _pytree, benchmark, checkpoint, data, hooks

__all__ = ["benchmark", "checkpoint", "data", "hooks", "swap_tensors"]
