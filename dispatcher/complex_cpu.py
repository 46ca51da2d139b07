"""CPU kernels for complex64/complex128: numpy's complex arithmetic, and GEMM through OpenBLAS.

The C plugin has no complex kernels yet. Until it does, these are the CPU implementation of the
complex dtypes, declared in the op table (``optable/complex.py`` names every op that has one) and
registered as extra CPU kernels of the provider ``PROVIDER``; other devices have none, so a
complex call there raises NotImplementedError naming the op, device and dtype (no silent numbers).
Matrix products call ``cblas_cgemm``/``cblas_zgemm`` of the CPU plugin's scipy-openblas32 through
cffi, as the plugin does for sgemm/dgemm: numpy's own matmul would be a second BLAS.
"""

from __future__ import annotations

import numpy as np

from ember._tensor import host_array

PROVIDER = "ember-complex-numpy"
COMPLEX_NAMES = ("complex64", "complex128")


def _sigmoid(x, out):
    np.divide(1, 1 + np.exp(-x), out=out)


def _silu(x, out):
    np.divide(x, 1 + np.exp(-x), out=out)


def _sgn(x, out):
    magnitude = np.abs(x)
    np.divide(x, np.where(magnitude == 0, 1, magnitude), out=out)


def _rsqrt(x, out):
    np.divide(1, np.sqrt(x), out=out)


def _sinc(x, out):
    # sin(pi x) / (pi x), 1 at 0 (numpy's sinc takes complex arguments)
    out[...] = np.sinc(x)


def _nonzero(x):
    # a complex number is "true" when either part is nonzero (PyTorch's and numpy's rule)
    return x != 0


def _logical_not(x, out):
    np.logical_not(_nonzero(x), out=out)


def _logical(fn):
    def logical(a, b, out):
        fn(_nonzero(a), _nonzero(b), out=out)

    return logical


def _logaddexp(a, b, out):
    # PyTorch's complex helper: ordered by real part, max + log1p(exp(min - max)); equal infinite
    # real parts take log(exp(a) + exp(b)) directly (the difference would be NaN)
    a, b = np.broadcast_arrays(a, b)
    swap = a.real < b.real
    low, high = np.where(swap, a, b), np.where(swap, b, a)
    with np.errstate(invalid="ignore", over="ignore"):
        stable = high + np.log1p(np.exp(low - high))
        infinite = ~np.isfinite(low.real) & (low.real == high.real)
        out[...] = np.where(infinite, np.log(np.exp(low) + np.exp(high)), stable)


def _lerp(a, b, weight, out):
    # PyTorch's two-sided form, exact at both ends: from start below |w| 0.5, from end above
    difference = b - a
    out[...] = np.where(
        np.abs(weight) < 0.5, a + weight * difference, b - difference * (1 - weight)
    )


def _addcmul(a, b, c, value=1, out=None):
    out[...] = a + value * b * c


def _addcdiv(a, b, c, value=1, out=None):
    out[...] = a + value * (b / c)


def _angle(x, out):
    out[...] = np.angle(x)


def _unary(fn):
    def kernel(out, x):
        fn(host_array(x), out=host_array(out))

    return kernel


def _host(value):
    """A tensor's numpy array; Python scalars stay scalars."""
    return value if isinstance(value, (bool, int, float, complex)) else host_array(value)


def _binary(fn):
    def kernel(out, a, b):
        fn(_host(a), _host(b), out=host_array(out))

    return kernel


UNARY = {
    "neg": np.negative,
    "exp": np.exp,
    "log": np.log,
    "sqrt": np.sqrt,
    "rsqrt": _rsqrt,
    "reciprocal": np.reciprocal,
    "square": np.square,
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "sinh": np.sinh,
    "cosh": np.cosh,
    "tanh": np.tanh,
    "sigmoid": _sigmoid,
    "silu": _silu,
    "abs": np.abs,
    "angle": _angle,
    "sgn": _sgn,
    "conj_physical": np.conjugate,
    # numpy's branch cuts for the inverse functions are PyTorch's (C99's)
    "asin": np.arcsin,
    "acos": np.arccos,
    "atan": np.arctan,
    "asinh": np.arcsinh,
    "acosh": np.arccosh,
    "atanh": np.arctanh,
    "log1p": np.log1p,
    "log2": np.log2,
    "log10": np.log10,
    "exp2": np.exp2,
    "expm1": np.expm1,
    "sinc": _sinc,
    "isnan": np.isnan,
    "isinf": np.isinf,
    "isfinite": np.isfinite,
    "logical_not": _logical_not,
}
BINARY = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": np.true_divide,
    "pow": np.power,
    "eq": np.equal,
    "ne": np.not_equal,
    "logaddexp": _logaddexp,
    "logical_and": _logical(np.logical_and),
    "logical_or": _logical(np.logical_or),
    "logical_xor": _logical(np.logical_xor),
}


