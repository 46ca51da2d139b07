"""PyTorch's complex-number surface over the complex rows (issue 13): ``sgn``, ``isreal``, and
``complex``/``polar`` as rows (so their public functions take ``out=``).

All four are decompositions into rows that take complex tensors (``optable/complex.py``), so
every device that runs those runs these, and autograd differentiates the parts; ``sgn`` of a
complex tensor also has a CPU kernel (``dispatcher/complex_cpu.py``) for calls without autograd.
"""

from __future__ import annotations

import numpy as np

import ember
from ember import _dtype as dt

from ..opdef import DTYPES_ALL, OUT_SAME_DTYPE, TOLERANCES, Kind, OpDef, Out, Promotion
from .complex import COMPLEX
from .elementwise import _sign as _np_sign

_PARTS = frozenset({dt.float32, dt.float64})
# polar's sin and cos are other libms' than numpy's: its parts' tolerances, by the result dtype
_POLAR_TOLERANCES = {
    dt.complex64: TOLERANCES[dt.float32],
    dt.complex128: TOLERANCES[dt.float64],
}
# complex(out=) and polar(out=): at::complex_out's check, in its own words
_OUT_PARTS = Out(
    "exact",
    None,
    message="Expected object of scalar type {want} but got scalar type {got} for argument 'out'",
)


# ---- sgn -------------------------------------------------------------------------------------
def _sgn(x):
    """sign for real numbers; z / |z| for complex ones, 0 at 0 (PyTorch's sgn)."""
    if not x.dtype.is_complex:
        return ember.sign(x)
    magnitude = ember.abs(x)
    zero = magnitude == 0
    safe = ember.where(zero, ember.ones_like(magnitude), magnitude)
    return ember.where(zero, ember.zeros_like(x), x / safe)


def _np_sgn(x):
    if np.iscomplexobj(x):
        magnitude = np.abs(x)
        return np.where(magnitude == 0, 0, x / np.where(magnitude == 0, 1, magnitude))
    return _np_sign(x)


# ---- isreal ----------------------------------------------------------------------------------
def _isreal(x):
    """True where the imaginary part is 0 (every element of a real tensor, NaN included)."""
    if not x.dtype.is_complex:
        return ember.ones_like(x, dtype=ember.bool)
    return ember.imag(x) == 0


def _np_isreal(x):
    return np.imag(x) == 0 if np.iscomplexobj(x) else np.ones(np.shape(x), dtype=bool)


# ---- complex and polar -----------------------------------------------------------------------
def _complex(real, imag):
    from ember import _complex

    return _complex.complex(real, imag)


def _polar(abs, angle):
    from ember import _complex

    return _complex.polar(abs, angle)


def _run_parts(op, *args):
    """complex/polar check their parts themselves, with PyTorch's messages."""
    return op.decomposition(*args)


def _np_complex(real, imag):
    return (real + 1j * imag).astype(np.result_type(real, np.complex64))


def _np_polar(abs, angle):
    return _np_complex(abs * np.cos(angle), abs * np.sin(angle))


ROWS = [
    OpDef(
        "sgn(Tensor input) -> Tensor",
        Kind.ELEMENTWISE,
        _np_sgn,
        dtypes=DTYPES_ALL | COMPLEX,
        decomposition=_sgn,
        samples="unary",
        attrs={"arity": 1},
        inplace=True,
        out=OUT_SAME_DTYPE,
        notes="real dtypes: sign; complex: z/|z| (numpy CPU kernel without autograd)",
    ),
    OpDef(
        "isreal(Tensor input) -> Tensor",
        Kind.ELEMENTWISE,
        _np_isreal,
        promotion=Promotion.ALWAYS_BOOL,
        dtypes=DTYPES_ALL | COMPLEX,
        differentiable=False,
        decomposition=_isreal,
        samples="unary",
        attrs={"arity": 1},
        out=None,
        notes="imag == 0; True everywhere for real dtypes (NaN included), as PyTorch's",
    ),
    OpDef(
        "complex(Tensor real, Tensor imag) -> Tensor",
        Kind.ELEMENTWISE,
        _np_complex,
        dtypes=_PARTS,
        decomposition=_complex,
        runner=_run_parts,
        method=False,
        samples="complex_pair",
        out=_OUT_PARTS,
        notes="view_as_complex of the stacked parts; float parts give complex64, double complex128",
    ),
    OpDef(
        "polar(Tensor abs, Tensor angle) -> Tensor",
        Kind.ELEMENTWISE,
        _np_polar,
        dtypes=_PARTS,
        decomposition=_polar,
        runner=_run_parts,
        method=False,
        samples="complex_pair",
        tolerances=_POLAR_TOLERANCES,
        out=_OUT_PARTS,
        notes="complex(abs * cos(angle), abs * sin(angle))",
    ),
]
