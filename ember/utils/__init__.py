"""Utilities with PyTorch's names: ``ember.utils.data`` (datasets, samplers, DataLoader),
``ember.utils.checkpoint`` (activation checkpointing)."""

from . import benchmark, checkpoint, data

__all__ = ["benchmark", "checkpoint", "data"]
