"""Arithmetic of PyTorch's core surface, as compositions of existing ops: clamp_min/max,
float_power, heaviside, gcd/lcm, ldexp, logaddexp2, frexp, sign tests, isclose, and the
products (addmv, addr, addbmm, inner, vdot; kron is ember.linalg's, in linalg_products.py).
Autograd comes from the parts."""

from __future__ import annotations

import math

import numpy as np

import ember
from ember import _dtype as dt

from ..opdef import (
    DTYPES_ALL,
    DTYPES_FLOAT,
    DTYPES_INT,
    DTYPES_NUMERIC,
    OUT_ELEMENTWISE,
    OUT_EXACT,
    OUT_SAME_DTYPE,
    Kind,
    OpDef,
    Out,
    Promotion,
)
from .linalg import _ADD_PRODUCT_TOLERANCES as ADD_PRODUCT_TOLERANCES

I2F = Promotion.INT_TO_FLOAT
BOOL = Promotion.ALWAYS_BOOL
OUT_INTO_INPUT = Out("exact", "partial")  # addmv and friends: out may be the input they add to


def _by_bound(x, bound) -> str:
    """clamp_min/clamp_max: PyTorch's Tensor overload casts into out, its Scalar overload keeps
    the dtype."""
    return "cast" if isinstance(bound, ember.Tensor) else "same"


def _ldexp_rule(x, other) -> str:
    """A floating input scaled by integer exponents is written by PyTorch's ldexp kernel, which
    takes no other out dtype (2.13 refuses it); anything else goes through mul, which casts."""
    integral = isinstance(other, ember.Tensor) and not other.is_floating_point()
    return "same" if integral and x.is_floating_point() else "cast"


OUT_CLAMP_BOUND = Out(_by_bound, "partial")


def _elementwise(schema, ref, decomposition, dtypes=DTYPES_ALL, **kw) -> OpDef:
    kw.setdefault("out", OUT_ELEMENTWISE)
    return OpDef(
        schema,
        Kind.ELEMENTWISE,
        ref,
        dtypes=dtypes,
        decomposition=decomposition,
        samples=kw.pop("samples", "tensor_first"),
        **kw,
    )


# ---- elementwise ---------------------------------------------------------------------------
def _clamp_min(x, min):
    if x.dtype is ember.bool:  # a bool clamp is or/and (PyTorch's maximum/minimum)
        return ember.maximum(x, min) if isinstance(min, ember.Tensor) else x | bool(min)
    return ember.clamp(x, min, None)


def _clamp_max(x, max):
    if x.dtype is ember.bool:
        return ember.minimum(x, max) if isinstance(max, ember.Tensor) else x & bool(max)
    return ember.clamp(x, None, max)


def _is_complex(v) -> bool:
    return v.dtype.is_complex if isinstance(v, ember.Tensor) else isinstance(v, complex)


def _float_power(x, exponent):
    # double precision throughout: complex128 when either side is complex, float64 otherwise
    dtype = ember.complex128 if _is_complex(x) or _is_complex(exponent) else ember.float64
    scalar = complex if dtype is ember.complex128 else float

    def wide(v):
        return v.to(dtype) if isinstance(v, ember.Tensor) else scalar(v)

    base = wide(x)
    if not isinstance(base, ember.Tensor):
        base = ember.tensor(base, dtype=dtype, device=exponent.device)
    return ember.pow(base, wide(exponent))


def _np_float_power(x, exponent):
    wide = np.complex128 if np.iscomplexobj(x) or np.iscomplexobj(exponent) else np.float64
    return np.power(np.asarray(x, wide), np.asarray(exponent, wide))


def _heaviside(x, values):
    if isinstance(values, ember.Tensor) and values.dtype is not x.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")
    positive = (x > 0).to(x.dtype)
    return ember.where(x == 0, values, positive)


def _np_heaviside(x, values):
    return np.heaviside(x, values).astype(np.result_type(x, values))


