"""Elementwise ops: math, activations, comparisons, logic, ``where``.

Operands are cast to the dtype the trace recorded for the result (PyTorch's promotion, already
decided by the op table), so ONNX, which never promotes, sees matching types. Ops ONNX lacks are
written in ONNX ops with PyTorch's formulas (``torch/onnx/symbolic_opset9.py``).
"""

from __future__ import annotations

import math

import ml_dtypes

from ember import _dtype as dt
from ember.dispatcher.promotion import result_type

from ..builder import V


class _Operand:
    """What promotion reads of a tensor (its dtype, whether it has dims)."""

    __slots__ = ("_dtype", "_shape")

    def __init__(self, v: V):
        self._dtype = v.dtype
        self._shape = v.sizes if v.sizes is not None else (1,)


def common_dtype(*args):
    """PyTorch's promoted dtype of tensors (V) and Python numbers."""
    operands = [_Operand(a) if isinstance(a, V) else a for a in args if a is not None]
    return result_type(operands, _Operand)


def compute_dtype(g, *args):
    """The dtype arithmetic runs in: the result's, or the promoted inputs' for bool results."""
    out = g.out_dtype()
    return common_dtype(*args) if out is dt.bool_ else out


# ---- builders of rules -------------------------------------------------------------------
def unary(op_type: str, **attrs):
    """``op_type(x)`` on ``x`` cast to the result dtype."""

    def rule(g, x, *_ignored):
        return g.op(op_type, g.cast(x, g.out_dtype()), **attrs)

    return rule


def rounding(op_type: str):
    """ceil/floor/round: integers are already whole (ONNX defines these for floats only)."""

    def rule(g, x):
        return x if x.dtype.category != dt.FLOATING else g.op(op_type, x)

    return rule


def binary(op_type: str):
    """``op_type(a, b)`` on operands cast to the result dtype."""

    def rule(g, a, b):
        out = g.out_dtype()
        return g.op(op_type, g.tensor(a, out), g.tensor(b, out))

    return rule


def compare(op_type: str, negate: bool = False):
    def rule(g, a, b):
        common = common_dtype(a, b)
        out = g.op(op_type, g.tensor(a, common), g.tensor(b, common), dtype=dt.bool_)
        return g.op("Not", out) if negate else out

    return rule


def logical(op_type: str):
    def rule(g, a, b):
        return g.op(op_type, g.tensor(a, dt.bool_), g.tensor(b, dt.bool_), dtype=dt.bool_)

    return rule


def bitwise(logical_op: str, bitwise_op: str):
    """bool operands: the logical op; integers: the Bitwise* op (opset 18)."""

    def rule(g, a, b):
        out = g.out_dtype()
        if out is dt.bool_:
            return logical(logical_op)(g, a, b)
        g.require(18)
        return g.op(bitwise_op, g.tensor(a, out), g.tensor(b, out))

    return rule


def bitwise_not(g, x):
    if x.dtype is dt.bool_:
        return g.op("Not", x)
    g.require(18)
    return g.op("BitwiseNot", x)


def _float_input(g, x) -> V:
    return g.cast(x, g.out_dtype())


def _c(g, value, like: V) -> V:
    return g.const(value, like.dtype)


# ---- formulas for what ONNX lacks ----------------------------------------------------------
def rsqrt(g, x):
    return g.op("Reciprocal", g.op("Sqrt", _float_input(g, x)))


def square(g, x):
    x = _float_input(g, x)
    return g.op("Mul", x, x)


def erfc(g, x):
    x = _float_input(g, x)
    return g.op("Sub", _c(g, 1, x), g.op("Erf", x))


def exp2(g, x):
    x = _float_input(g, x)
    return g.op("Pow", _c(g, 2, x), x)


def expm1(g, x):
    x = _float_input(g, x)
    return g.op("Sub", g.op("Exp", x), _c(g, 1, x))


def _log_base(base: float):
    def rule(g, x):
        x = _float_input(g, x)
        return g.op("Div", g.op("Log", x), _c(g, math.log(base), x))

    return rule


def log1p(g, x):
    x = _float_input(g, x)
    return g.op("Log", g.op("Add", x, _c(g, 1, x)))


def trunc(g, x):
    if x.dtype.category != dt.FLOATING:
        return x
    return g.op("Mul", g.op("Sign", x), g.op("Floor", g.op("Abs", x)))


