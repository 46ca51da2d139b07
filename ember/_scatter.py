"""``scatter(..., reduce=)``: PyTorch's older reducing scatter, ``reduce='add'`` or
``'multiply'``, over a tensor ``src`` or a number ``value``. Without ``reduce`` the call is the
op table's ``scatter`` row; with it, the table's ``scatter_add`` and ``scatter_reduce(prod)``
(PyTorch records no derivative for these forms; ember's come from those rows)."""

from __future__ import annotations

import warnings

from ._surface import write_back
from ._tensor import Tensor
from .dispatcher import out as _out_arg
from .dispatcher.optable import OPS

_DEPRECATED = (
    "The reduce argument of torch.scatter with Tensor src is deprecated and will be removed in "
    "a future PyTorch release. Use torch.scatter_reduce instead for more reduction options."
)


def _reduced(input, dim, index, src, reduce: str, caller: int):
    """The reducing scatter; ``caller``: how many frames up the user's call is (the warning
    points there)."""
    if reduce not in ("add", "multiply"):
        raise RuntimeError("reduce argument must be either add or multiply.")
    if isinstance(src, Tensor):
        warnings.warn(_DEPRECATED, UserWarning, stacklevel=caller + 1)
    else:  # a number: PyTorch casts it to input's dtype (2.5 into int64 is 2)
        src = OPS["full"](index.shape, src, input.dtype, input.device)
    if reduce == "add":
        return OPS["scatter_add"](input, dim, index, src)
    return OPS["scatter_reduce"](input, dim, index, src, "prod")


def _scatter(input, dim, index, src, reduce, caller: int):
    if reduce is None:
        return OPS["scatter"](input, dim, index, src)
    return _reduced(input, dim, index, src, reduce, caller + 1)


def scatter(input, dim, index, src, *, reduce=None, out=None):
    """``torch.scatter``: a copy of ``input`` with ``src`` (a tensor, or a number for every
    place) written at ``index`` along ``dim``; ``reduce='add'`` or ``'multiply'`` combines it
    with what is there instead.

    Example:
        >>> ember.scatter(ember.zeros(3), 0, ember.tensor([0, 0]), 2.0, reduce="add")
        tensor([4., 0., 0.])
    """
    if out is None:
        return _scatter(input, dim, index, src, reduce, 2)
    compute = lambda: _scatter(input, dim, index, src, reduce, 4)  # noqa: E731 (in call)
    return _out_arg.call("scatter", OPS["scatter"], out, (input, dim, index, src), compute)


def _method(self, dim, index, src, *, reduce=None):
    return _scatter(self, dim, index, src, reduce, 2)


def scatter_(self, dim, index, src, *, reduce=None):
    if reduce is None:
        return OPS["scatter_"](self, dim, index, src)
    return write_back("scatter_", self, _reduced(self, dim, index, src, reduce, 2))


_method.__name__ = _method.__qualname__ = "scatter"
FUNCTIONS = {"scatter": scatter}
METHODS = {"scatter": _method, "scatter_": scatter_}
