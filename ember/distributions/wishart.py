"""Wishart distribution over positive-definite matrices, as torch.distributions.Wishart."""

from __future__ import annotations

import math
import warnings
from numbers import Number

import ember

from . import constraints
from .exp_family import ExponentialFamily
from .gamma import Chi2
from .multivariate_normal import _expand_matrices, _scale_tril_of
from .utils import digamma, eps, lazy_property, vec_to_tril_matrix

__all__ = ["Wishart"]

_LOG_2 = math.log(2)


def _mvdigamma(x, p: int):
    """The multivariate digamma function: sum of digamma(x - i / 2) for i < p."""
    if not bool(x.gt((p - 1) / 2).all()):
        raise AssertionError("Wrong domain for multivariate digamma function.")
    halves = ember.arange(p, dtype=x.dtype, device=x.device).div(2)
    return digamma(x.unsqueeze(-1) - halves.expand(tuple(x.shape) + (-1,))).sum(-1)


def _chi2_of_rows(df, p, scale_tril, batch_shape):
    # Bartlett: the squared diagonal of the random factor has df - i degrees of freedom in row i.
    rows = ember.arange(p, dtype=scale_tril.dtype, device=scale_tril.device)
    return Chi2(df=df.unsqueeze(-1) - rows.expand(tuple(batch_shape) + (-1,)))


