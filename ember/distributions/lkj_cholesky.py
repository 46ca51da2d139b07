"""LKJ distribution over Cholesky factors of correlation matrices (torch's LKJCholesky)."""

from __future__ import annotations

import math

import ember

from . import constraints
from .dirichlet import Beta
from .distribution import Distribution
from .utils import broadcast_all, lgamma, tiny

__all__ = ["LKJCholesky"]


class LKJCholesky(Distribution):
    """LKJ distribution for lower Cholesky factors of ``dim x dim`` correlation matrices.

    The density of the correlation matrix ``L @ L.T`` is proportional to
    ``det(L @ L.T) ** (concentration - 1)``. Sampling uses the onion method (Ghosh and
    Henderson, 2003), as torch: each row is a Beta-distributed radius times a uniform direction.

    Args:
        dim (int): dimension of the matrices, at least 2.
        concentration (float or Tensor): concentration (shape) parameter, positive.

    Example:
        >>> l = LKJCholesky(3, 0.5)
        >>> l.sample()  # a 3 x 3 lower Cholesky factor of a correlation matrix
    """

    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim: int, concentration=1.0, validate_args: bool | None = None) -> None:
        if dim < 2:
            raise ValueError(
                f"Expected dim to be an integer greater than or equal to 2. Found dim={dim}."
            )
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        batch_shape = self.concentration.size()
        # Row i's squared radius is Beta(i / 2, marginal - (i - 1) / 2); rows 0 and 1 share
        # offset 0 so that the Beta batch has one entry per row.
        marginal_conc = self.concentration + 0.5 * (self.dim - 2)
        options = {"dtype": self.concentration.dtype, "device": self.concentration.device}
        offset = ember.arange(self.dim - 1, **options)
        offset = ember.cat([offset.new_zeros((1,)), offset])
        self._beta = Beta(offset + 0.5, marginal_conc.unsqueeze(-1) - 0.5 * offset)
        super().__init__(batch_shape, (dim, dim), validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LKJCholesky, _instance)
        batch_shape = ember.Size(batch_shape)
        new.dim = self.dim
        new.concentration = self.concentration.expand(batch_shape)
        new._beta = self._beta.expand(tuple(batch_shape) + (self.dim,))
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape=()):
        with ember.no_grad():
            y = self._beta.sample(sample_shape).unsqueeze(-1)
            shape = self._extended_shape(sample_shape)
            u_normal = ember.randn(shape, dtype=y.dtype, device=y.device).tril(-1)
            # Row 0 has no off-diagonal part (its norm is 0): it stays zero instead of 0 / 0.
            first_row = ember.arange(self.dim, device=y.device).unsqueeze(-1) == 0
            norm = u_normal.norm(dim=-1, keepdim=True)
            u_hypersphere = ember.where(first_row, 0.0, u_normal / norm)
            w = ember.sqrt(y) * u_hypersphere
            diag_elems = ember.clamp(1 - ember.sum(w**2, dim=-1), min=tiny(w.dtype)).sqrt()
            return w + ember.diag_embed(diag_elems)

    def log_prob(self, value):
        # Density of L (not of L @ L.T): det(L L^T)^(eta - 1) times the Jacobian of L -> L L^T,
        # prod_i L_ii^(dim - i); normalizer from Lewandowski, Kurowicka and Joe (2009).
        if self._validate_args:
            self._validate_sample(value)
        diag_elems = value.diagonal(dim1=-1, dim2=-2)[..., 1:]
        order = ember.arange(2, self.dim + 1, device=self.concentration.device)
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - order
        unnormalized_log_pdf = ember.sum(order * diag_elems.log(), dim=-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        denominator = lgamma(alpha) * dm1
        numerator = ember.mvlgamma(alpha - 0.5, dm1)
        pi_constant = 0.5 * dm1 * math.log(math.pi)
        return unnormalized_log_pdf - (pi_constant + numerator - denominator)
