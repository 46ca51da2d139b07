"""Utilities with PyTorch's names: ``ember.utils.data`` (datasets, samplers, DataLoader),
``ember.utils.checkpoint`` (activation checkpointing), ``ember.utils.dlpack``."""

from .._swap import swap_tensors
from . import _pytree, benchmark, checkpoint, data, dlpack, hooks

__all__ = ["benchmark", "checkpoint", "data", "dlpack", "hooks", "swap_tensors"]