def _as_tensor_like(value, like):
    if isinstance(value, ember.Tensor):
        return value
    if not isinstance(value, (bool, int, float)):  # the op names the argument (Op.__call__)
        raise TypeError(f"expected a Tensor or a number, not {type(value).__name__}")
    return ember.tensor(value, dtype=like.dtype, device=like.device)


def _gcd(a, b):
    b = _as_tensor_like(b, a)
    a, b = ember.broadcast_tensors(ember.abs(a), ember.abs(b))
    zero = ember.zeros((), dtype=a.dtype, device=a.device)
    one = ember.ones((), dtype=a.dtype, device=a.device)
    while bool((b != 0).any()):  # Euclid, all pairs at once: at most ~90 rounds for int64
        nonzero = b != 0
        rest = ember.where(nonzero, ember.remainder(a, ember.where(nonzero, b, one)), zero)
        a = ember.where(nonzero, b, a)
        b = rest
    return a.clone() if a.numel() else a.contiguous()


def _lcm(a, b):
    b = _as_tensor_like(b, a)
    g = _gcd(a, b)
    safe = ember.where(g == 0, ember.ones_like(g), g)
    return ember.abs(ember.div(a, safe, rounding_mode="trunc") * b)


def _ldexp(x, exponent):
    exponent = _as_tensor_like(exponent, x)
    if not (exponent.is_floating_point() or exponent.is_complex()):
        # PyTorch: a floating input keeps its dtype (its ldexp kernel), any other is
        # mul(x, pow(2.0, exponent)), the power in the default dtype (so uint16 runs too)
        floating = x.is_floating_point() or x.is_complex()
        exponent = exponent.to(x.dtype if floating else ember.get_default_dtype())
    return ember.mul(x, ember.exp2(exponent.to(ember.result_type(x, exponent))))


def _np_ldexp(x, exponent):
    wide = np.complex128 if np.iscomplexobj(x) or np.iscomplexobj(exponent) else np.float64
    return np.asarray(x, wide) * np.power(2.0, np.asarray(exponent, wide))


def _logaddexp2(a, b):
    peak = ember.maximum(a, b)
    same = (a == b) & ember.isinf(peak)  # inf + inf (or -inf + -inf): no difference to take
    gap = ember.where(same, ember.zeros_like(peak), -ember.abs(a - b))
    return ember.where(same, peak, peak + ember.log1p(ember.exp2(gap)) / math.log(2.0))


def _scaled(factor):
    def scale(x):
        if not x.is_floating_point():
            x = x.to(ember.get_default_dtype())
        return x * factor

    return scale


def _signbit(x):
    if x.dtype is ember.bool or x.dtype.name.startswith("uint"):  # no sign bit: all False
        return ember.zeros(x.shape, dtype=ember.bool, device=x.device)
    if not x.is_floating_point():
        return x < 0
    return ember.copysign(ember.ones_like(x), x) < 0


def _isinf_sign(positive: bool):
    def test(x):
        if not x.is_floating_point():
            return ember.zeros(x.shape, dtype=ember.bool, device=x.device)
        return x == (math.inf if positive else -math.inf)

    return test


def _positive(x):
    if x.dtype is ember.bool:
        raise TypeError(
            "The `+` operator, on a bool tensor is not supported. If you are trying to invert a "
            "mask, use the `~` or `logical_not()` operator instead."
        )
    return x


def _frexp(x):
    wide = x.to(ember.float64).detach()
    finite = ember.isfinite(wide) & (wide != 0)
    safe = ember.where(finite, ember.abs(wide), ember.ones_like(wide))
    exponent = ember.floor(ember.log2(safe)) + 1
    # log2 can round across a power of two: move one step so that 0.5 <= |mantissa| < 1
    scaled = safe / ember.exp2(exponent)
    exponent = exponent + (scaled >= 1).to(ember.float64) - (scaled < 0.5).to(ember.float64)
    exponent = ember.where(finite, exponent, ember.zeros_like(exponent))
    # scaled in float64: 2**-e can be out of x's range (float32 max: e = 128)
    mantissa = ember.where(finite, (x.to(ember.float64) * ember.exp2(-exponent)).to(x.dtype), x)
    from ember.return_types import Frexp

    return Frexp(mantissa, exponent.to(ember.int32))


