"""Complex dtypes in the op table: the complex-only rows, and which existing rows take complex64
and complex128 (``WIDEN``).

Every complex kernel named here is a CPU kernel over numpy's complex arithmetic, or OpenBLAS's
cgemm/zgemm for the products (``dispatcher/complex_cpu.py``, provider ``ember-complex-numpy``):
a declared stand-in until the C plugin has native complex kernels. No other device has complex
kernels or a fallback for them: a complex call there raises NotImplementedError naming the op,
the device and the dtype. Rows not listed keep their real dtypes and refuse complex tensors.
"""

from __future__ import annotations

import math

import numpy as np

import ember
from ember import _dtype as dt

from ..kinds import complex as run
from ..kinds import elementwise as run_elementwise
from ..opdef import DTYPES_ALL, DTYPES_FLOAT, OUT_SAME_DTYPE, Kind, OpDef, Promotion

COMPLEX = frozenset(dt.COMPLEX_TYPES)

# The matrix products over mm/bmm (cgemm/zgemm); vdot and linalg.vecdot conjugate their first.
PRODUCTS = frozenset(
    {"addmm", "addmv", "addbmm", "baddbmm", "dot", "vdot", "mv", "inner", "einsum", "linear"}
    | {"norm"}  # torch.norm: of |z|, with a real result
)
# Existing rows that accept complex tensors, with a complex CPU kernel (or, for composites, a
# decomposition over ops that have one).
WIDEN = frozenset(
    {"neg", "exp", "log", "sqrt", "rsqrt", "reciprocal", "square", "sin", "cos", "tan"}
    | {"sinh", "cosh", "tanh", "sigmoid", "abs", "add", "sub", "mul", "div", "pow", "eq", "ne"}
    | {"sum", "prod", "mean", "mm", "bmm", "matmul", "copy_", "fill_", "clone", "contiguous"}
    | {"where", "cumsum", "cumprod", "silu", "softsign"}
    | {"asin", "acos", "atan", "asinh", "acosh", "atanh", "log1p", "log2", "log10", "exp2"}
    | {"expm1", "sinc", "isnan", "isinf", "isfinite", "positive", "zero_"}
    | {"logical_not", "logical_and", "logical_or", "logical_xor", "logaddexp"}
    | {"lerp", "addcmul", "addcdiv"}
    | {"gather", "scatter", "scatter_add", "index_select", "index_add", "take", "put_"}
    | {"nonzero", "count_nonzero", "all", "any", "linspace"}
    | {"linear", "conv1d", "conv2d", "conv_transpose2d", "im2col", "col2im", "unfold"}
    | {"var", "std", "var_mean", "std_mean", "norm", "dist", "renorm", "logcumsumexp", "l1_loss"}
    | PRODUCTS
)
# Rows whose complex inputs give real results (|z| and arg z).
REAL_RESULT = frozenset({"abs", "angle"})


def _np_view_as_real(x):
    return np.stack([x.real, x.imag], axis=-1)


def _np_view_as_complex(x):
    return x[..., 0] + 1j * x[..., 1]


def _np_angle(x):
    if np.iscomplexobj(x):
        return np.angle(x)
    return np.where(np.isnan(x), x, np.where(x < 0, np.pi, 0.0)).astype(x.dtype)


def _angle(x):
    """angle of real numbers: pi for negatives, 0 otherwise, NaN kept; of complex numbers on
    devices without the complex kernel, atan2 of the parts (NaN where a part is NaN)."""
    if x.dtype.is_complex:
        parts = ember.view_as_real(x)
        return ember.atan2(parts[..., 1], parts[..., 0])
    zero = ember.zeros_like(x)
    return ember.where(ember.isnan(x), x, ember.where(x < 0, zero + math.pi, zero))


def _conj_physical(x):
    """Devices without the complex kernel: the imaginary parts negated through the real view
    (real dtypes: the value itself, in a new tensor)."""
    if not x.dtype.is_complex:
        return x.clone()
    parts = ember.view_as_real(x)
    return ember.view_as_complex(ember.stack([parts[..., 0], -parts[..., 1]], -1))


NEGATABLE = (DTYPES_ALL - {dt.bool_}) | COMPLEX


def _bit_view(name, ref, runner, dtypes, samples, bit) -> OpDef:
    """A lazy math-bit view (dispatcher/mathbits.py): ``conj()`` of complex tensors, ``imag`` of
    a conjugate view."""
    return OpDef(
        f"{name}(Tensor input) -> Tensor",
        Kind.VIEW,
        ref,
        runner=runner,
        dtypes=dtypes,
        samples=samples,
        kernel_args=f"none: a view of the same storage with the {bit} bit flipped",
        notes=f"the lazy {bit} view (dispatcher/mathbits.py)",
    )


ROWS = [
    OpDef(
        "view_as_real(Tensor input) -> Tensor",
        Kind.VIEW,
        _np_view_as_real,
        runner=run.view_as_real,
        dtypes=COMPLEX,
        samples="complex_values",
        kernel_args="none: a view of the same storage, reals twice as many",
        notes="complex only: real inputs are refused, as in PyTorch",
    ),
    OpDef(
        "view_as_complex(Tensor input) -> Tensor",
        Kind.VIEW,
        _np_view_as_complex,
        runner=run.view_as_complex,
        dtypes=frozenset({dt.float32, dt.float64}),
        samples="complex_parts",
        kernel_args="none: a view of the same storage, half as many complex elements",
    ),
    _bit_view("_conj", np.conjugate, run.conj_view, COMPLEX, "complex_values", "conjugate"),
    _bit_view("_neg_view", np.negative, run.neg_view, NEGATABLE, "unary", "negative"),
    OpDef(
        "conj_physical(Tensor input) -> Tensor",
        Kind.ELEMENTWISE,
        np.conjugate,
        dtypes=DTYPES_ALL | COMPLEX,
        decomposition=_conj_physical,
        runner=run_elementwise.unary,
        samples="unary",
        attrs={"arity": 1},
        inplace=True,
        out=OUT_SAME_DTYPE,
        notes="complex: numpy CPU kernel; real dtypes: a copy",
    ),
    OpDef(
        "angle(Tensor input) -> Tensor",
        Kind.ELEMENTWISE,
        _np_angle,
        promotion=Promotion.INT_TO_FLOAT,
        dtypes=DTYPES_FLOAT | COMPLEX,
        decomposition=_angle,
        runner=run_elementwise.unary,
        samples="unary",
        attrs={"arity": 1},
        notes="complex: numpy CPU kernel, real result; real dtypes: a decomposition",
    ),
]


def widen(ops: dict) -> None:
    """Add the complex dtypes to the rows in WIDEN (and their in-place forms), mark the rows with
    real results, and register the complex CPU kernels."""
    from .. import complex_cpu

    for op in ops.values():
        base = op.inplace_of or op
        if base.name in WIDEN:
            op.dtypes = op.dtypes | COMPLEX
        if base.name in REAL_RESULT:
            op.info["complex_to_real"] = True
    complex_cpu.register()
