"""Elementwise ops: one row each, with its numpy reference.

References follow PyTorch where numpy differs (sign of NaN is 0, integer division truncates
toward zero for ``div_trunc``...). ``domain`` keeps sampled inputs where the function is defined.
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np

import ember
from ember import _dtype as dt
from ember._tensor import Tensor

from ..kinds import elementwise as run
from ..opdef import (
    DTYPES_ALL,
    DTYPES_FLOAT,
    DTYPES_INT,
    DTYPES_INT_BOOL,
    DTYPES_NUMERIC,
    OUT_SAME_DTYPE,
    Kind,
    OpDef,
    Promotion,
)

_erf = np.vectorize(math.erf, otypes=[np.float64])
_erfc = np.vectorize(math.erfc, otypes=[np.float64])
I2F = Promotion.INT_TO_FLOAT
FLOAT = Promotion.FLOAT_ONLY  # nn activations: PyTorch refuses integer inputs
BOOL = Promotion.ALWAYS_BOOL
UNARY_ARGS = "(out, x, *params): x has out's shape, compute dtype; out is the result dtype"
BINARY_ARGS = "(out, a, b): tensors broadcast to out's shape in the compute dtype, or scalars"


def unary(name, ref, dtypes=DTYPES_FLOAT, promotion=I2F, params="", **kw) -> OpDef:
    kw.setdefault("inplace", promotion is not BOOL)
    return OpDef(
        f"{name}(Tensor input{params}) -> Tensor",
        Kind.ELEMENTWISE,
        ref,
        promotion=promotion,
        dtypes=dtypes,
        runner=run.unary,
        samples=kw.pop("samples", "unary"),
        attrs={"arity": 1, **kw.pop("attrs", {})},
        kernel_args=UNARY_ARGS,
        **kw,
    )


def binary(name, ref, dtypes=DTYPES_ALL, promotion=Promotion.DEFAULT, **kw) -> OpDef:
    kw.setdefault("inplace", promotion is not BOOL)
    return OpDef(
        f"{name}(Tensor input, Tensor other) -> Tensor",
        Kind.ELEMENTWISE,
        ref,
        promotion=promotion,
        dtypes=dtypes,
        runner=kw.pop("runner", run.binary),
        samples=kw.pop("samples", "binary"),
        attrs={"arity": 2, **kw.pop("attrs", {})},
        kernel_args=BINARY_ARGS,
        **kw,
    )


def nary(schema, ref, arity, dtypes, promotion=Promotion.DEFAULT, **kw) -> OpDef:
    attrs = {"arity": arity, **kw.pop("attrs", {})}
    return OpDef(
        schema,
        Kind.ELEMENTWISE,
        ref,
        promotion=promotion,
        dtypes=dtypes,
        runner=run.nary,
        samples=kw.pop("samples", "ternary"),
        attrs=attrs,
        kernel_args="(out, a, b, c, *params): operands broadcast, or scalars",
        **kw,
    )


def _sign(x):
    if x.dtype.kind == "b":
        return x.copy()
    return (
        np.where(np.isnan(x), 0, np.sign(x)).astype(x.dtype) if x.dtype.kind == "f" else np.sign(x)
    )


def _nan_to_num(x, nan=0.0, posinf=None, neginf=None):
    """np.nan_to_num with PyTorch's defaults: infinities become the dtype's extremes."""
    if x.dtype.kind not in "fV":
        return x.copy()
    high = ml_dtypes.finfo(x.dtype).max
    out = np.where(np.isnan(x), 0.0 if nan is None else nan, x)
    out = np.where(np.isposinf(x), high if posinf is None else posinf, out)
    return np.where(np.isneginf(x), -high if neginf is None else neginf, out).astype(x.dtype)


def _nan_aware(pick, a, b):
    """fmax/fmin where a backend has no kernel for the dtype (PyTorch's integers and bool are
    maximum/minimum): a NaN operand gives the other one."""
    chosen = pick(a, b)
    if not chosen.dtype.is_floating_point:
        return chosen
    a, b = (v if isinstance(v, Tensor) else ember.full_like(chosen, v) for v in (a, b))
    return ember.where(ember.isnan(a), b, ember.where(ember.isnan(b), a, chosen))


def _fmax(a, b):
    return _nan_aware(ember.maximum, a, b)


def _fmin(a, b):
    return _nan_aware(ember.minimum, a, b)


def _integer_tensor(value) -> bool:
    return isinstance(value, Tensor) and value._dtype.category == dt.INTEGRAL


def _pow(op, a, b):
    """pow's runner. Integers to a tensor of integer exponents take negative ones as PyTorch
    does (1 for a base of 1, +-1 for -1, else 0), where the kernels refuse them, as they rightly
    do for a negative Python exponent: on their refusal, the kernel runs again on |b| and a
    mask zeroes the rest (the common call pays nothing)."""
    try:
        return run.binary(op, a, b)
    except RuntimeError as error:
        integers = a.__class__ in (int, bool) or _integer_tensor(a)
        tensor_powers = _integer_tensor(b)
        if not (integers and tensor_powers and "negative integer powers" in str(error)):
            raise
    powers = run.binary(op, a, ember.abs(b))
    unit = ember.abs(a) == 1 if a.__class__ is Tensor else abs(a) == 1
    if unit is True:
        return powers
    kept = b >= 0 if unit is False else (b >= 0) | unit
    return ember.where(kept, powers, ember.zeros_like(powers))


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _gelu(x, approximate="none"):
    if approximate == "tanh":
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    return 0.5 * x * (1 + _erf(x / math.sqrt(2)))


def _softplus(x, beta=1.0, threshold=20.0):
    return np.where(x * beta > threshold, x, np.log1p(np.exp(x * beta)) / beta)


def _softsign(x):
    return x / (1 + ember.abs(x))


def _div_trunc(a, b):
    if np.asarray(a).dtype.kind == "f" or np.asarray(b).dtype.kind == "f":
        return np.trunc(np.true_divide(a, b))
    q = np.floor_divide(a, b)
    fix = (np.remainder(a, b) != 0) & ((np.asarray(a) < 0) != (np.asarray(b) < 0))
    return q + fix.astype(q.dtype)


def _hardtanh(x, min_val=-1.0, max_val=1.0):
    return np.clip(x, min_val, max_val)


def _check_sub(a, b, *params):
    """PyTorch refuses bool operands of subtraction rather than promoting them."""
    for x in (a, b):
        if x is True or x is False or getattr(x, "dtype", None) is dt.bool_:
            raise RuntimeError(
                "sub: Subtraction, the `-` operator, with a bool tensor is not supported. If you "
                "are trying to invert a mask, use the `~` or `logical_not()` operator instead."
            )


def _check_hardtanh(x, min_val=-1.0, max_val=1.0):
    """Negative limits would wrap in unsigned arithmetic; PyTorch refuses them too."""
    if x.dtype is dt.uint8 and (min_val < 0 or max_val < 0):
        raise RuntimeError(
            f"hardtanh(): cannot do hardtanh on an unsigned type with negative limits "
            f"(min_val={min_val}, max_val={max_val}, dtype uint8)"
        )


def _clamp(x, lo=None, hi=None):
    if lo is not None:
        x = np.maximum(x, lo)
    if hi is not None:
        x = np.minimum(x, hi)
    return x


ROWS = [
    # ---- unary, floating results ---------------------------------------------------------------
    unary("exp", np.exp),
    unary("exp2", np.exp2),
    unary("expm1", np.expm1),
    unary("log", np.log, domain=(0.01, 10)),
    unary("log2", np.log2, domain=(0.01, 10)),
    unary("log10", np.log10, domain=(0.01, 10)),
    unary("log1p", np.log1p, domain=(-0.9, 10)),
    unary("sqrt", np.sqrt, domain=(0.01, 10)),
    unary("rsqrt", lambda x: 1 / np.sqrt(x), domain=(0.05, 10)),
    unary("sin", np.sin),
    unary("cos", np.cos),
    unary("tan", np.tan, domain=(-1.4, 1.4)),
    unary("asin", np.arcsin, domain=(-0.95, 0.95)),
    unary("acos", np.arccos, domain=(-0.95, 0.95)),
    unary("atan", np.arctan),
    unary("sinh", np.sinh),
    unary("cosh", np.cosh),
    unary("tanh", np.tanh),
    unary("asinh", np.arcsinh),
    unary("acosh", np.arccosh, domain=(1.05, 10)),
    unary("atanh", np.arctanh, domain=(-0.9, 0.9)),
    unary("sigmoid", _sigmoid),
    unary("erf", _erf),
    unary("erfc", _erfc),
    unary("reciprocal", lambda x: 1 / x, domain=(0.1, 10), samples="unary_nonzero"),
    unary(
        "gelu",
        _gelu,
        promotion=FLOAT,
        params=", *, str approximate='none'",
        inplace=False,
        out=None,  # torch.nn.functional.gelu's out= is not part of PyTorch's documented API
        notes="approximate: 'none' (erf) or 'tanh'",
    ),
    unary("silu", lambda x: x * _sigmoid(x), promotion=FLOAT, out=None),
    # nn activations: ember.nn.functional exposes them; no top-level function or method.
    unary(
        "elu",
        lambda x, alpha=1.0: np.where(x > 0, x, alpha * np.expm1(x)),
        promotion=FLOAT,
        params=", float alpha=1.0",
        function=False,
        method=False,
    ),
    unary(
        "celu",
        lambda x, alpha=1.0: np.where(x > 0, x, alpha * np.expm1(x / alpha)),
        promotion=FLOAT,
        params=", float alpha=1.0",
        function=False,
        method=False,
    ),
    unary(
        "selu",
        lambda x: 1.0507009873554804934 * np.where(x > 0, x, 1.6732632423543772848 * np.expm1(x)),
        promotion=FLOAT,
        function=False,
        method=False,
    ),
    unary(
        "leaky_relu",
        lambda x, s=0.01: np.where(x > 0, x, x * s),
        promotion=FLOAT,
        params=", float negative_slope=0.01",
        function=False,
        method=False,
    ),
    unary(
        "softplus",
        _softplus,
        promotion=FLOAT,
        params=", float beta=1.0, float threshold=20.0",
        function=False,
        method=False,
    ),
    unary(
        "mish",
        lambda x: x * np.tanh(np.log1p(np.exp(x))),
        function=False,
        method=False,
        promotion=FLOAT,
    ),
    unary(
        "hardswish",
        lambda x: x * np.clip(x + 3, 0, 6) / 6,
        function=False,
        method=False,
        promotion=FLOAT,
    ),
    unary(
        "hardsigmoid",
        lambda x: np.clip(x / 6 + 0.5, 0, 1),
        function=False,
        method=False,
        promotion=FLOAT,
    ),
    unary(
        "logsigmoid", lambda x: -np.logaddexp(0, -x), function=False, method=False, promotion=FLOAT
    ),
    unary(
        "softsign",
        lambda x: x / (1 + np.abs(x)),
        function=False,
        method=False,
        decomposition=_softsign,  # complex inputs (no kernel has them): PyTorch's composite
    ),
    unary(
        "hardtanh",
        _hardtanh,
        dtypes=DTYPES_NUMERIC,
        promotion=Promotion.DEFAULT,
        params=", float min_val=-1.0, float max_val=1.0",
        attrs={"check": _check_hardtanh},
        function=False,
        method=False,
    ),
    unary(
        "relu6",
        lambda x: np.clip(x, 0, 6),
        dtypes=DTYPES_NUMERIC,
        promotion=Promotion.DEFAULT,
        function=False,
        method=False,
    ),
    # ---- unary, same dtype -----------------------------------------------------------------
    unary(
        "neg", np.negative, dtypes=DTYPES_NUMERIC, promotion=Promotion.DEFAULT, out=OUT_SAME_DTYPE
    ),
    unary("abs", np.abs, dtypes=DTYPES_NUMERIC, promotion=Promotion.DEFAULT, out=OUT_SAME_DTYPE),
    unary("sign", _sign, dtypes=DTYPES_ALL, promotion=Promotion.DEFAULT, out=OUT_SAME_DTYPE),
    unary(
        "relu",
        lambda x: np.maximum(x, 0).astype(x.dtype),
        dtypes=DTYPES_NUMERIC,
        promotion=Promotion.DEFAULT,
        out=None,  # torch.relu takes no out=
    ),
    unary(
        "floor", np.floor, dtypes=DTYPES_NUMERIC, promotion=Promotion.DEFAULT, out=OUT_SAME_DTYPE
    ),
    unary("ceil", np.ceil, dtypes=DTYPES_NUMERIC, promotion=Promotion.DEFAULT, out=OUT_SAME_DTYPE),
    unary(
        "round",
        np.round,
        dtypes=DTYPES_NUMERIC,
        promotion=Promotion.DEFAULT,
        out=OUT_SAME_DTYPE,
        notes="half to even; the public round(x, decimals=d) scales around it",
    ),
    unary(
        "trunc", np.trunc, dtypes=DTYPES_NUMERIC, promotion=Promotion.DEFAULT, out=OUT_SAME_DTYPE
    ),
    unary("frac", lambda x: x - np.trunc(x), promotion=Promotion.DEFAULT, out=OUT_SAME_DTYPE),
    unary(
        "square",
        np.square,
        dtypes=DTYPES_NUMERIC,
        promotion=Promotion.BOOL_TO_LONG,
        notes="bool squares into int64, as PyTorch's pow(x, 2)",
    ),
    unary(
        "bitwise_not",
        np.invert,
        dtypes=DTYPES_INT_BOOL,
        promotion=Promotion.DEFAULT,
        differentiable=False,
        out=OUT_SAME_DTYPE,
    ),
    unary(
        "nan_to_num",
        _nan_to_num,
        dtypes=DTYPES_ALL,
        promotion=Promotion.DEFAULT,
        params=", float? nan=0.0, float? posinf=None, float? neginf=None",
        samples="unary_special",
        out=OUT_SAME_DTYPE,
    ),
    # ---- unary, bool results ---------------------------------------------------------------
    unary("logical_not", np.logical_not, dtypes=DTYPES_ALL, promotion=BOOL, differentiable=False),
    unary(
        "isnan",
        np.isnan,
        dtypes=DTYPES_ALL,
        promotion=BOOL,
        differentiable=False,
        samples="unary_special",
        out=None,
    ),
    unary(
        "isinf",
        np.isinf,
        dtypes=DTYPES_ALL,
        promotion=BOOL,
        differentiable=False,
        samples="unary_special",
        out=None,
    ),
    unary(
        "isfinite",
        np.isfinite,
        dtypes=DTYPES_ALL,
        promotion=BOOL,
        differentiable=False,
        samples="unary_special",
        out=None,
    ),
    # ---- binary ---------------------------------------------------------------------------------
    binary("add", np.add, notes="the public add(a, b, alpha=2) computes a + 2 * b"),
    binary(
        "sub",
        np.subtract,
        dtypes=DTYPES_NUMERIC,
        # the check refuses bool operands only: calls of a dtype it passed may skip it
        attrs={"check": _check_sub, "check_by_dtype": True},
    ),
    binary("mul", np.multiply),
    binary("div", np.true_divide, dtypes=DTYPES_FLOAT, promotion=I2F, samples="binary_nonzero"),
    binary(
        "div_trunc",
        _div_trunc,
        dtypes=DTYPES_NUMERIC,
        function=False,
        method=False,
        samples="binary_nonzero",
        notes="div(rounding_mode='trunc')",
    ),
    binary("floor_divide", np.floor_divide, dtypes=DTYPES_NUMERIC, samples="binary_nonzero"),
    binary("remainder", np.remainder, dtypes=DTYPES_NUMERIC, samples="binary_nonzero"),
    binary("fmod", np.fmod, dtypes=DTYPES_NUMERIC, samples="binary_nonzero"),
    binary("pow", np.power, dtypes=DTYPES_NUMERIC, samples="pow", runner=_pow),
    binary("atan2", np.arctan2, dtypes=DTYPES_FLOAT, promotion=I2F),
    binary("minimum", np.minimum),
    binary("maximum", np.maximum),
    binary("fmin", np.fmin, decomposition=_fmin),
    binary("fmax", np.fmax, decomposition=_fmax),
    binary("hypot", np.hypot, dtypes=DTYPES_FLOAT),
    binary("copysign", np.copysign, dtypes=DTYPES_FLOAT, promotion=I2F),
    binary(
        "xlogy",
        lambda a, b: np.where(a == 0, 0.0, a * np.log(b)),
        dtypes=DTYPES_FLOAT,
        promotion=I2F,
        samples="binary_positive",
    ),
    binary("logaddexp", np.logaddexp, dtypes=DTYPES_FLOAT),
    # differentiable as PyTorch records it: the gradient passes to input, none to other
    binary("nextafter", np.nextafter, dtypes=DTYPES_FLOAT),
    binary("eq", np.equal, promotion=BOOL, differentiable=False),
    binary("ne", np.not_equal, promotion=BOOL, differentiable=False),
    binary("lt", np.less, promotion=BOOL, differentiable=False),
    binary("le", np.less_equal, promotion=BOOL, differentiable=False),
    binary("gt", np.greater, promotion=BOOL, differentiable=False),
    binary("ge", np.greater_equal, promotion=BOOL, differentiable=False),
    binary("logical_and", np.logical_and, promotion=BOOL, differentiable=False),
    binary("logical_or", np.logical_or, promotion=BOOL, differentiable=False),
    binary("logical_xor", np.logical_xor, promotion=BOOL, differentiable=False),
    binary("bitwise_and", np.bitwise_and, dtypes=DTYPES_INT_BOOL, differentiable=False),
    binary("bitwise_or", np.bitwise_or, dtypes=DTYPES_INT_BOOL, differentiable=False),
    binary("bitwise_xor", np.bitwise_xor, dtypes=DTYPES_INT_BOOL, differentiable=False),
    binary(
        "bitwise_left_shift",
        np.left_shift,
        dtypes=DTYPES_INT,
        differentiable=False,
        samples="shift",
    ),
    binary(
        "bitwise_right_shift",
        np.right_shift,
        dtypes=DTYPES_INT,
        differentiable=False,
        samples="shift",
    ),
    # ---- ternary --------------------------------------------------------------------------------
    nary(
        "where(Tensor condition, Tensor input, Tensor other) -> Tensor",
        np.where,
        3,
        DTYPES_ALL,
        attrs={"condition": True},
        samples="where",
        method=False,
        out=OUT_SAME_DTYPE,
    ),
    nary(
        "lerp(Tensor input, Tensor end, Tensor weight) -> Tensor",
        lambda a, b, w: a + w * (b - a),
        3,
        DTYPES_FLOAT,
        inplace=True,
    ),
    nary(
        "clamp(Tensor input, Tensor? min=None, Tensor? max=None) -> Tensor",
        _clamp,
        3,
        DTYPES_NUMERIC,
        samples="clamp",
        inplace=True,
        attrs={"limits": True},
        out=OUT_SAME_DTYPE,
        notes="a missing bound becomes the dtype's limit before the kernel",
    ),
    nary(
        "addcmul(Tensor input, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor",
        lambda a, b, c, value=1: a + value * b * c,
        3,
        DTYPES_NUMERIC,
        inplace=True,
    ),
    nary(
        "addcdiv(Tensor input, Tensor tensor1, Tensor tensor2, *, Scalar value=1) -> Tensor",
        lambda a, b, c, value=1: a + value * b / c,
        3,
        DTYPES_FLOAT,
        inplace=True,
        samples="ternary_nonzero",
    ),
]
