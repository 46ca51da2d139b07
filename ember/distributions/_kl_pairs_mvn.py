"""Closed-form KL divergences between (low-rank) multivariate normals, torch's formulas.

All four pairs work on Cholesky factors (of the covariance, or of the low-rank capacitance
matrix), so no covariance is ever inverted.
"""

from __future__ import annotations

import ember

from .kl import register_kl
from .lowrank_multivariate_normal import (
    LowRankMultivariateNormal,
    _batch_lowrank_logdet,
    _batch_lowrank_mahalanobis,
)
from .multivariate_normal import MultivariateNormal, _batch_mahalanobis

# torch's messages carry the indentation of its continued string literal; kept for equal text.
_GAP = " " * 26


def _check_events(p, q, kind):
    if p.event_shape != q.event_shape:
        raise ValueError(
            f"KL-divergence between two {kind} with{_GAP}different event shapes cannot be computed"
        )


def _batch_trace_xxt(bmat):
    """trace(X @ X.T) for a batch of matrices: the sum of squares of each."""
    return bmat.pow(2).sum((-2, -1))


def _half_log_det(scale_tril):
    return scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)


def _lowrank_logdet(p):
    return _batch_lowrank_logdet(
        p._unbroadcasted_cov_factor, p._unbroadcasted_cov_diag, p._capacitance_tril
    )


def _lowrank_mahalanobis(q, diff):
    w, d = q._unbroadcasted_cov_factor, q._unbroadcasted_cov_diag
    return _batch_lowrank_mahalanobis(w, d, diff, q._capacitance_tril)


def _woodbury_factor(q):
    """A = C^-1/2 W^T D^-1, so that inv(cov_q) = D^-1 - A^T A."""
    qwt_qdinv = q._unbroadcasted_cov_factor.mT / q._unbroadcasted_cov_diag.unsqueeze(-2)
    return ember.linalg.solve_triangular(q._capacitance_tril, qwt_qdinv, upper=False)


def _broadcast_matrices(a, b):
    batch = tuple(ember.broadcast_shapes(tuple(a.shape[:-2]), tuple(b.shape[:-2])))
    return a.expand(batch + tuple(a.shape[-2:])), b.expand(batch + tuple(b.shape[-2:]))


@register_kl(LowRankMultivariateNormal, LowRankMultivariateNormal)
def _kl_lowrankmultivariatenormal_lowrankmultivariatenormal(p, q):
    _check_events(p, q, "Low Rank Multivariate Normals")
    term1 = _lowrank_logdet(q) - _lowrank_logdet(p)
    term3 = _lowrank_mahalanobis(q, q.loc - p.loc)
    a = _woodbury_factor(q)
    p_w, p_d = p._unbroadcasted_cov_factor, p._unbroadcasted_cov_diag
    q_d = q._unbroadcasted_cov_diag
    term21 = (p_d / q_d).sum(-1)
    term22 = _batch_trace_xxt(p_w * q_d.rsqrt().unsqueeze(-1))
    term23 = _batch_trace_xxt(a * p_d.sqrt().unsqueeze(-2))
    term24 = _batch_trace_xxt(a.matmul(p_w))
    term2 = term21 + term22 - term23 - term24
    return 0.5 * (term1 + term2 + term3 - p.event_shape[0])


@register_kl(MultivariateNormal, LowRankMultivariateNormal)
def _kl_multivariatenormal_lowrankmultivariatenormal(p, q):
    _check_events(p, q, "(Low Rank) Multivariate Normals")
    p_l = p._unbroadcasted_scale_tril
    term1 = _lowrank_logdet(q) - 2 * _half_log_det(p_l)
    term3 = _lowrank_mahalanobis(q, q.loc - p.loc)
    a = _woodbury_factor(q)
    term21 = _batch_trace_xxt(p_l * q._unbroadcasted_cov_diag.rsqrt().unsqueeze(-1))
    term22 = _batch_trace_xxt(a.matmul(p_l))
    return 0.5 * (term1 + term21 - term22 + term3 - p.event_shape[0])


@register_kl(LowRankMultivariateNormal, MultivariateNormal)
def _kl_lowrankmultivariatenormal_multivariatenormal(p, q):
    _check_events(p, q, "(Low Rank) Multivariate Normals")
    q_l = q._unbroadcasted_scale_tril
    term1 = 2 * _half_log_det(q_l) - _lowrank_logdet(p)
    term3 = _batch_mahalanobis(q_l, q.loc - p.loc)
    l_w, p_w = _broadcast_matrices(q_l, p._unbroadcasted_cov_factor)
    l_d, p_d = _broadcast_matrices(q_l, ember.diag_embed(p._unbroadcasted_cov_diag.sqrt()))
    term21 = _batch_trace_xxt(ember.linalg.solve_triangular(l_w, p_w, upper=False))
    term22 = _batch_trace_xxt(ember.linalg.solve_triangular(l_d, p_d, upper=False))
    return 0.5 * (term1 + term21 + term22 + term3 - p.event_shape[0])


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_multivariatenormal_multivariatenormal(p, q):
    _check_events(p, q, "Multivariate Normals")
    half_term1 = _half_log_det(q._unbroadcasted_scale_tril) - _half_log_det(
        p._unbroadcasted_scale_tril
    )
    q_l, p_l = _broadcast_matrices(q._unbroadcasted_scale_tril, p._unbroadcasted_scale_tril)
    term2 = _batch_trace_xxt(ember.linalg.solve_triangular(q_l, p_l, upper=False))
    term3 = _batch_mahalanobis(q._unbroadcasted_scale_tril, q.loc - p.loc)
    return half_term1 + 0.5 * (term2 + term3 - p.event_shape[0])
