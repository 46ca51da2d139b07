"""Hand-written frontends of the special functions: ``polygamma(n, input)``, whose PyTorch
signature puts the order first (the row, dispatcher/optable/special.py, takes ``(input, n)``,
the Tensor method's order ``x.polygamma(n)``), and the in-place forms of the composite rows."""

from __future__ import annotations

from ._surface import write_back
from .dispatcher.optable import OPS
from .dispatcher.out import call_op

_POLYGAMMA = OPS["polygamma"]


def _check_order(n) -> None:
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")


def polygamma(n: int, input, *, out=None):
    """The n-th derivative of the digamma function, ``polygamma(0, x) = digamma(x)``.

    Args:
        n: the order of the derivative, an integer >= 0.
        input: the input tensor.
        out: the output tensor (optional).

    Example:
        >>> ember.polygamma(1, ember.tensor([1.0, 0.5]))
        tensor([1.6449, 4.9348])
    """
    _check_order(n)
    if out is not None:
        return call_op(_POLYGAMMA, out, (input, n), None)
    return _POLYGAMMA(input, n)


def polygamma_method(self, n: int):
    _check_order(n)
    return _POLYGAMMA(self, n)


def polygamma_(self, n: int):
    _check_order(n)
    return OPS["polygamma_"](self, n)


def logit_(self, eps=None):
    """In-place ``logit`` (the row is a composite: computed, then copied back after PyTorch's
    check that the result casts to self's dtype: an integer self raises)."""
    return write_back("logit_", self, OPS["logit"](self, eps))


def mvlgamma_(self, p: int):
    return write_back("mvlgamma_", self, OPS["mvlgamma"](self, p))


FUNCTIONS = {"polygamma": polygamma}
METHODS = {
    "polygamma": polygamma_method,
    "polygamma_": polygamma_,
    "logit_": logit_,
    "mvlgamma_": mvlgamma_,
}
