"""Helpers shared by the distributions, as torch.distributions.utils."""

from __future__ import annotations

from functools import update_wrapper
from numbers import Number

import ember
import ember.nn.functional as F

# (eps, tiny) per floating dtype, as torch.finfo reports them; ember has no finfo yet.
_FINFO = {
    "float16": (0.0009765625, 6.103515625e-05),
    "bfloat16": (0.0078125, 1.1754943508222875e-38),
    "float32": (1.1920928955078125e-07, 1.1754943508222875e-38),
    "float64": (2.220446049250313e-16, 2.2250738585072014e-308),
}


# torch.finfo(dtype).min
_FMIN = {
    "float16": -65504.0,
    "bfloat16": -3.3895313892515355e38,
    "float32": -3.4028234663852886e38,
    "float64": -1.7976931348623157e308,
}


def _finfo_key(dtype) -> str:
    return str(dtype).rsplit(".", 1)[-1]


def eps(dtype) -> float:
    """Machine epsilon of a floating ``dtype`` (``torch.finfo(dtype).eps``)."""
    return _FINFO[_finfo_key(dtype)][0]


def tiny(dtype) -> float:
    """Smallest normal number of a floating ``dtype`` (``torch.finfo(dtype).tiny``)."""
    return _FINFO[_finfo_key(dtype)][1]


def fmin(dtype) -> float:
    """Most negative finite number of a floating ``dtype`` (``torch.finfo(dtype).min``)."""
    return _FMIN[_finfo_key(dtype)]


def _probs_or_logits(probs, logits):
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")


def broadcast_all(*values):
    """Broadcast tensors and numbers to one shape; numbers take the tensors' dtype and device."""
    if not all(isinstance(v, (ember.Tensor, Number)) for v in values):
        raise ValueError("Input arguments must all be instances of numbers.Number, ember.Tensor.")
    if not all(isinstance(v, ember.Tensor) for v in values):
        options = {"dtype": ember.get_default_dtype()}
        for value in values:
            if isinstance(value, ember.Tensor):
                options = {"dtype": value.dtype, "device": value.device}
                break
        values = [v if isinstance(v, ember.Tensor) else ember.tensor(v, **options) for v in values]
    return ember.broadcast_tensors(*values)


def _standard_normal(shape, dtype, device):
    return ember.randn(tuple(shape), dtype=dtype, device=device)


def _uniform(shape, dtype, device, low=0.0, high=1.0):
    return ember.rand(tuple(shape), dtype=dtype, device=device) * (high - low) + low


def _sum_rightmost(value, dim: int):
    """Sum out the ``dim`` rightmost dimensions of ``value``."""
    if dim == 0:
        return value
    required_shape = tuple(value.shape[:-dim]) + (-1,)
    return value.reshape(required_shape).sum(-1)


def logits_to_probs(logits, is_binary: bool = False):
    if is_binary:
        return ember.sigmoid(logits)
    return F.softmax(logits, dim=-1)


def clamp_probs(probs):
    """Clamp probabilities into the open interval ``(eps, 1 - eps)``."""
    e = eps(probs.dtype)
    return probs.clamp(min=e, max=1 - e)


def probs_to_logits(probs, is_binary: bool = False):
    ps_clamped = clamp_probs(probs)
    if is_binary:
        return ember.log(ps_clamped) - ember.log1p(-ps_clamped)
    return ember.log(ps_clamped)


class lazy_property:  # noqa: N801 (torch.distributions.utils name)
    """A property computed once on first access and then stored on the instance."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        update_wrapper(self, wrapped)

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return _lazy_property_and_property(self.wrapped)
        with ember.enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


class _lazy_property_and_property(lazy_property, property):  # noqa: N801
    # Lets a class-level lookup (done by Distribution.__init__ validation) see a property.
    def __init__(self, wrapped):
        property.__init__(self, wrapped)


def _batch_shape(raw, broadcasted):
    """Batch shape of parameters ``raw`` after broadcasting: () when all were Python numbers."""
    if all(isinstance(r, Number) for r in raw):
        return ()
    return broadcasted[0].size()


def xlogy(x, y):
    """``x * log(y)``, 0 where x == 0 (as torch.xlogy)."""
    if not isinstance(x, ember.Tensor):
        x = ember.full_like(y, x)
    return ember.xlogy(x, y)


# ember.special's functions under the names the distributions use (PyTorch's modules call
# torch.lgamma / torch.digamma / torch.erfinv the same way).
lgamma = ember.lgamma
digamma = ember.digamma
erfinv = ember.erfinv
