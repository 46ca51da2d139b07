"""``ember.autograd.Variable``: the legacy wrapper, now simply a Tensor (as in PyTorch, where
``Variable(t)`` returns a tensor and every tensor is a ``Variable``)."""

from __future__ import annotations

import warnings

from ember._tensor import Tensor


class _VariableMeta(type):
    def __instancecheck__(cls, other) -> bool:
        return isinstance(other, Tensor)


class Variable(metaclass=_VariableMeta):
    """``Variable(data, requires_grad=False)``: ``data`` without history (sharing its memory)
    that requires grad if asked. ``volatile`` is accepted and ignored, with PyTorch's warning."""

    def __new__(cls, data=None, requires_grad: bool = False, volatile: bool = False):
        if volatile:
            warnings.warn(
                "volatile was removed and now has no effect. Use `with torch.no_grad():` instead.",
                UserWarning,
                stacklevel=2,
            )
        if data is None:
            from ember import empty

            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        out = data.detach()
        return out.requires_grad_(requires_grad) if requires_grad else out
