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


def _tril_flat_index(n: int, diag: int, device):
    """Flat (row-major) positions of the lower triangle ``j < i + diag + 1`` of an n x n matrix."""
    flat = [i * n + j for i in range(n) for j in range(n) if j < i + diag + 1]
    return ember.tensor(flat, dtype=ember.int64, device=device)


def tril_matrix_to_vec(mat, diag: int = 0):
    """The lower-triangular elements of (a batch of) D x D matrices, in row order."""
    n = mat.shape[-1]
    if diag < -n or diag >= n:
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    flat = mat.reshape(tuple(mat.shape[:-2]) + (n * n,))
    return flat.index_select(-1, _tril_flat_index(n, diag, mat.device))


def vec_to_tril_matrix(vec, diag: int = 0):
    """(A batch of) lower-triangular D x D matrices holding ``vec``'s elements in row order."""
    # Positive root of D**2 + (1 + 2 diag) D - |diag| (diag + 1) - 2 len(vec) = 0.
    b = 1 + 2 * diag
    n = (-b + (b**2 + 8 * vec.shape[-1] + 4 * abs(diag) * (diag + 1)) ** 0.5) / 2
    if round(n) - n > eps(vec.dtype):
        raise ValueError(
            f"The size of last dimension is {vec.shape[-1]} which cannot be expressed as "
            "the lower triangular part of a square D x D matrix."
        )
    n = round(n)
    # Gather from vec with one trailing zero: positions off the triangle read the zero.
    padded = ember.cat([vec, vec.new_zeros(tuple(vec.shape[:-1]) + (1,))], -1)
    source = ember.full((n * n,), vec.shape[-1], dtype=ember.int64, device=vec.device)
    flat = _tril_flat_index(n, diag, vec.device)
    source[flat] = ember.arange(flat.numel(), device=vec.device)
    return padded.index_select(-1, source).reshape(tuple(vec.shape[:-1]) + (n, n))


# ember.special's functions under the names the distributions use (PyTorch's modules call
# torch.lgamma / torch.digamma / torch.erfinv the same way).
lgamma = ember.lgamma
digamma = ember.digamma
erfinv = ember.erfinv
