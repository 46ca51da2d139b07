"""``ember.compile(module)``: an ``OptimizedModule`` around the original (PyTorch's class: the
original is ``_orig_mod``, its parameters appear under that prefix in ``state_dict``, other
attributes are read through)."""

from __future__ import annotations

from ember.nn.modules.module import Module


class OptimizedModule(Module):
    """A module whose calls run its original's compiled call."""

    def __init__(self, mod: Module, compiled) -> None:
        super().__init__()
        self._orig_mod = mod
        object.__setattr__(self, "_compiled", compiled)

    def forward(self, *args, **kwargs):
        return self._compiled(*args, **kwargs)

    def __getattr__(self, name: str):
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self.__dict__["_modules"]["_orig_mod"], name)

    def __repr__(self) -> str:
        inner = repr(self._orig_mod).replace("\n", "\n  ")
        return f"OptimizedModule(\n  (_orig_mod): {inner}\n)"
