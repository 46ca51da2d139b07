"""ember.special: PyTorch's ``torch.special``.

Most functions are op-table rows (dispatcher/optable/special.py, ATen's names: ``special_i0e`` is
``ember.special.i0e``) with CPU kernels ported from PyTorch's own (backend_cpu's csrc/special.h);
the others are the same ops as top-level functions under SciPy's names (``expit`` is
``sigmoid``, ``gammaln`` is ``lgamma``, ``gammainc`` is ``igamma``).

Example:
    >>> x = ember.tensor([0.5, 1.0, 4.0], dtype=ember.float64)
    >>> ember.special.gammaln(x)
    tensor([ 0.5724,  0.0000,  1.7918], dtype=ember.float64)
"""

from __future__ import annotations

import ember as _E
from ember._namespace import export_rows as _export_rows

from ._special import polygamma as polygamma

# ember.special.<name> -> the op-table row it calls, generated with the row's signature
_ROWS = {
    "airy_ai": "special_airy_ai",
    "bessel_j0": "special_bessel_j0",
    "bessel_j1": "special_bessel_j1",
    "bessel_y0": "special_bessel_y0",
    "bessel_y1": "special_bessel_y1",
    "chebyshev_polynomial_t": "special_chebyshev_polynomial_t",
    "chebyshev_polynomial_u": "special_chebyshev_polynomial_u",
    "chebyshev_polynomial_v": "special_chebyshev_polynomial_v",
    "chebyshev_polynomial_w": "special_chebyshev_polynomial_w",
    "digamma": "digamma",
    "entr": "special_entr",
    "erf": "erf",
    "erfc": "erfc",
    "erfcx": "special_erfcx",
    "erfinv": "erfinv",
    "exp2": "exp2",
    "expit": "sigmoid",
    "expm1": "expm1",
    "gammainc": "igamma",
    "gammaincc": "igammac",
    "gammaln": "lgamma",
    "hermite_polynomial_h": "special_hermite_polynomial_h",
    "hermite_polynomial_he": "special_hermite_polynomial_he",
    "i0": "i0",
    "i0e": "special_i0e",
    "i1": "special_i1",
    "i1e": "special_i1e",
    "laguerre_polynomial_l": "special_laguerre_polynomial_l",
    "legendre_polynomial_p": "special_legendre_polynomial_p",
    "log1p": "log1p",
    "log_ndtr": "special_log_ndtr",
    "logit": "logit",
    "modified_bessel_i0": "special_modified_bessel_i0",
    "modified_bessel_i1": "special_modified_bessel_i1",
    "modified_bessel_k0": "special_modified_bessel_k0",
    "modified_bessel_k1": "special_modified_bessel_k1",
    "multigammaln": "mvlgamma",
    "ndtr": "special_ndtr",
    "ndtri": "special_ndtri",
    "psi": "digamma",
    "scaled_modified_bessel_k0": "special_scaled_modified_bessel_k0",
    "scaled_modified_bessel_k1": "special_scaled_modified_bessel_k1",
    "shifted_chebyshev_polynomial_t": "special_shifted_chebyshev_polynomial_t",
    "shifted_chebyshev_polynomial_u": "special_shifted_chebyshev_polynomial_u",
    "shifted_chebyshev_polynomial_v": "special_shifted_chebyshev_polynomial_v",
    "shifted_chebyshev_polynomial_w": "special_shifted_chebyshev_polynomial_w",
    "sinc": "sinc",
    "spherical_bessel_j0": "special_spherical_bessel_j0",
    "xlog1py": "special_xlog1py",
    "xlogy": "xlogy",
    "zeta": "special_zeta",
}


_export_rows(_ROWS, "ember.special", globals())


def round(input, *, decimals: int = 0, out=None):
    """``ember.round``: half to even, at ``decimals`` decimal places."""
    return _E.round(input, decimals=decimals, out=out)


def softmax(input, dim: int, *, dtype=None):
    """``ember.softmax`` along ``dim``, computed in ``dtype`` when given."""
    return _E.softmax(input, dim, dtype)


def log_softmax(input, dim: int, *, dtype=None):
    """``ember.log_softmax`` along ``dim``, computed in ``dtype`` when given."""
    return _E.log_softmax(input, dim, dtype)


def logsumexp(input, dim, keepdim: bool = False, *, out=None):
    """``ember.logsumexp``: log(sum(exp(input))) over ``dim``, without overflow."""
    return _E.logsumexp(input, dim, keepdim, out=out)


__all__ = sorted([*_ROWS, "log_softmax", "logsumexp", "polygamma", "round", "softmax"])