def frac(g, x):
    return g.op("Sub", x, trunc(g, x))


def silu(g, x):
    x = _float_input(g, x)
    return g.op("Mul", x, g.op("Sigmoid", x))


def mish(g, x):
    x = _float_input(g, x)
    return g.op("Mul", x, g.op("Tanh", g.op("Softplus", x)))


def gelu(g, x, approximate: str = "none"):
    """ONNX ``Gelu`` from opset 20; before, PyTorch's formulas (erf or tanh form)."""
    x = _float_input(g, x)
    if g.opset >= 20:
        return g.op("Gelu", x, approximate=approximate)
    half = g.op("Mul", x, _c(g, 0.5, x))
    if approximate == "tanh":
        cube = g.op("Mul", g.op("Mul", x, x), x)
        inner = g.op("Add", x, g.op("Mul", cube, _c(g, 0.044715, x)))
        inner = g.op("Mul", inner, _c(g, math.sqrt(2 / math.pi), x))
        return g.op("Mul", half, g.op("Add", g.op("Tanh", inner), _c(g, 1, x)))
    erf = g.op("Erf", g.op("Mul", x, _c(g, 1 / math.sqrt(2), x)))
    return g.op("Mul", half, g.op("Add", erf, _c(g, 1, x)))


def softplus(g, x, beta: float = 1.0, threshold: float = 20.0):
    """PyTorch's: ``x`` where ``x * beta > threshold``, else ``log(1 + exp(x * beta)) / beta``."""
    x = _float_input(g, x)
    scaled = g.op("Mul", x, _c(g, beta, x))
    soft = g.op("Div", g.op("Softplus", scaled), _c(g, beta, x))
    linear = g.op("Greater", scaled, _c(g, threshold, x), dtype=dt.bool_)
    return g.op("Where", linear, x, soft)


def logsigmoid(g, x):
    x = _float_input(g, x)
    return g.op("Neg", g.op("Softplus", g.op("Neg", x)))


def hardtanh(g, x, min_val: float = -1.0, max_val: float = 1.0):
    return g.op("Clip", x, _c(g, min_val, x), _c(g, max_val, x))


def relu6(g, x):
    return hardtanh(g, x, 0.0, 6.0)


def isfinite(g, x):
    if x.dtype.category != dt.FLOATING:
        return g.op("Not", g.op("Equal", x, x, dtype=dt.bool_))  # all False -> True
    bad = g.op("Or", g.op("IsInf", x, dtype=dt.bool_), g.op("IsNaN", x, dtype=dt.bool_))
    return g.op("Not", bad)


def _integral_predicate(op_type: str):
    """isnan/isinf: integers are never NaN or infinite."""

    def rule(g, x):
        if x.dtype.category != dt.FLOATING:
            zero = g.op("Sub", x, x)
            return g.op("Not", g.op("Equal", zero, zero, dtype=dt.bool_))
        return g.op(op_type, x, dtype=dt.bool_)

    return rule


def nan_to_num(g, x, nan=0.0, posinf=None, neginf=None):
    if x.dtype.category != dt.FLOATING:
        return x
    big = float(ml_dtypes.finfo(x.dtype.np).max)
    posinf = big if posinf is None else posinf
    neginf = -big if neginf is None else neginf
    out = g.op("Where", g.op("IsNaN", x, dtype=dt.bool_), _c(g, nan, x), x)
    out = g.op("Where", g.op("IsInf", x, detect_negative=0, dtype=dt.bool_), _c(g, posinf, x), out)
    return g.op("Where", g.op("IsInf", x, detect_positive=0, dtype=dt.bool_), _c(g, neginf, x), out)


# ---- binary formulas -----------------------------------------------------------------------
def _operands(g, a, b):
    out = g.out_dtype()
    return g.tensor(a, out), g.tensor(b, out)


def remainder(g, a, b):
    """Python's ``%``: the divisor's sign (``Mod`` fmod=0 is integer-only in ONNX)."""
    a, b = _operands(g, a, b)
    if a.dtype.category != dt.FLOATING:
        return g.op("Mod", a, b, fmod=0)
    return g.op("Sub", a, g.op("Mul", g.op("Floor", g.op("Div", a, b)), b))


def fmod(g, a, b):
    a, b = _operands(g, a, b)
    return g.op("Mod", a, b, fmod=1)


