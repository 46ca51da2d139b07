"""``nn.Module`` scopes for ember.profiler, as PyTorch's Python tracer records them.

While a profile with ``with_modules`` or ``with_stack`` records (PyTorch's tracer records module
calls whenever it runs), ``Module.__call__`` comes here: each module call is a
``python_function`` event named ``nn.Module: <class>_<n>`` enclosing the module's ops, and the
open scopes are part of every op's ``stack``. ``n`` counts the instances of that class in the
order the profile first saw them called, as PyTorch numbers them. Outside such a profile
``RECORDERS`` is empty and ``Module.__call__`` pays one list test.
"""

from __future__ import annotations

import sys
import weakref

RECORDERS: list = []  # the Recorders of the profiles recording module scopes now


class ModuleNames:
    """``nn.Module: Linear_0``, ``nn.Module: Linear_1``...: one number per instance, per class,
    counted from 0 in each recording span."""

    def __init__(self):
        self.names: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self.counts: dict[type, int] = {}

    def __call__(self, module) -> str:
        name = self.names.get(module)
        if name is None:
            cls = type(module)
            number = self.counts.get(cls, 0)
            self.counts[cls] = number + 1
            name = self.names[module] = f"nn.Module: {cls.__name__}_{number}"
        return name


def module_id(name: str) -> int | None:
    """The instance number in a scope's name, PyTorch's "Python module id" trace argument."""
    if not name.startswith("nn.Module: "):
        return None
    return int(name.rsplit("_", 1)[1])


def call(module, args, kwargs):
    """``Module.__call__`` inside a recording profile: the call as usual, in a scope."""
    frame = sys._getframe()  # the tracer (with_stack) turns this call's frame into the scope
    opened = [(recorder, recorder.enter_module(module, frame)) for recorder in RECORDERS]
    try:
        compiled = module._compiled_call_impl
        return (compiled or module._call_impl)(*args, **kwargs)
    finally:
        for recorder, scope in reversed(opened):
            recorder.leave_module(scope)
