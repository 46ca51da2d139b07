"""Padding layers (constant, zero, reflection, replication, circular; 1-D to 3-D), built from
one table: each stores its padding as a 2n-tuple and calls F.pad, as PyTorch's do."""

from __future__ import annotations

from .. import functional as F
from .module import Module


def _expand(padding, n: int) -> tuple:
    """An int repeated to a ``2 n``-tuple; a sequence as a tuple (PyTorch's _ntuple)."""
    if isinstance(padding, int):
        return (padding,) * (2 * n)
    return tuple(padding)


class _PadNd(Module):
    """``F.pad(input, padding, _mode, value)``; the input rank is checked where PyTorch does."""

    _mode = "constant"
    _dims = 1
    _check_rank = False

    def __init__(self, padding):
        super().__init__()
        self.padding = _expand(padding, self._dims)

    def forward(self, input):
        if self._check_rank and input.ndim not in (self._dims + 1, self._dims + 2):
            raise ValueError(
                f"expected {self._dims + 1}D or {self._dims + 2}D input (got {input.ndim}D input)"
            )
        if self._mode == "constant":
            return F.pad(input, self.padding, "constant", self.value)
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    def __init__(self, padding, value: float):
        super().__init__(padding)
        self.value = value

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class _ZeroPadNd(_ConstantPadNd):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


# class prefix -> (base, F.pad mode, whether forward checks the input rank)
_KINDS = {
    "Constant": (_ConstantPadNd, "constant", False),
    "Zero": (_ZeroPadNd, "constant", False),
    "Reflection": (_PadNd, "reflect", False),
    "Replication": (_PadNd, "replicate", False),
    "Circular": (_PadNd, "circular", True),
}

__all__ = []
for _prefix, (_base, _mode, _check) in _KINDS.items():
    for _dims in (1, 2, 3):
        _name = f"{_prefix}Pad{_dims}d"
        globals()[_name] = type(
            _name,
            (_base,),
            {
                "_mode": _mode,
                "_dims": _dims,
                "_check_rank": _check,
                "__doc__": f"Pad the last {_dims} dim(s) of the input in '{_mode}' mode.",
                "__module__": __name__,
            },
        )
        __all__.append(_name)
del _prefix, _base, _mode, _check, _dims, _name