def _np_frexp(x):
    mantissa, exponent = np.frexp(x)
    return mantissa, exponent.astype(np.int32)


def _isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    if a.dtype is not b.dtype:
        raise RuntimeError(f"{b.dtype.name.capitalize()} did not match {a.dtype.name.capitalize()}")
    _check_tolerances(rtol, atol)
    close = a == b
    if a.dtype is ember.bool or (rtol == 0 and atol == 0):
        return close
    if equal_nan and a.is_floating_point():
        close = close | (ember.isnan(a) & ember.isnan(b))
    if not a.is_floating_point():  # integers: the tolerance in the default float
        a, b = a.to(ember.get_default_dtype()), b.to(ember.get_default_dtype())
    allowed = atol + ember.abs(rtol * b)
    error = ember.abs(a - b)
    return close | (ember.isfinite(error) & (error <= allowed))


def _check_tolerances(rtol, atol) -> None:
    if rtol < 0:
        raise RuntimeError(f"rtol must be greater than or equal to zero, but got {rtol}")
    if atol < 0:
        raise RuntimeError(f"atol must be greater than or equal to zero, but got {atol}")


def _np_isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    return np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)


# ---- products --------------------------------------------------------------------------------
def _add_scaled(c, product, beta, alpha):
    """``beta * c + alpha * product``; beta 0 ignores c (its NaNs too), as in PyTorch; bool
    inputs combine with logical and/or, since PyTorch computes bool products that way."""
    if product.dtype is ember.bool:
        return (c & bool(beta)) | (product & bool(alpha))
    if not (product.is_floating_point() or product.is_complex()):  # integers: int scalars
        alpha, beta = int(alpha), int(beta)
    if alpha != 1:
        product = product * alpha
    if beta == 0:
        return product + ember.zeros_like(c) if c.shape != product.shape else product
    return product + (c if beta == 1 else c * beta)


def _check_vector(name: str, what: str, t) -> None:
    if t.ndim != 1:
        raise RuntimeError(f"{name}: Expected 1-D argument {what}, but got {t.ndim}-D")


def _addmv(c, mat, vec, beta=1, alpha=1):
    if mat.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(
            f"vector + matrix @ vector expected, got {c.ndim}, {mat.ndim}, {vec.ndim}"
        )
    return _add_scaled(c, ember.mv(mat, vec), beta, alpha)


def _addr(c, vec1, vec2, beta=1, alpha=1):
    _check_vector("addr", "vec1", vec1)
    _check_vector("addr", "vec2", vec2)
    if vec1.dtype is ember.bool:
        product = vec1.unsqueeze(1) & vec2.unsqueeze(0)
    else:
        product = ember.outer(vec1, vec2)
    return _add_scaled(c, product, beta, alpha)


def _addbmm(c, batch1, batch2, beta=1, alpha=1):
    if batch1.ndim != 3 or batch2.ndim != 3:
        raise RuntimeError(
            f"batch1 must be a 3D tensor, batch2 must be a 3D tensor (got {batch1.ndim}D and "
            f"{batch2.ndim}D)"
        )
    if batch1.dtype in dt.LIMITED_SET:
        return _addbmm_batches(c, batch1, batch2, beta, alpha)
    product = ember.bmm(batch1, batch2)
    product = product.sum(0, dtype=product.dtype)
    return _add_scaled(c, product, beta, alpha)


