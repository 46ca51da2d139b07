"""numpy/scipy references of the special-function rows (dispatcher/optable/special.py).

SciPy is a test dependency only: ``scipy_ref`` imports it when a reference runs, never when the
op table loads. The orthogonal polynomials are their three-term recurrences in float64, with
PyTorch's conventions: the degree ``n`` is truncated to an integer and a negative degree gives 0.
"""

from __future__ import annotations

import numpy as np


def scipy_ref(name: str):
    """``scipy.special.<name>``, looked up at call time."""

    def ref(*args):
        import scipy.special

        return getattr(scipy.special, name)(*args)

    ref.__name__ = f"scipy.special.{name}"
    return ref


# name -> (argument map, P_0, P_1, recurrence P_{k+1} from (t, k, P_k, P_{k-1}))
def _cheb(t, k, p, q):
    return 2 * t * p - q


POLYNOMIALS = {
    "chebyshev_polynomial_t": (lambda x: x, lambda t: 1.0, lambda t: t, _cheb),
    "chebyshev_polynomial_u": (lambda x: x, lambda t: 1.0, lambda t: 2 * t, _cheb),
    "chebyshev_polynomial_v": (lambda x: x, lambda t: 1.0, lambda t: 2 * t - 1, _cheb),
    "chebyshev_polynomial_w": (lambda x: x, lambda t: 1.0, lambda t: 2 * t + 1, _cheb),
    "shifted_chebyshev_polynomial_t": (lambda x: 2 * x - 1, lambda t: 1.0, lambda t: t, _cheb),
    "shifted_chebyshev_polynomial_u": (
        lambda x: 2 * x - 1,
        lambda t: 1.0,
        lambda t: 2 * t,
        _cheb,
    ),
    "shifted_chebyshev_polynomial_v": (
        lambda x: 2 * x - 1,
        lambda t: 1.0,
        lambda t: 2 * t - 1,
        _cheb,
    ),
    "shifted_chebyshev_polynomial_w": (
        lambda x: 2 * x - 1,
        lambda t: 1.0,
        lambda t: 2 * t + 1,
        _cheb,
    ),
    "hermite_polynomial_h": (
        lambda x: x,
        lambda t: 1.0,
        lambda t: 2 * t,
        lambda t, k, p, q: 2 * t * p - 2 * k * q,
    ),
    "hermite_polynomial_he": (
        lambda x: x,
        lambda t: 1.0,
        lambda t: t,
        lambda t, k, p, q: t * p - k * q,
    ),
    "laguerre_polynomial_l": (
        lambda x: x,
        lambda t: 1.0,
        lambda t: 1 - t,
        lambda t, k, p, q: ((2 * k + 1 - t) * p - k * q) / (k + 1),
    ),
    "legendre_polynomial_p": (
        lambda x: x,
        lambda t: 1.0,
        lambda t: t,
        lambda t, k, p, q: ((2 * k + 1) * t * p - k * q) / (k + 1),
    ),
}


def polynomial(name: str):
    """The reference of ``special_<name>(input, n)``, elementwise over broadcast x and n."""
    arg, first, second, step = POLYNOMIALS[name]

    def one(x: float, n: float) -> float:
        if np.isnan(n) or np.isinf(n) or np.trunc(n) < 0:  # PyTorch truncates, then tests
            return 0.0 if not np.isnan(x) else x
        if name.startswith("hermite") and n > 128:
            return np.nan  # PyTorch's limit in float (512 in double; the samples stay below)
        n, t = int(n), arg(x)
        p_prev, p = first(t), second(t)
        if n == 0:
            return p_prev
        for k in range(1, n):
            p_prev, p = p, step(t, k, p, p_prev)
        return p

    def ref(x, n):
        x, n = np.broadcast_arrays(np.asarray(x, np.float64), np.asarray(n, np.float64))
        return np.vectorize(one, otypes=[np.float64])(x, n)

    ref.__name__ = name
    return ref


def trigamma_f32(x):
    """PyTorch's float32 trigamma, step by step in float32 (float pi, a correctly rounded sinf,
    its double literals making the asymptotic tail double): near the poles the float product
    pi * x decides the value, so a double computation differs from PyTorch by ~1e-5 relative."""
    f, d = np.float32, np.float64
    x = np.asarray(x, f)
    pi = f(np.pi)
    reflect = x < f(0.5)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        sin_pi_x = np.sin((pi * x).astype(d)).astype(f)
        result = np.where(reflect, -((pi * pi) / (sin_pi_x * sin_pi_x)), f(0)).astype(f)
        x = np.where(reflect, f(1) - x, x).astype(f)
        for _ in range(6):
            result = (result + f(1) / (x * x)).astype(f)
            x = (x + f(1)).astype(f)
        ixx = (f(1) / (x * x)).astype(d)
        tail = (f(1) + f(1) / (f(2) * x)).astype(d) + ixx * (1 / 6 - ixx * (1 / 30 - ixx / 42))
        result = (result.astype(d) + tail / x.astype(d)).astype(f)
    return np.where(reflect, -result, result)
