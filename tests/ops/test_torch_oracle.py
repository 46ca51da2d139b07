"""PyTorch as the oracle where numpy is not one: type promotion (tensors, 0-dim tensors, Python
scalars), elementwise result dtypes, and results whose semantics numpy does not share (sign of
NaN, integer division rounding, remainder sign, clamp with NaN, round half to even...).

Ops are taken from the op table; ``TORCH_SPELLING`` only names the PyTorch call where it is not
``torch.<name>`` or ``torch.nn.functional.<name>``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import ember
from ember.dispatcher.opdef import Kind
from ember.dispatcher.optable import OPS

from .checks import ALL_DTYPES, host
from .sampling import complete

torch = pytest.importorskip("torch")

TORCH_SPELLING = {
    "div_trunc": lambda a, b: torch.div(a, b, rounding_mode="trunc"),
    "_to_copy": lambda x, dtype: x.to(getattr(torch, dtype.name)),
}


def torch_fn(name):
    if name in TORCH_SPELLING:
        return TORCH_SPELLING[name]
    return getattr(torch, name, None) or getattr(torch.nn.functional, name, None)


def torch_dtype(d):
    return getattr(torch, d.name)


def _operands(kind: str, dtype):
    """``(ember value, torch value)``: a tensor, a 0-dim tensor, or a Python scalar (``dtype``
    is then the scalar itself)."""
    if kind == "scalar":
        return dtype, dtype
    shape = (2,) if kind == "tensor" else ()
    return ember.ones(shape, dtype=dtype), torch.ones(shape, dtype=torch_dtype(dtype))


def _outcome(fn, *args):
    """The result's dtype name, or the exception type if the call raised."""
    try:
        return fn(*args).dtype.__repr__().split(".")[-1]
    except (RuntimeError, TypeError) as exc:
        return type(exc)


# Deliberate differences from PyTorch, as data: (op, dtype name) -> why.
KNOWN_DIFFERENCES = {
    ("pow", "bool"): "PyTorch raises bool to bool powers; ember's pow is numeric only",
    ("softsign", "bool"): "PyTorch's softsign has no bool kernel; ember's promotes bool to float",
}


def _known(name: str, *operands) -> bool:
    """Whether a mismatch for these operands is one of KNOWN_DIFFERENCES."""
    for x in operands:
        d = getattr(x, "name", type(x).__name__)
        family = "int" if d in ("uint8", "int8", "int16", "int32", "int64") else d
        if (name, d) in KNOWN_DIFFERENCES or (name, family) in KNOWN_DIFFERENCES:
            return True
    return False


# ---- promotion ------------------------------------------------------------------------------
TENSOR_KINDS = [("tensor", "tensor"), ("tensor", "0-dim"), ("0-dim", "tensor"), ("0-dim", "0-dim")]
SCALARS = [True, 3, 2.5]
MIXED_KINDS = [(k, "scalar") for k in ("tensor", "0-dim")] + [("scalar", "tensor")]


def _pairs(kinds):
    first = SCALARS if kinds[0] == "scalar" else ALL_DTYPES
    second = SCALARS if kinds[1] == "scalar" else ALL_DTYPES
    return [(a, b) for a in first for b in second]


def _promotion_mismatches(kinds, ember_fn, torch_fn_, name="") -> list:
    """Mismatches over every operand pair. A TypeError from PyTorch means its function takes no
    such operand (``torch.atan2(t, 2.5)``): it gives no answer to compare with."""
    found = []
    for a, b in _pairs(kinds):
        ea, ta = _operands(kinds[0], a)
        eb, tb = _operands(kinds[1], b)
        got, want = _outcome(ember_fn, ea, eb), _outcome(torch_fn_, ta, tb)
        if want is TypeError or _known(name, a, b):
            continue
        if isinstance(want, type):  # PyTorch refuses: ember must refuse too
            if not isinstance(got, type):
                found.append(f"{a!r},{b!r}: ember gives {got}, torch raises {want.__name__}")
        elif got != want:
            found.append(f"{a!r},{b!r}: ember {got}, torch {want}")
    return found


class _DtypeOf:
    """Adapts result_type (which returns a dtype) to ``_outcome`` (which reads ``.dtype``)."""

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, *args):
        return type("R", (), {"dtype": self.fn(*args)})()