def floor_divide(g, a, b):
    a, b = _operands(g, a, b)
    if a.dtype.category == dt.FLOATING:
        return g.op("Floor", g.op("Div", a, b))
    rest = g.op("Mod", a, b, fmod=0)
    return g.op("Div", g.op("Sub", a, rest), b)


def div_trunc(g, a, b):
    a, b = _operands(g, a, b)
    quotient = g.op("Div", a, b)
    return trunc(g, quotient)


def atan2(g, a, b):
    """PyTorch's formula: ``atan(a / b)`` moved to the right quadrant by the signs."""
    a, b = _operands(g, a, b)
    base = g.op("Atan", g.op("Div", a, b))
    zero = _c(g, 0, a)
    pi = _c(g, math.pi, a)
    left = g.op("Less", b, zero, dtype=dt.bool_)
    below = g.op("Less", a, zero, dtype=dt.bool_)
    shift = g.op("Where", below, g.op("Neg", pi), pi)
    return g.op("Where", left, g.op("Add", base, shift), base)


def hypot(g, a, b):
    a, b = _operands(g, a, b)
    return g.op("Sqrt", g.op("Add", g.op("Mul", a, a), g.op("Mul", b, b)))


def copysign(g, a, b):
    a, b = _operands(g, a, b)
    magnitude = g.op("Abs", a)
    negative = g.op("Less", b, _c(g, 0, b), dtype=dt.bool_)
    return g.op("Where", negative, g.op("Neg", magnitude), magnitude)


def logaddexp(g, a, b):
    a, b = _operands(g, a, b)
    high = g.op("Max", a, b)
    diff = g.op("Neg", g.op("Abs", g.op("Sub", a, b)))
    return g.op("Add", high, g.op("Softplus", diff))


def xlogy(g, a, b):
    return x_log(g, a, b, 0)


def x_log(g, a, b, shift: float):
    """a log(b + shift), 0 where a == 0 unless b is NaN (xlogy; shift 1: xlog1py)."""
    a, b = _operands(g, a, b)
    product = g.op("Mul", a, g.op("Log", g.op("Add", b, _c(g, shift, b)) if shift else b))
    is_zero = g.op("Equal", a, _c(g, 0, a), dtype=dt.bool_)
    keep_nan = g.op("And", is_zero, g.op("Not", g.op("IsNaN", b, dtype=dt.bool_)))
    return g.op("Where", keep_nan, _c(g, 0, a), product)


def _nan_aware(op_type: str):
    """fmax/fmin: a NaN operand yields the other one."""

    def rule(g, a, b):
        a, b = _operands(g, a, b)
        out = g.op(op_type, a, b)
        if a.dtype.category != dt.FLOATING:
            return out
        out = g.op("Where", g.op("IsNaN", a, dtype=dt.bool_), b, out)
        return g.op("Where", g.op("IsNaN", b, dtype=dt.bool_), a, out)

    return rule


def lerp(g, start, end, weight):
    """PyTorch's two-sided formula, exact at both ends."""
    out = g.out_dtype()
    start, end, weight = (g.tensor(x, out) for x in (start, end, weight))
    diff = g.op("Sub", end, start)
    low = g.op("Add", start, g.op("Mul", weight, diff))
    high = g.op("Sub", end, g.op("Mul", diff, g.op("Sub", _c(g, 1, weight), weight)))
    small = g.op("Less", g.op("Abs", weight), _c(g, 0.5, weight), dtype=dt.bool_)
    return g.op("Where", small, low, high)


def _addc(op_type: str):
    def rule(g, x, t1, t2, value=1):
        out = g.out_dtype()
        x, t1, t2 = (g.tensor(v, out) for v in (x, t1, t2))
        term = g.op(op_type, t1, t2)
        if value != 1:
            term = g.op("Mul", term, g.tensor(value, out))
        return g.op("Add", x, term)

    return rule


def where(g, condition, a, b):
    out = g.out_dtype()
    return g.op("Where", g.tensor(condition, dt.bool_), g.tensor(a, out), g.tensor(b, out))


