"""Transforms onto constrained vector and matrix spaces: simplex and lower Cholesky factors."""

from __future__ import annotations

import ember
import ember.nn.functional as F

from . import constraints
from ._transforms_elementwise import _clipped_sigmoid, _ParameterFree
from .utils import tiny

__all__ = ["LowerCholeskyTransform", "SoftmaxTransform", "StickBreakingTransform"]


def _at_least_1d(shape):
    if len(shape) < 1:
        raise ValueError("Too few dimensions on input")


class SoftmaxTransform(_ParameterFree):
    """Unconstrained space to the simplex via ``y = exp(x)`` then normalizing (not bijective)."""

    domain = constraints.real_vector
    codomain = constraints.simplex

    def _call(self, x):
        probs = (x - x.max(-1, True)[0]).exp()
        return probs / probs.sum(-1, True)

    def _inverse(self, y):
        return y.log()

    def forward_shape(self, shape):
        _at_least_1d(shape)
        return shape

    def inverse_shape(self, shape):
        _at_least_1d(shape)
        return shape


def _stick_offset(x, extra: int):
    # Offsets log(K - k) that make x = 0 map to the simplex's centre.
    return x.shape[-1] + extra - x.new_ones(x.shape[-1]).cumsum(-1)


class StickBreakingTransform(_ParameterFree):
    """Unconstrained space to the simplex of one more dimension, by a stick-breaking process.

    Bijective, suitable for HMC; mixes coordinates more than SoftmaxTransform.
    """

    domain = constraints.real_vector
    codomain = constraints.simplex
    bijective = True

    def _call(self, x):
        z = _clipped_sigmoid(x - _stick_offset(x, 1).log())
        z_cumprod = (1 - z).cumprod(-1)
        return F.pad(z, [0, 1], value=1) * F.pad(z_cumprod, [1, 0], value=1)

    def _inverse(self, y):
        y_crop = y[..., :-1]
        offset = y.shape[-1] - y.new_ones(y_crop.shape[-1]).cumsum(-1)
        sf = ember.clamp(1 - y_crop.cumsum(-1), min=tiny(y.dtype))
        return y_crop.log() - sf.log() + offset.log()

    def log_abs_det_jacobian(self, x, y):
        x = x - _stick_offset(x, 1).log()
        return (-x + F.logsigmoid(x) + y[..., :-1].log()).sum(-1)

    def forward_shape(self, shape):
        _at_least_1d(shape)
        return tuple(shape[:-1]) + (shape[-1] + 1,)

    def inverse_shape(self, shape):
        _at_least_1d(shape)
        return tuple(shape[:-1]) + (shape[-1] - 1,)


def _diag_embed(v):
    # ember has no diag_embed yet: scatter the vector onto an identity's diagonal.
    n = v.shape[-1]
    return v.unsqueeze(-1) * ember.eye(n, dtype=v.dtype, device=v.device)


class LowerCholeskyTransform(_ParameterFree):
    """Unconstrained matrices to lower-triangular ones with a positive diagonal (exp of it)."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.lower_cholesky

    def _call(self, x):
        return x.tril(-1) + _diag_embed(x.diagonal(dim1=-2, dim2=-1).exp())

    def _inverse(self, y):
        return y.tril(-1) + _diag_embed(y.diagonal(dim1=-2, dim2=-1).log())