@pytest.mark.parametrize("kinds", TENSOR_KINDS + MIXED_KINDS, ids="-".join)
def test_result_type_matches_torch(kinds):
    found = _promotion_mismatches(kinds, _DtypeOf(ember.result_type), _DtypeOf(torch.result_type))
    assert not found, "\n".join(found)


@pytest.fixture
def float64_default():
    ember.set_default_dtype(ember.float64)
    torch.set_default_dtype(torch.float64)
    yield
    ember.set_default_dtype(ember.float32)
    torch.set_default_dtype(torch.float32)


@pytest.mark.parametrize("kinds", MIXED_KINDS, ids="-".join)
def test_result_type_with_float64_default_matches_torch(kinds, float64_default):
    found = _promotion_mismatches(kinds, _DtypeOf(ember.result_type), _DtypeOf(torch.result_type))
    assert not found, "\n".join(found)


def _elementwise(arity: int) -> list:
    return [
        name
        for name, op in OPS.items()
        if op.kind is Kind.ELEMENTWISE
        and op.info.get("arity") == arity
        and op.inplace_of is None
        and torch_fn(name) is not None
    ]


@pytest.mark.parametrize("name", _elementwise(2))
@pytest.mark.parametrize("kinds", TENSOR_KINDS[:2] + MIXED_KINDS, ids="-".join)
def test_binary_result_dtype_matches_torch(name, kinds):
    """Every dtype pair: the same result dtype as PyTorch, or an error where PyTorch errs."""
    op = OPS[name]
    call = lambda a, b: op(*complete(op, (a, b)))  # noqa: E731
    found = _promotion_mismatches(kinds, call, torch_fn(name), name)
    assert not found, "\n".join(found)


@pytest.mark.parametrize("name", _elementwise(1))
def test_unary_result_dtype_matches_torch(name):
    op = OPS[name]
    found = []
    for d in ALL_DTYPES:
        e, t = _operands("tensor", d)
        got, want = _outcome(lambda x: op(*complete(op, (x,))), e), _outcome(torch_fn(name), t)
        if _known(name, d):
            continue
        if isinstance(want, type) != isinstance(got, type) or (
            not isinstance(want, type) and got != want
        ):
            found.append(f"{d.name}: ember {got}, torch {want}")
    assert not found, "\n".join(found)


# ---- semantics numpy does not share ---------------------------------------------------------
NAN, INF = math.nan, math.inf
FLOATS = (ember.float16, ember.bfloat16, ember.float32, ember.float64)
SIGNED = (ember.int8, ember.int16, ember.int32, ember.int64)

