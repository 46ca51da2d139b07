"""Signatures for the layer classes built from tables (activations, losses), so that
``inspect.signature`` and argument binding see PyTorch's names, order and defaults."""

from __future__ import annotations

import inspect

_KEYWORD = inspect.Parameter.POSITIONAL_OR_KEYWORD


def signature(required=(), defaults=(), keyword_only=()) -> inspect.Signature:
    """``(self, *required, *defaults, *, *keyword_only)``: names without defaults, then
    ``(name, default)`` pairs, then keyword-only ``(name, default)`` pairs."""
    params = [inspect.Parameter(name, _KEYWORD) for name in ("self", *required)]
    params += [inspect.Parameter(name, _KEYWORD, default=value) for name, value in defaults]
    params += [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=value)
        for name, value in keyword_only
    ]
    return inspect.Signature(params)