NARY = {"lerp": _lerp, "addcmul": _addcmul, "addcdiv": _addcdiv}


def _nary(fn):
    def kernel(out, *args):
        fn(*(_host(v) for v in args), out=host_array(out))

    return kernel


def _truth(fn):
    """all/any of complex numbers: over their truth values (either part nonzero)."""

    def reduce(x, **kw):
        return fn(_nonzero(x), **kw)

    return reduce


def _linspace(out, start, end):
    # PyTorch's symmetric formula: the first half counts from start, the rest from end
    target = host_array(out)
    steps = target.shape[0]
    i = np.arange(steps)
    step = (end - start) / (steps - 1)
    target[...] = np.where(i < steps // 2, start + step * i, end - step * (steps - 1 - i))


def _reduce(fn):
    def kernel(out, x, dims):
        fn(host_array(x), axis=tuple(dims), keepdims=True, out=host_array(out))

    return kernel


def _where(out, condition, a, b):
    pick = [x if isinstance(x, (bool, int, float, complex)) else host_array(x) for x in (a, b)]
    host_array(out)[...] = np.where(host_array(condition), *pick)


def _scan(fn):
    def kernel(out, x, dim):
        source, target = host_array(x), host_array(out)
        if source.ndim == 0:  # numpy's cumsum of a 0-d array into out= segfaults (2.x)
            source, target = source.reshape(1), target.reshape(1)
        fn(source, axis=dim, out=target)

    return kernel


def _copy(out, src):
    values = host_array(src)
    if values.dtype.kind == "V" or values.dtype.name == "bfloat16":  # ml_dtypes: via float32
        values = values.astype(np.float32)
    host_array(out)[...] = values


def _fill(out, value):
    host_array(out)[...] = value


def _complex(out, real, imag):
    target = host_array(out)
    target.real = host_array(real)
    target.imag = host_array(imag)


def _polar(out, magnitude, angle):
    r, theta = host_array(magnitude), host_array(angle)
    target = host_array(out)
    target.real = r * np.cos(theta)
    target.imag = r * np.sin(theta)


def kernels() -> dict:
    """``{op name: {dtype name: kernel}}`` of every complex CPU kernel (gemm's included)."""
    from . import complex_gemm, complex_index, lapack_complex, lapack_geev

    table = {name: _unary(fn) for name, fn in UNARY.items()}
    table.update({name: _binary(fn) for name, fn in BINARY.items()})
    table.update({name: _nary(fn) for name, fn in NARY.items()})
    table["sum"] = _reduce(np.sum)
    table["prod"] = _reduce(np.prod)
    table["all"] = _reduce(_truth(np.all))
    table["any"] = _reduce(_truth(np.any))
    table["linspace"] = _linspace
    table["cumsum"] = _scan(np.cumsum)
    table["cumprod"] = _scan(np.cumprod)
    table["where"] = _where
    table["copy_"] = _copy
    table["fill_"] = _fill
    table.update(complex_index.KERNELS)
    table["mm"] = complex_gemm.mm
    table["bmm"] = complex_gemm.bmm
    table.update(lapack_complex.KERNELS)
    return {name: dict.fromkeys(COMPLEX_NAMES, fn) for name, fn in table.items()} | {
        # complex(real, imag) and polar(abs, angle) take float parts: keyed by the parts' dtype
        "complex": {"float32": _complex, "float64": _complex},
        "polar": {"float32": _polar, "float64": _polar},
        # geev of real or complex matrices (complex results)
        "_linalg_eig": dict.fromkeys(("float32", "float64", *COMPLEX_NAMES), lapack_geev.eig),
    }


def register() -> None:
    """Add the kernels to the CPU's extra kernels (once per op table build)."""
    from .registry import EXTRA

    for name, table in kernels().items():
        EXTRA.add(name, "cpu", table, PROVIDER)