def clamp(g, x, low=None, high=None):
    """``Clip`` for scalar bounds; ``Max``/``Min`` for tensor bounds (they broadcast)."""
    out = g.out_dtype()
    x = g.cast(x, out)
    for bound, op_type in ((low, "Max"), (high, "Min")):
        if bound is None:
            continue
        if isinstance(bound, V) and bound.sizes != ():
            x = g.op(op_type, x, g.cast(bound, out))
        else:
            x = g.op("Clip", x, *_clip_bounds(g, bound, op_type, out))
    return x


def _clip_bounds(g, bound, op_type: str, dtype):
    value = g.scalar(bound, dtype)
    return (value, None) if op_type == "Max" else (None, value)


def pow_(g, base, exponent):
    out = g.out_dtype()
    return g.op("Pow", g.tensor(base, out), g.tensor(exponent, out))


TABLE = {
    # one ONNX op each
    "abs": unary("Abs"),
    "acos": unary("Acos"),
    "acosh": unary("Acosh"),
    "asin": unary("Asin"),
    "asinh": unary("Asinh"),
    "atan": unary("Atan"),
    "atanh": unary("Atanh"),
    "ceil": rounding("Ceil"),
    "cos": unary("Cos"),
    "cosh": unary("Cosh"),
    "erf": unary("Erf"),
    "exp": unary("Exp"),
    "floor": rounding("Floor"),
    "log": unary("Log"),
    "neg": unary("Neg"),
    "reciprocal": unary("Reciprocal"),
    "relu": unary("Relu"),
    "round": rounding("Round"),
    "sigmoid": unary("Sigmoid"),
    "sign": unary("Sign"),
    "sin": unary("Sin"),
    "sinh": unary("Sinh"),
    "sqrt": unary("Sqrt"),
    "tan": unary("Tan"),
    "tanh": unary("Tanh"),
    "softsign": unary("Softsign"),
    "selu": unary("Selu"),
    "hardswish": unary("HardSwish"),
    "hardsigmoid": unary("HardSigmoid", alpha=1 / 6),
    "leaky_relu": lambda g, x, slope=0.01: g.op("LeakyRelu", x, alpha=slope),
    "elu": lambda g, x, alpha=1.0: g.op("Elu", x, alpha=alpha),
    "celu": lambda g, x, alpha=1.0: g.op("Celu", x, alpha=alpha),
    "logical_not": lambda g, x: g.op("Not", g.cast(x, dt.bool_)),
    "isnan": _integral_predicate("IsNaN"),
    "isinf": _integral_predicate("IsInf"),
    "add": binary("Add"),
    "sub": binary("Sub"),
    "mul": binary("Mul"),
    "div": binary("Div"),
    "pow": pow_,
    "maximum": binary("Max"),
    "minimum": binary("Min"),
    "eq": compare("Equal"),
    "ne": compare("Equal", negate=True),
    "lt": compare("Less"),
    "le": compare("LessOrEqual"),
    "gt": compare("Greater"),
    "ge": compare("GreaterOrEqual"),
    "logical_and": logical("And"),
    "logical_or": logical("Or"),
    "logical_xor": logical("Xor"),
    # written in other ONNX ops
    "rsqrt": rsqrt,
    "square": square,
    "erfc": erfc,
    "exp2": exp2,
    "expm1": expm1,
    "log2": _log_base(2),
    "log10": _log_base(10),
    "log1p": log1p,
    "trunc": trunc,
    "frac": frac,
    "silu": silu,
    "mish": mish,
    "gelu": gelu,
    "softplus": softplus,
    "logsigmoid": logsigmoid,
    "hardtanh": hardtanh,
    "relu6": relu6,
    "isfinite": isfinite,
    "nan_to_num": nan_to_num,
    "remainder": remainder,
    "fmod": fmod,
    "floor_divide": floor_divide,
    "div_trunc": div_trunc,
    "atan2": atan2,
    "hypot": hypot,
    "copysign": copysign,
    "logaddexp": logaddexp,
    "xlogy": xlogy,
    "fmax": _nan_aware("Max"),
    "fmin": _nan_aware("Min"),
    "lerp": lerp,
    "addcmul": _addc("Mul"),
    "addcdiv": _addc("Div"),
    "where": where,
    "clamp": clamp,
    "bitwise_and": bitwise("And", "BitwiseAnd"),
    "bitwise_or": bitwise("Or", "BitwiseOr"),
    "bitwise_xor": bitwise("Xor", "BitwiseXor"),
    "bitwise_not": bitwise_not,
}