# (op, dtypes, operands): operands are lists (tensors) or Python numbers, in schema order.
SPECIAL_CASES = [
    ("sign", FLOATS, [[NAN, -0.0, 0.0, -3.0, 3.0, INF, -INF]]),
    ("div_trunc", SIGNED, [[-7, 7, -7, 7, -1, 0], [2, -2, -2, 2, 3, 5]]),
    ("floor_divide", SIGNED, [[-7, 7, -7, 7, -1, 0], [2, -2, -2, 2, 3, 5]]),
    ("remainder", SIGNED, [[-7, 7, -7, 7, -1, 0], [2, -2, -2, 2, 3, 5]]),
    ("fmod", SIGNED, [[-7, 7, -7, 7, -1, 0], [2, -2, -2, 2, 3, 5]]),
    ("div_trunc", FLOATS, [[-7.5, 7.5, -0.5, 5.0], [2.0, -2.0, 4.0, INF]]),
    ("floor_divide", FLOATS, [[-7.5, 7.5, -0.5, 5.0, -5.0], [2.0, -2.0, 4.0, INF, INF]]),
    ("remainder", FLOATS, [[-7.5, 7.5, -0.5, 5.0, -5.0], [2.0, -2.0, 4.0, INF, INF]]),
    ("fmod", FLOATS, [[-7.5, 7.5, -0.5, 5.0], [2.0, -2.0, 4.0, INF]]),
    ("round", FLOATS, [[0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4999, NAN]]),
    ("clamp", FLOATS, [[NAN, 1.0, 5.0, 3.0], [2.0, NAN, 2.0, 2.0], [4.0, 4.0, NAN, 4.0]]),
    ("clamp", FLOATS, [[NAN, 1.0, 5.0], 2.0, 4.0]),
    ("clamp", FLOATS, [[1.0, 5.0, 3.0], 4.0, 2.0]),  # min > max: everything is max
    ("maximum", FLOATS, [[NAN, 1.0, -1.0], [1.0, NAN, INF]]),
    ("minimum", FLOATS, [[NAN, 1.0, -1.0], [1.0, NAN, -INF]]),
    ("fmax", FLOATS, [[NAN, 1.0, NAN], [1.0, NAN, NAN]]),
    ("fmin", FLOATS, [[NAN, 1.0, NAN], [1.0, NAN, NAN]]),
    ("pow", SIGNED, [[0, -2, 3, 1], [0, 3, 2, 9]]),
    ("pow", FLOATS, [[-8.0, 0.0, 0.0, NAN, 1.0], [1 / 3, -1.0, 0.0, 0.0, NAN]]),
    ("relu", FLOATS, [[NAN, -1.0, INF]]),  # relu(-0.0)'s sign differs between PyTorch kernels
    ("hardtanh", FLOATS, [[NAN, 5.0, -5.0]]),
    ("hardtanh", (ember.uint8,), [[9, 0, 3]]),
    ("nan_to_num", FLOATS, [[NAN, INF, -INF, 1.0]]),
    ("bitwise_left_shift", SIGNED, [[1, 3, -1, 5], [7, 8, 9, 0]]),
    ("bitwise_right_shift", SIGNED, [[1, -3, -1, 5], [7, 8, 9, 0]]),
    ("logaddexp", FLOATS, [[-INF, INF, -INF], [-INF, INF, 1.0]]),
    ("xlogy", FLOATS, [[0.0, 0.0, 0.0, 2.0], [NAN, 0.0, INF, NAN]]),
    ("copysign", FLOATS, [[1.0, 1.0, -2.0], [-0.0, 0.0, NAN]]),
    ("atan2", FLOATS, [[0.0, -0.0, 0.0, -0.0], [-0.0, -0.0, 0.0, 0.0]]),
    ("frac", FLOATS, [[-1.5, 1.5, -0.0, INF]]),
    ("abs", SIGNED, [[-5, 5, 0]]),
    ("neg", (ember.uint8,), [[0, 1, 255]]),
    ("add", (ember.bool,), [[True, True, False], [True, False, False]]),
    ("mul", (ember.bool,), [[True, True, False], [True, False, False]]),
    ("sub", (ember.bool,), [[True], [False]]),
    ("div", SIGNED, [[-7, 7, 0], [2, -2, 5]]),
    ("eq", FLOATS, [[NAN, 0.0], [NAN, -0.0]]),
    # Not -100: PyTorch's float32 sigmoid(-100) overflows exp(100) to 0; ember gives 3.8e-44.
    ("sigmoid", FLOATS, [[-INF, INF, NAN, -1000.0]]),
]


def _tensors(values, dtype):
    if not isinstance(values, list):
        return values, values
    array = np.array(values).astype(dtype.np)
    return ember.from_numpy(array.copy()), torch.tensor(array.astype(np.float64)).to(
        torch_dtype(dtype)
    )


@pytest.mark.parametrize(
    "name,dtype_name,operands",
    [(name, d.name, ops) for name, dtypes, ops in SPECIAL_CASES for d in dtypes],
)
def test_special_values_match_torch(name, dtype_name, operands):
    dtype = getattr(ember, dtype_name)
    pairs = [_tensors(v, dtype) for v in operands]
    op = OPS[name]
    try:
        want = torch_fn(name)(*(t for _e, t in pairs))
    except (RuntimeError, TypeError):
        with pytest.raises((RuntimeError, TypeError)):
            op(*complete(op, tuple(e for e, _t in pairs)))
        return
    got = op(*complete(op, tuple(e for e, _t in pairs)))
    assert got.dtype.name == str(want.dtype).split(".")[-1]
    expected = want.to(torch.float64).numpy() if want.is_floating_point() else want.numpy()
    actual = host(got).astype(expected.dtype)
    np.testing.assert_array_equal(actual, expected, f"{name}[{dtype_name}] {operands}")
    zeros = expected == 0
    np.testing.assert_array_equal(
        np.signbit(actual[zeros]), np.signbit(expected[zeros]), f"{name}: signs of zeros"
    )
