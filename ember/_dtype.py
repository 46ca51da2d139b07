"""Data types: the dtypes ember supports, their numpy twins, and the default dtype.

``ALL`` is the ten real dtypes that op rows default to (and generated tests iterate); the complex
dtypes are ``COMPLEX``, which a row names to accept them, and ``EVERY`` is both. ``LIMITED`` are
the float8 and wide unsigned dtypes that PyTorch gives "limited support" (factories, casts,
copies, views, serialization; no arithmetic): no op row defaults to them (docs/float8.md)."""

from __future__ import annotations

import ml_dtypes
import numpy as np

# Promotion categories, lowest first (PyTorch: bool < integral < floating < complex).
BOOL, INTEGRAL, FLOATING, COMPLEX = 0, 1, 2, 3


class dtype:  # noqa: N801 - PyTorch's name
    """A tensor element type, like ``torch.dtype``. Instances are singletons (``ember.float32``)."""

    __slots__ = ("__weakref__", "category", "code", "is_signed", "itemsize", "name", "np")

    def __init__(self, name: str, np_dtype, category: int, is_signed: bool, code: int):
        self.name = name
        self.np = np.dtype(np_dtype)
        self.itemsize = self.np.itemsize
        self.category = category
        self.is_signed = is_signed
        # Small integer shared with native kernels (the C headers use the same numbering).
        self.code = code

    @property
    def is_floating_point(self) -> bool:
        return self.category == FLOATING

    @property
    def is_complex(self) -> bool:
        return self.category == COMPLEX

    def to_real(self) -> dtype:
        """The real dtype of this complex dtype's parts (itself for real dtypes)."""
        return _TO_REAL.get(self, self)

    def to_complex(self) -> dtype:
        """The complex dtype with parts of this floating dtype (itself for complex dtypes)."""
        if self.category == COMPLEX:
            return self
        found = _TO_COMPLEX.get(self)
        if found is None:
            raise RuntimeError(
                f"to_complex is not supported for {self} (ember has complex64 and "
                "complex128, from float32 and float64)"
            )
        return found

    def __repr__(self) -> str:
        return f"ember.{self.name}"

    def __reduce__(self):
        return (_by_name, (self.name,))


bool_ = dtype("bool", np.bool_, BOOL, False, 0)
uint8 = dtype("uint8", np.uint8, INTEGRAL, False, 1)
int8 = dtype("int8", np.int8, INTEGRAL, True, 2)
int16 = dtype("int16", np.int16, INTEGRAL, True, 3)
int32 = dtype("int32", np.int32, INTEGRAL, True, 4)
int64 = dtype("int64", np.int64, INTEGRAL, True, 5)
float16 = dtype("float16", np.float16, FLOATING, True, 6)
bfloat16 = dtype("bfloat16", ml_dtypes.bfloat16, FLOATING, True, 7)
float32 = dtype("float32", np.float32, FLOATING, True, 8)
float64 = dtype("float64", np.float64, FLOATING, True, 9)
complex64 = dtype("complex64", np.complex64, COMPLEX, True, 10)
complex128 = dtype("complex128", np.complex128, COMPLEX, True, 11)
# Limited support (the C kernels know codes 0-11 only; these are copied and cast in numpy).
float8_e4m3fn = dtype("float8_e4m3fn", ml_dtypes.float8_e4m3fn, FLOATING, True, 12)
float8_e5m2 = dtype("float8_e5m2", ml_dtypes.float8_e5m2, FLOATING, True, 13)
float8_e4m3fnuz = dtype("float8_e4m3fnuz", ml_dtypes.float8_e4m3fnuz, FLOATING, True, 14)
float8_e5m2fnuz = dtype("float8_e5m2fnuz", ml_dtypes.float8_e5m2fnuz, FLOATING, True, 15)
float8_e8m0fnu = dtype("float8_e8m0fnu", ml_dtypes.float8_e8m0fnu, FLOATING, False, 16)
uint16 = dtype("uint16", np.uint16, INTEGRAL, False, 17)
uint32 = dtype("uint32", np.uint32, INTEGRAL, False, 18)
uint64 = dtype("uint64", np.uint64, INTEGRAL, False, 19)

ALL = (bool_, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64)
FLOATS = (float16, bfloat16, float32, float64)
INTS = (uint8, int8, int16, int32, int64)
COMPLEX_TYPES = (complex64, complex128)
EVERY = ALL + COMPLEX_TYPES
FLOAT8 = (float8_e4m3fn, float8_e5m2, float8_e4m3fnuz, float8_e5m2fnuz, float8_e8m0fnu)
WIDE_UNSIGNED = (uint16, uint32, uint64)
LIMITED = FLOAT8 + WIDE_UNSIGNED
LIMITED_SET = frozenset(LIMITED)
_TO_REAL = {complex64: float32, complex128: float64}
_TO_COMPLEX = {float32: complex64, float64: complex128}

# PyTorch's aliases.
ALIASES = {
    "bool": bool_,
    "half": float16,
    "float": float32,
    "double": float64,
    "short": int16,
    "int": int32,
    "long": int64,
    "cfloat": complex64,
    "cdouble": complex128,
}

# PyTorch's ScalarType names, which its error messages use ("result type Float can't be cast...").
SCALAR_NAMES = {
    bool_: "Bool",
    uint8: "Byte",
    int8: "Char",
    int16: "Short",
    int32: "Int",
    int64: "Long",
    float16: "Half",
    bfloat16: "BFloat16",
    float32: "Float",
    float64: "Double",
    complex64: "ComplexFloat",
    complex128: "ComplexDouble",
    float8_e4m3fn: "Float8_e4m3fn",
    float8_e5m2: "Float8_e5m2",
    float8_e4m3fnuz: "Float8_e4m3fnuz",
    float8_e5m2fnuz: "Float8_e5m2fnuz",
    float8_e8m0fnu: "Float8_e8m0fnu",
    uint16: "UInt16",
    uint32: "UInt32",
    uint64: "UInt64",
}

_BY_NAME = {d.name: d for d in EVERY + LIMITED}
_BY_NP = {d.np: d for d in EVERY + LIMITED}


def _by_name(name: str) -> dtype:
    return _BY_NAME[name]


def from_numpy_dtype(np_dtype) -> dtype:
    """The ember dtype for a numpy dtype, or TypeError naming the unsupported one."""
    found = _BY_NP.get(np.dtype(np_dtype))
    if found is None:
        supported = ", ".join(d.name for d in EVERY + LIMITED)
        raise TypeError(f"numpy dtype {np.dtype(np_dtype)} is not supported by ember ({supported})")
    return found


class _Defaults:
    __slots__ = ("float",)

    def __init__(self):
        self.float = float32


DEFAULTS = _Defaults()


def default_complex() -> dtype:
    """The dtype of Python complex numbers: complex128 when the default float is float64."""
    return complex128 if DEFAULTS.float is float64 else complex64


def get_default_dtype() -> dtype:
    """The dtype of new floating-point tensors (float32 unless changed)."""
    return DEFAULTS.float


def set_default_dtype(d: dtype, /) -> None:
    """Set the dtype of new floating-point tensors and of Python floats in type promotion.

    Args:
        d: a floating-point dtype.
    """
    if not isinstance(d, dtype) or not d.is_floating_point:
        raise TypeError(f"set_default_dtype: only floating-point dtypes are allowed, got {d}")
    DEFAULTS.float = d
