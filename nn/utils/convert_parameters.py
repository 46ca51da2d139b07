"""Flatten parameters into one vector and back."""

from __future__ import annotations

import ember


def parameters_to_vector(parameters):
    """One 1-D tensor with every parameter's values, in order."""
    return ember.cat([p.reshape(-1) for p in parameters])


def vector_to_parameters(vec, parameters) -> None:
    """Copy consecutive slices of ``vec`` into ``parameters`` (replacing their data)."""
    if not isinstance(vec, ember.Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    offset = 0
    for param in parameters:
        count = param.numel()
        param.data = vec[offset : offset + count].view_as(param).data
        offset += count
