"""Signatures for the layer classes built from tables (activations, losses), so that
``inspect.signature`` and argument binding see PyTorch's names, order and defaults."""

from __future__ import annotations

import inspect

_KEYWORD = inspect.Parameter.POSITIONAL_OR_KEYWORD


def signature(required=(), defaults=()) -> inspect.Signature:
    """``(self, *required, *defaults)``: names without defaults, then ``(name, default)`` pairs."""
    params = [inspect.Parameter(name, _KEYWORD) for name in ("self", *required)]
    params += [inspect.Parameter(name, _KEYWORD, default=value) for name, value in defaults]
    return inspect.Signature(params)
