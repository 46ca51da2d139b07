"""The decorators and helpers scripted code uses: ``ignore``, ``unused``, ``export``,
``is_scripting``, ``annotate``, ``Final`` (PyTorch's ``torch.jit`` names and behaviour).

Each decorator marks the function with a modifier the compiler reads; in eager Python they
change nothing (``is_scripting()`` is False, ``annotate`` returns its value).
"""

from __future__ import annotations

import enum
from typing import Final

__all__ = ["Final", "FunctionModifiers", "annotate", "export", "ignore", "is_scripting", "unused"]

_MODIFIER = "_torchscript_modifier"


class FunctionModifiers(enum.Enum):
    """How the compiler treats a function (PyTorch's enum)."""

    UNUSED = "unused (ignored and replaced with raising of an exception)"
    IGNORE = "ignore (leave as a call to Python, cannot be torch.jit.save'd)"
    EXPORT = "export (compile this function even if nothing calls it)"
    DEFAULT = "default (compile if called from a exported function / forward)"
    COPY_TO_SCRIPT_WRAPPER = (
        "if this method is not scripted, copy the python method onto the scripted model"
    )


def ignore(drop=False, **kwargs):
    """Leave a function or method as a call to Python (``@ember.jit.ignore``); with
    ``drop=True`` it behaves as ``unused``."""
    if callable(drop):
        drop.__dict__[_MODIFIER] = FunctionModifiers.IGNORE
        return drop
    if not isinstance(drop, bool):
        raise RuntimeError(
            f"Argument to @torch.jit.ignore must be a bool or a function but got {drop}"
        )
    modifier = FunctionModifiers.UNUSED if drop else FunctionModifiers.IGNORE

    def decorator(fn):
        fn.__dict__[_MODIFIER] = modifier
        return fn

    return decorator


def unused(fn):
    """Compile calls to ``fn`` as raising an exception (``@ember.jit.unused``): code that is
    not scriptable but never runs in the scripted model."""
    if isinstance(fn, property):
        for part in (fn.fget, fn.fset):
            if part is not None:
                part.__dict__[_MODIFIER] = FunctionModifiers.UNUSED
        return fn
    fn.__dict__[_MODIFIER] = FunctionModifiers.UNUSED
    return fn


def export(fn):
    """Compile this method of a scripted module as a method of its own (``@ember.jit.export``)."""
    fn.__dict__[_MODIFIER] = FunctionModifiers.EXPORT
    return fn


def modifier(fn) -> FunctionModifiers:
    fn = getattr(fn, "__func__", fn)
    return getattr(fn, _MODIFIER, FunctionModifiers.DEFAULT)


def is_scripting() -> bool:
    """True inside scripted code (the compiler folds the call to a constant), False in eager."""
    return False


def annotate(the_type, the_value):
    """Give ``the_value`` the static type ``the_type`` in scripted code (``[]`` or ``None``
    otherwise default to ``List[Tensor]`` and ``NoneType``); returns the value in eager."""
    return the_value
