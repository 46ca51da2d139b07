"""Multivariate normal with low-rank plus diagonal covariance (torch's LowRankMultivariateNormal).

``covariance = W @ W.T + diag(D)`` is never factored whole: the Woodbury identity and the matrix
determinant lemma reduce log_prob and entropy to the Cholesky factor of the small ``m x m``
capacitance matrix ``I + W.T @ diag(D)^-1 @ W``.
"""

from __future__ import annotations

import math

import ember

from . import constraints
from .distribution import Distribution
from .multivariate_normal import _batch_mahalanobis, _batch_mv
from .utils import _standard_normal, lazy_property

__all__ = ["LowRankMultivariateNormal"]


def _eye_like(k):
    return ember.eye(k.shape[-1], dtype=k.dtype, device=k.device)


def _batch_capacitance_tril(w, d):
    """Cholesky factor of ``I + W.T @ inv(D) @ W`` for batches of W (..., n, m) and D (..., n)."""
    k = ember.matmul(w.mT / d.unsqueeze(-2), w)
    return ember.linalg.cholesky(k + _eye_like(k))


def _batch_lowrank_logdet(w, d, capacitance_tril):
    """``log|W @ W.T + D| = log|C| + log|D|`` (matrix determinant lemma)."""
    return 2 * capacitance_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1) + d.log().sum(-1)


def _batch_lowrank_mahalanobis(w, d, x, capacitance_tril):
    """``x.T @ inv(W @ W.T + D) @ x`` through the Woodbury identity."""
    wt_dinv_x = _batch_mv(w.mT / d.unsqueeze(-2), x)
    return (x.pow(2) / d).sum(-1) - _batch_mahalanobis(capacitance_tril, wt_dinv_x)


def _check_shapes(loc, cov_factor, cov_diag):
    if loc.dim() < 1:
        raise ValueError("loc must be at least one-dimensional.")
    event_shape = loc.shape[-1:]
    if cov_factor.dim() < 2:
        raise ValueError(
            "cov_factor must be at least two-dimensional, with optional leading batch dimensions"
        )
    if cov_factor.shape[-2:-1] != event_shape:
        raise ValueError(f"cov_factor must be a batch of matrices with shape {event_shape[0]} x m")
    if cov_diag.shape[-1:] != event_shape:
        raise ValueError(f"cov_diag must be a batch of vectors with shape {event_shape}")


class LowRankMultivariateNormal(Distribution):
    """Multivariate normal with covariance ``cov_factor @ cov_factor.T + diag(cov_diag)``.

    Args:
        loc (Tensor): mean, shape ``batch_shape + event_shape``.
        cov_factor (Tensor): low-rank factor of the covariance, shape
            ``batch_shape + event_shape + (rank,)``.
        cov_diag (Tensor): diagonal part of the covariance, shape ``batch_shape + event_shape``.

    Example:
        >>> m = LowRankMultivariateNormal(
        ...     ember.zeros(2), ember.tensor([[1.0], [0.0]]), ember.ones(2)
        ... )
        >>> m.sample()  # mean [0, 0], covariance [[2, 0], [0, 1]]
    """

    arg_constraints = {
        "loc": constraints.real_vector,
        "cov_factor": constraints.independent(constraints.real, 2),
        "cov_diag": constraints.independent(constraints.positive, 1),
    }
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, cov_factor, cov_diag, validate_args: bool | None = None) -> None:
        _check_shapes(loc, cov_factor, cov_diag)
        event_shape = loc.shape[-1:]
        try:
            loc_, self.cov_factor, cov_diag_ = ember.broadcast_tensors(
                loc.unsqueeze(-1), cov_factor, cov_diag.unsqueeze(-1)
            )
        except RuntimeError as e:
            raise ValueError(
                f"Incompatible batch shapes: loc {loc.shape}, cov_factor {cov_factor.shape}, "
                f"cov_diag {cov_diag.shape}"
            ) from e
        self.loc = loc_[..., 0]
        self.cov_diag = cov_diag_[..., 0]
        self._unbroadcasted_cov_factor = cov_factor
        self._unbroadcasted_cov_diag = cov_diag
        self._capacitance_tril = _batch_capacitance_tril(cov_factor, cov_diag)
        super().__init__(self.loc.shape[:-1], event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LowRankMultivariateNormal, _instance)
        loc_shape = tuple(batch_shape) + tuple(self.event_shape)
        new.loc = self.loc.expand(loc_shape)
        new.cov_diag = self.cov_diag.expand(loc_shape)
        new.cov_factor = self.cov_factor.expand(loc_shape + tuple(self.cov_factor.shape[-1:]))
        new._unbroadcasted_cov_factor = self._unbroadcasted_cov_factor
        new._unbroadcasted_cov_diag = self._unbroadcasted_cov_diag
        new._capacitance_tril = self._capacitance_tril
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _matrix_shape(self):
        return tuple(self._batch_shape) + tuple(self._event_shape) * 2

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @lazy_property
    def variance(self):
        w, d = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        return (w.pow(2).sum(-1) + d).expand(tuple(self._batch_shape) + tuple(self._event_shape))

    @lazy_property
    def scale_tril(self):
        # cholesky(W W^T + D) = sqrt(D) cholesky(I + D^-1/2 W W^T D^-1/2): better conditioned.
        sqrt_d = self._unbroadcasted_cov_diag.sqrt().unsqueeze(-1)
        dinvsqrt_w = self._unbroadcasted_cov_factor / sqrt_d
        k = ember.matmul(dinvsqrt_w, dinvsqrt_w.mT)
        return (sqrt_d * ember.linalg.cholesky(k + _eye_like(k))).expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self):
        w = self._unbroadcasted_cov_factor
        cov = ember.matmul(w, w.mT) + ember.diag_embed(self._unbroadcasted_cov_diag)
        return cov.expand(self._matrix_shape())

    @lazy_property
    def precision_matrix(self):
        w, d = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        a = ember.linalg.solve_triangular(
            self._capacitance_tril, w.mT / d.unsqueeze(-2), upper=False
        )
        precision = ember.diag_embed(d.reciprocal()) - ember.matmul(a.mT, a)
        return precision.expand(self._matrix_shape())

    def rsample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        options = {"dtype": self.loc.dtype, "device": self.loc.device}
        eps_w = _standard_normal(shape[:-1] + tuple(self.cov_factor.shape[-1:]), **options)
        eps_d = _standard_normal(shape, **options)
        w, d = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        return self.loc + _batch_mv(w, eps_w) + d.sqrt() * eps_d

    def _log_det(self):
        w, d = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        return _batch_lowrank_logdet(w, d, self._capacitance_tril)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        w, d = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        maha = _batch_lowrank_mahalanobis(w, d, value - self.loc, self._capacitance_tril)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + self._log_det() + maha)

    def entropy(self):
        h = 0.5 * (self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + self._log_det())
        return h if len(self._batch_shape) == 0 else h.expand(self._batch_shape)
