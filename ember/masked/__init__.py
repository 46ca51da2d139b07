"""ember.masked: PyTorch's ``torch.masked`` reductions and normalizations on plain tensors.

Each function takes ``mask=`` (a bool tensor broadcastable to the input; True keeps an element,
None keeps all), replaces the masked-out elements with the op's identity (0 for sum, -inf for
amax and softmax...) and runs the plain op, as torch/masked/_ops.py does for strided tensors.
They are compositions of ember ops, so gradients and every device come with them; the
masked-out elements get a zero gradient. MaskedTensor is not provided.

Example:
    >>> x = ember.tensor([[1.0, 2.0, 9.0], [4.0, 5.0, 6.0]])
    >>> m = ember.tensor([[True, True, False], [True, True, True]])
    >>> ember.masked.amax(x, 1, mask=m)
    tensor([2., 6.])
"""

from __future__ import annotations

from ._normalizations import (
    cumprod,
    cumsum,
    log_softmax,
    logaddexp,
    normalize,
    softmax,
    softmin,
)
from ._reductions import amax, amin, argmax, argmin, logsumexp, norm, prod, sum
from ._statistics import mean, median, std, var

__all__ = [
    "amax",
    "amin",
    "argmax",
    "argmin",
    "cumprod",
    "cumsum",
    "log_softmax",
    "logaddexp",
    "logsumexp",
    "mean",
    "median",
    "norm",
    "normalize",
    "prod",
    "softmax",
    "softmin",
    "std",
    "sum",
    "var",
]