def _addbmm_batches(c, batch1, batch2, beta, alpha):
    """PyTorch's CPU addbmm: one addmm per batch into the result, so a float8 result is rounded
    after each batch; no batch scales (or zeroes) the input. The one path PyTorch has for the
    limited dtypes (its addmm refuses those it has no kernel for)."""
    if batch1.shape[0] != batch2.shape[0]:
        raise RuntimeError(
            "batch1 and batch2 must have same number of batches, got "
            f"{batch1.shape[0]} and {batch2.shape[0]}"
        )
    if batch1.shape[2] != batch2.shape[1]:
        raise RuntimeError(
            f"Incompatible matrix sizes for bmm ({batch1.shape[1]}x{batch1.shape[2]} and "
            f"{batch2.shape[1]}x{batch2.shape[2]})"
        )
    shape = (batch1.shape[1], batch2.shape[2])
    result = c.expand(shape).clone()
    if batch1.shape[0] == 0:
        return result.mul_(beta) if beta != 0 else result.zero_()
    for i in range(batch1.shape[0]):
        result = ember.addmm(result, batch1[i], batch2[i], beta=beta if i == 0 else 1, alpha=alpha)
    return result


def _inner(a, b):
    """PyTorch's: a product with a 0-d operand, else a tensordot over the last dims."""
    if a.ndim == 0 or b.ndim == 0:
        return a * b
    if a.shape[-1] != b.shape[-1]:
        raise RuntimeError(
            f"inner() the last dimension must match on both input tensors but got shapes "
            f"{list(a.shape)} and {list(b.shape)}"
        )
    return ember.tensordot(a, b, ([-1], [-1]))


def _vdot(a, b):
    if a.ndim != 1 or b.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {a.ndim}D and {b.ndim}D tensors")
    return ember.dot(a.conj() if a.dtype.is_complex else a, b)  # conj(a) . b


def _np_product_sum(c, x, y, beta=1, alpha=1, combine=np.matmul):
    product = combine(x, y)
    if product.dtype == np.bool_:
        return (c & bool(beta)) | (product & bool(alpha))
    return (beta * c if beta else 0) + alpha * product


