"""``torch.overrides``: the ``__torch_function__`` protocol's helpers, for libraries whose
tensor-like types define it (ember's own Tensor does not override functions; its subclasses
and these helpers work as PyTorch's do for such types)."""

from __future__ import annotations

import functools

from ._tensor import Tensor
from .nn.functional._overrides import (
    handle_torch_function,
    has_torch_function,
    has_torch_function_unary,
    has_torch_function_variadic,
)

__all__ = [
    "handle_torch_function",
    "has_torch_function",
    "has_torch_function_unary",
    "has_torch_function_variadic",
    "is_tensor_like",
    "is_tensor_method_or_property",
    "wrap_torch_function",
]


def is_tensor_like(inp) -> bool:
    """Whether ``inp`` is a Tensor or of a type defining ``__torch_function__``."""
    return isinstance(inp, Tensor) or hasattr(inp, "__torch_function__")


@functools.cache
def _tensor_members() -> frozenset:
    members = set()
    for cls in Tensor.__mro__:
        for value in vars(cls).values():
            members.add(id(value.fget) if isinstance(value, property) else id(value))
    return frozenset(members)


def is_tensor_method_or_property(func) -> bool:
    """Whether ``func`` is a method of Tensor or a property's getter (``Tensor.add``, not
    ``ember.add``): the first argument ``__torch_function__`` receives is then ``self``."""
    return id(func) in _tensor_members() or getattr(func, "__name__", None) == "__get__"


def wrap_torch_function(dispatcher):
    """A decorator: the function defers to ``__torch_function__`` when one of the arguments
    ``dispatcher(*args, **kwargs)`` names overrides it.

    Example:
        >>> def dispatcher(a):
        ...     return (a,)
        >>> @wrap_torch_function(dispatcher)
        ... def func(a):
        ...     return a + 0
    """

    def inner(func):
        @functools.wraps(func)
        def wrapped(*args, **kwargs):
            relevant_args = dispatcher(*args, **kwargs)
            if has_torch_function(relevant_args):
                return handle_torch_function(wrapped, relevant_args, *args, **kwargs)
            return func(*args, **kwargs)

        return wrapped

    return inner