class Wishart(ExponentialFamily):
    """Wishart distribution with ``df`` degrees of freedom and a positive-definite scale matrix.

    The scale is given as exactly one of ``covariance_matrix``, ``precision_matrix`` or
    ``scale_tril``, as for MultivariateNormal. Samples use the Bartlett decomposition.

    Args:
        df (float or Tensor): degrees of freedom, greater than (dimension - 1).
        covariance_matrix (Tensor): positive-definite scale matrix.
        precision_matrix (Tensor): positive-definite inverse of the scale matrix.
        scale_tril (Tensor): lower Cholesky factor of the scale matrix with positive diagonal.

    Example:
        >>> m = Wishart(ember.tensor([2.0]), covariance_matrix=ember.eye(2))
        >>> m.sample()  # a 2 x 2 positive-definite matrix
    """

    support = constraints.positive_definite
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def arg_constraints(self):
        return {
            "covariance_matrix": constraints.positive_definite,
            "precision_matrix": constraints.positive_definite,
            "scale_tril": constraints.lower_cholesky,
            "df": constraints.greater_than(self.event_shape[-1] - 1),
        }

    def __init__(
        self,
        df,
        covariance_matrix=None,
        precision_matrix=None,
        scale_tril=None,
        validate_args: bool | None = None,
    ) -> None:
        given = [p for p in (covariance_matrix, precision_matrix, scale_tril) if p is not None]
        if len(given) != 1:
            raise AssertionError(
                "Exactly one of covariance_matrix or precision_matrix or scale_tril may be "
                "specified."
            )
        param = given[0]
        if param.dim() < 2:
            raise ValueError(
                "scale_tril must be at least two-dimensional, with optional leading batch "
                "dimensions"
            )
        if isinstance(df, Number):
            batch_shape = tuple(param.shape[:-2])
            self.df = ember.tensor(df, dtype=param.dtype, device=param.device)
        else:
            batch_shape = tuple(ember.broadcast_shapes(tuple(param.shape[:-2]), tuple(df.shape)))
            self.df = df.expand(batch_shape)
        event_shape = tuple(param.shape[-2:])
        p = event_shape[-1]
        if bool(self.df.le(p - 1).any()):
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = {p - 1}.")
        name = "scale_tril" if scale_tril is not None else None
        name = name or (
            "covariance_matrix" if covariance_matrix is not None else "precision_matrix"
        )
        setattr(self, name, param.expand(batch_shape + (-1, -1)))
        if bool(self.df.lt(p).any()):
            warnings.warn(
                "Low df values detected. Singular samples are highly likely to occur for "
                "ndim - 1 < df < ndim.",
                stacklevel=2,
            )
        super().__init__(batch_shape, event_shape, validate_args=validate_args)
        self._batch_dims = [-(x + 1) for x in range(len(self._batch_shape))]
        self._unbroadcasted_scale_tril = _scale_tril_of(
            covariance_matrix, precision_matrix, scale_tril
        )
        self._dist_chi2 = _chi2_of_rows(self.df, p, self._unbroadcasted_scale_tril, batch_shape)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Wishart, _instance)
        batch_shape = ember.Size(batch_shape)
        cov_shape = tuple(batch_shape) + tuple(self.event_shape)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril.expand(cov_shape)
        new.df = self.df.expand(batch_shape)
        new._batch_dims = [-(x + 1) for x in range(len(batch_shape))]
        _expand_matrices(self, new, cov_shape)
        p = self.event_shape[-1]
        new._dist_chi2 = _chi2_of_rows(new.df, p, new._unbroadcasted_scale_tril, batch_shape)
        ExponentialFamily.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _matrix_shape(self):
        return tuple(self._batch_shape) + tuple(self._event_shape)

    @lazy_property
    def scale_tril(self):
        return self._unbroadcasted_scale_tril.expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self):
        tril = self._unbroadcasted_scale_tril
        return (tril @ tril.transpose(-2, -1)).expand(self._matrix_shape())

    @lazy_property
    def precision_matrix(self):
        tril = self._unbroadcasted_scale_tril
        identity = ember.eye(self._event_shape[-1], device=tril.device, dtype=tril.dtype)
        return ember.cholesky_solve(identity, tril).expand(self._matrix_shape())

    def _df_matrix(self, df):
        return df.view(tuple(self._batch_shape) + (1, 1))

    @property
    def mean(self):
        return self._df_matrix(self.df) * self.covariance_matrix

    @property
    def mode(self):
        factor = self.df - self.covariance_matrix.shape[-1] - 1
        factor = ember.where(factor <= 0, math.nan, factor)
        return self._df_matrix(factor) * self.covariance_matrix

    @property
    def variance(self):
        cov = self.covariance_matrix
        diag = cov.diagonal(dim1=-2, dim2=-1)
        return self._df_matrix(self.df) * (cov.pow(2) + diag.unsqueeze(-1) * diag.unsqueeze(-2))

    def _bartlett_sampling(self, sample_shape=()):
        p = self._event_shape[-1]
        chi = self._dist_chi2.rsample(sample_shape).sqrt()
        diagonal = ember.diag_embed(chi.clamp(min=eps(chi.dtype)))
        below_shape = tuple(sample_shape) + tuple(self._batch_shape) + (p * (p - 1) // 2,)
        below = ember.randn(below_shape, dtype=chi.dtype, device=chi.device)
        chol = self._unbroadcasted_scale_tril @ (diagonal + vec_to_tril_matrix(below, diag=-1))
        return chol @ chol.transpose(-2, -1)

    def rsample(self, sample_shape=(), max_try_correction=None):
        """Samples by the Bartlett decomposition; singular ones (rare, for df < ndim) are
        redrawn up to ``max_try_correction`` times (default 10), as torch."""
        max_try_correction = 10 if max_try_correction is None else max_try_correction
        sample = self._bartlett_sampling(sample_shape)
        is_singular = ~self.support.check(sample)
        if bool(is_singular.any()):
            warnings.warn("Singular sample detected.", stacklevel=2)
            for _ in range(max_try_correction):
                redraw = is_singular.reshape(tuple(is_singular.shape) + (1, 1))
                sample = ember.where(redraw, self._bartlett_sampling(sample_shape), sample)
                is_singular = ~self.support.check(sample)
                if not bool(is_singular.any()):
                    break
        return sample

    def _log_scale_det(self):
        p = self._event_shape[-1]
        half_log_det = self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        return p * _LOG_2 / 2 + half_log_det

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        nu, p = self.df, self._event_shape[-1]
        trace = ember.cholesky_solve(value, self._unbroadcasted_scale_tril)
        return (
            -nu * self._log_scale_det()
            - ember.mvlgamma(nu / 2, p=p)
            + (nu - p - 1) / 2 * ember.linalg.slogdet(value).logabsdet
            - trace.diagonal(dim1=-2, dim2=-1).sum(dim=-1) / 2
        )

    def entropy(self):
        nu, p = self.df, self._event_shape[-1]
        return (
            (p + 1) * self._log_scale_det()
            + ember.mvlgamma(nu / 2, p=p)
            - (nu - p - 1) / 2 * _mvdigamma(nu / 2, p=p)
            + nu * p / 2
        )

    @property
    def _natural_params(self):
        nu, p = self.df, self._event_shape[-1]
        return -self.precision_matrix / 2, (nu - p - 1) / 2

    def _log_normalizer(self, x, y):
        p = self._event_shape[-1]
        return (y + (p + 1) / 2) * (
            -ember.linalg.slogdet(-2 * x).logabsdet + _LOG_2 * p
        ) + ember.mvlgamma(y + (p + 1) / 2, p=p)