ROWS = [
    _elementwise(
        "clamp_min(Tensor input, Tensor min) -> Tensor",
        np.maximum,
        _clamp_min,
        out=OUT_CLAMP_BOUND,
    ),
    _elementwise(
        "clamp_max(Tensor input, Tensor max) -> Tensor",
        np.minimum,
        _clamp_max,
        out=OUT_CLAMP_BOUND,
    ),
    _elementwise(
        "float_power(Tensor input, Tensor exponent) -> Tensor",
        _np_float_power,
        _float_power,
        samples="float_power",
        out=Out(
            "same",
            message="the output given to {name} has dtype {got} but the operation's result "
            "requires dtype {want}",
        ),
        notes="computes and returns float64 (complex128 for complex inputs) whatever the inputs",
    ),
    _elementwise(
        "heaviside(Tensor input, Tensor values) -> Tensor",
        _np_heaviside,
        _heaviside,
        differentiable=False,
        samples="same_dtype_pair",
        out=Out(
            "same", message="heaviside is not yet implemented for tensors with different dtypes."
        ),
    ),
    _elementwise(
        "gcd(Tensor input, Tensor other) -> Tensor", np.gcd, _gcd, DTYPES_INT, differentiable=False
    ),
    _elementwise(
        "lcm(Tensor input, Tensor other) -> Tensor",
        np.lcm,
        _lcm,
        DTYPES_INT,
        differentiable=False,
        samples="small_ints",
    ),
    _elementwise(
        "ldexp(Tensor input, Tensor other) -> Tensor",
        _np_ldexp,
        _ldexp,
        DTYPES_NUMERIC,
        promotion=I2F,
        samples="ldexp",
        out=Out(_ldexp_rule, "partial"),
    ),
    _elementwise(
        "logaddexp2(Tensor input, Tensor other) -> Tensor",
        np.logaddexp2,
        _logaddexp2,
        DTYPES_FLOAT,
    ),
    *(
        _elementwise(
            f"{name}(Tensor input) -> Tensor",
            ref,
            _scaled(factor),
            DTYPES_NUMERIC,
            promotion=I2F,
            samples="unary",
        )
        for name, ref, factor in (
            ("deg2rad", np.deg2rad, math.pi / 180),
            ("rad2deg", np.rad2deg, 180 / math.pi),
        )
    ),
    _elementwise(
        "signbit(Tensor input) -> Tensor",
        np.signbit,
        _signbit,
        promotion=BOOL,
        differentiable=False,
        samples="unary_special",
        out=OUT_SAME_DTYPE,
    ),
    *(
        _elementwise(
            f"{name}(Tensor input) -> Tensor",
            ref,
            _isinf_sign(name == "isposinf"),
            promotion=BOOL,
            differentiable=False,
            samples="unary_special",
            out=OUT_SAME_DTYPE,
        )
        for name, ref in (("isposinf", np.isposinf), ("isneginf", np.isneginf))
    ),
    OpDef(
        "positive(Tensor input) -> Tensor",
        Kind.VIEW,
        np.positive,
        decomposition=_positive,
        dtypes=frozenset(dt.INTS + dt.FLOATS),
        samples="unary",
        out=None,
        notes="returns its input itself, as PyTorch's",
    ),
    OpDef(
        "frexp(Tensor input) -> (Tensor mantissa, Tensor exponent)",
        Kind.ELEMENTWISE,
        _np_frexp,
        dtypes=DTYPES_FLOAT,
        decomposition=_frexp,
        samples="unary_special",
        out=OUT_EXACT,
    ),
    OpDef(
        "isclose(Tensor input, Tensor other, float rtol=1e-05, float atol=1e-08, "
        "bool equal_nan=False) -> Tensor",
        Kind.ELEMENTWISE,
        _np_isclose,
        promotion=BOOL,
        decomposition=_isclose,
        differentiable=False,
        samples="same_dtype_pair",
        out=None,
    ),
    # ---- products ---------------------------------------------------------------------------
    OpDef(
        "addmv(Tensor input, Tensor mat, Tensor vec, *, Scalar beta=1, Scalar alpha=1) -> Tensor",
        Kind.MATMUL,
        _np_product_sum,
        dtypes=DTYPES_NUMERIC,
        decomposition=_addmv,
        samples="addmv",
        out=OUT_INTO_INPUT,
    ),
    OpDef(
        "addr(Tensor input, Tensor vec1, Tensor vec2, *, Scalar beta=1, Scalar alpha=1) -> Tensor",
        Kind.MATMUL,
        lambda c, x, y, beta=1, alpha=1: _np_product_sum(c, x, y, beta, alpha, np.outer),
        decomposition=_addr,
        samples="addr",
        out=OUT_ELEMENTWISE,  # unlike addmv, PyTorch's addr casts into out
    ),
    OpDef(
        "addbmm(Tensor input, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) "
        "-> Tensor",
        Kind.MATMUL,
        lambda c, x, y, beta=1, alpha=1: _np_product_sum(
            c, x, y, beta, alpha, lambda p, q: np.matmul(p, q).sum(0)
        ),
        dtypes=DTYPES_NUMERIC,
        decomposition=_addbmm,
        samples="addbmm",
        tolerances=ADD_PRODUCT_TOLERANCES,
        out=OUT_INTO_INPUT,
    ),
    OpDef(
        "inner(Tensor input, Tensor other) -> Tensor",
        Kind.MATMUL,
        np.inner,
        dtypes=DTYPES_NUMERIC,
        decomposition=_inner,
        samples="inner",
        out=OUT_EXACT,
    ),
    OpDef(
        "vdot(Tensor input, Tensor other) -> Tensor",
        Kind.MATMUL,
        np.vdot,
        dtypes=DTYPES_NUMERIC,
        decomposition=_vdot,
        samples="dot",
        out=OUT_EXACT,
    ),
]
