"""Multivariate normal distribution, as torch.distributions.MultivariateNormal.

Every computation goes through the lower Cholesky factor ``scale_tril`` of the covariance (from
ember.linalg.cholesky when a covariance or precision matrix is given), as torch does: densities
solve triangular systems instead of inverting the covariance.
"""

from __future__ import annotations

import math

import ember

from . import constraints
from .distribution import Distribution
from .utils import _standard_normal, lazy_property

__all__ = ["MultivariateNormal"]


def _batch_mv(bmat, bvec):
    """Matrix-vector products of ``bmat`` (..., n, n) and ``bvec`` (..., n), batches broadcast."""
    return ember.matmul(bmat, bvec.unsqueeze(-1)).squeeze(-1)


def _batch_mahalanobis(bl, bx):
    """``x^T (L L^T)^{-1} x`` for factors ``bL`` (B..., n, n) and vectors ``bx`` (S..., B..., n).

    The leading sample dims of ``bx`` become right-hand-side columns of one triangular solve per
    factor, so ``bL`` is never copied once per sample.
    """
    n = bx.size(-1)
    batch = tuple(ember.broadcast_shapes(tuple(bl.shape[:-2]), tuple(bx.shape[:-1])))
    inner = batch[len(batch) - (bl.dim() - 2) :]
    count = math.prod(inner)
    flat_l = bl.expand(inner + (n, n)).reshape(count, n, n)
    flat_x = bx.expand(batch + (n,)).reshape(-1, count, n).permute(1, 2, 0)  # count x n x c
    maha = ember.linalg.solve_triangular(flat_l, flat_x, upper=False).pow(2).sum(-2)  # count x c
    return maha.t().reshape(batch)


def _precision_to_scale_tril(prec):
    # L = (flip(cholesky(flip(P)))^T)^{-1}: the lower factor of P^{-1} without inverting P.
    l_flip = ember.linalg.cholesky(ember.flip(prec, (-2, -1)))
    l_inv = ember.transpose(ember.flip(l_flip, (-2, -1)), -2, -1)
    eye = ember.eye(prec.shape[-1], dtype=prec.dtype, device=prec.device)
    return ember.linalg.solve_triangular(l_inv, eye, upper=False)


_MATRIX_PARAMETERS = ("covariance_matrix", "scale_tril", "precision_matrix")


def _scale_tril_of(covariance_matrix, precision_matrix, scale_tril):
    """The lower Cholesky factor of the covariance, from whichever of the three was given."""
    if scale_tril is not None:
        return scale_tril
    if covariance_matrix is not None:
        return ember.linalg.cholesky(covariance_matrix)
    return _precision_to_scale_tril(precision_matrix)


def _expand_matrices(old, new, shape):
    """Copy the matrix parameterizations ``old`` holds onto ``new``, expanded to ``shape``."""
    for name in _MATRIX_PARAMETERS:
        if name in old.__dict__:
            setattr(new, name, old.__dict__[name].expand(shape))


def _matrix_batch(name, matrix, loc):
    if matrix.dim() < 2:
        raise ValueError(
            f"{name} must be at least two-dimensional, with optional leading batch dimensions"
        )
    return ember.broadcast_shapes(tuple(matrix.shape[:-2]), tuple(loc.shape[:-1]))


class MultivariateNormal(Distribution):
    """Multivariate normal distribution with mean ``loc`` and a positive-definite covariance.

    The covariance is given as exactly one of ``covariance_matrix``, ``precision_matrix`` or its
    lower Cholesky factor ``scale_tril`` (the most efficient: everything is computed from it).

    Args:
        loc (Tensor): mean of the distribution, shape (..., n).
        covariance_matrix (Tensor): positive-definite covariance matrix, shape (..., n, n).
        precision_matrix (Tensor): positive-definite precision matrix, shape (..., n, n).
        scale_tril (Tensor): lower-triangular factor of the covariance with positive diagonal.

    Example:
        >>> m = MultivariateNormal(ember.zeros(2), ember.eye(2))
        >>> m.sample()  # normally distributed with mean [0, 0] and covariance I
    """

    arg_constraints = {
        "loc": constraints.real_vector,
        "covariance_matrix": constraints.positive_definite,
        "precision_matrix": constraints.positive_definite,
        "scale_tril": constraints.lower_cholesky,
    }
    support = constraints.real_vector
    has_rsample = True

    def __init__(
        self,
        loc,
        covariance_matrix=None,
        precision_matrix=None,
        scale_tril=None,
        validate_args: bool | None = None,
    ) -> None:
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        given = [m is not None for m in (covariance_matrix, precision_matrix, scale_tril)]
        if sum(given) != 1:
            raise ValueError(
                "Exactly one of covariance_matrix or precision_matrix or scale_tril may be "
                "specified."
            )
        if scale_tril is not None:
            batch_shape = _matrix_batch("scale_tril matrix", scale_tril, loc)
            self.scale_tril = scale_tril.expand(tuple(batch_shape) + (-1, -1))
        elif covariance_matrix is not None:
            batch_shape = _matrix_batch("covariance_matrix", covariance_matrix, loc)
            self.covariance_matrix = covariance_matrix.expand(tuple(batch_shape) + (-1, -1))
        else:
            batch_shape = _matrix_batch("precision_matrix", precision_matrix, loc)
            self.precision_matrix = precision_matrix.expand(tuple(batch_shape) + (-1, -1))
        self.loc = loc.expand(tuple(batch_shape) + (-1,))
        super().__init__(batch_shape, self.loc.shape[-1:], validate_args=validate_args)
        self._unbroadcasted_scale_tril = _scale_tril_of(
            covariance_matrix, precision_matrix, scale_tril
        )

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(MultivariateNormal, _instance)
        batch_shape = ember.Size(batch_shape)
        cov_shape = tuple(batch_shape) + tuple(self.event_shape) * 2
        new.loc = self.loc.expand(tuple(batch_shape) + tuple(self.event_shape))
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
        _expand_matrices(self, new, cov_shape)
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _matrix_shape(self):
        return tuple(self._batch_shape) + tuple(self._event_shape) * 2

    @lazy_property
    def scale_tril(self):
        return self._unbroadcasted_scale_tril.expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self):
        tril = self._unbroadcasted_scale_tril
        return ember.matmul(tril, tril.mT).expand(self._matrix_shape())

    @lazy_property
    def precision_matrix(self):
        return ember.cholesky_inverse(self._unbroadcasted_scale_tril).expand(self._matrix_shape())

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        shape = tuple(self._batch_shape) + tuple(self._event_shape)
        return self._unbroadcasted_scale_tril.pow(2).sum(-1).expand(shape)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        eps = _standard_normal(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + _batch_mv(self._unbroadcasted_scale_tril, eps)

    def _half_log_det(self):
        return self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        maha = _batch_mahalanobis(self._unbroadcasted_scale_tril, value - self.loc)
        n = self._event_shape[0]
        return -0.5 * (n * math.log(2 * math.pi) + maha) - self._half_log_det()

    def entropy(self):
        n = self._event_shape[0]
        h = 0.5 * n * (1.0 + math.log(2 * math.pi)) + self._half_log_det()
        return h if len(self._batch_shape) == 0 else h.expand(self._batch_shape)
