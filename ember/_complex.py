"""The complex-number functions that are compositions of ops: ``real``/``imag`` (views through
``view_as_real``), ``conj``, the ``cfloat``/``cdouble`` casts, the conjugate-bit queries, and
``complex``/``polar`` (the decompositions of their rows in ``optable/complex_surface.py``).

``conj`` of a complex tensor is lazy, as in PyTorch: a view of the same storage with the
conjugate bit set (the ``_conj`` row); ``imag`` of such a view is a view with the negative bit
(``_neg_view``). ``dispatcher/mathbits.py`` makes the bits transparent to every other op.
"""

from __future__ import annotations

from . import _dtype as dt
from ._frontends import _caster
from ._tensor import Tensor
from .dispatcher.optable import OPS

_PARTS = (dt.float32, dt.float64)


def _tensor_arg(name: str, x) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(x).__name__}")  # fmt: skip


def _unconjugated(input: Tensor) -> Tensor:
    # The stored values of a conjugate view (view_as_real refuses the view itself).
    return OPS["_conj"](input) if input._conj_bit else input


def real(input: Tensor) -> Tensor:
    """The real parts of a complex tensor as a view (a real tensor is returned as it is)."""
    _tensor_arg("real", input)
    if not input.dtype.is_complex:
        return input
    return OPS["view_as_real"](_unconjugated(input)).select(-1, 0)


def imag(input: Tensor) -> Tensor:
    """The imaginary parts of a complex tensor as a view (of a conjugate view: a negative view,
    as in PyTorch)."""
    _tensor_arg("imag", input)
    if not input.dtype.is_complex:
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    part = OPS["view_as_real"](_unconjugated(input)).select(-1, 1)
    return OPS["_neg_view"](part) if input._conj_bit else part


def conj(input: Tensor) -> Tensor:
    """The complex conjugate as a view with the conjugate bit flipped (no copy; a real tensor is
    returned as it is). ``resolve_conj`` or ``conj_physical`` give a materialized one."""
    _tensor_arg("conj", input)
    if not input.dtype.is_complex:
        return input
    return OPS["_conj"](input)


def resolve_conj(input: Tensor) -> Tensor:
    """``input``'s values in a new tensor without the conjugate bit (``input`` when unset)."""
    _tensor_arg("resolve_conj", input)
    return OPS["clone"](input) if input._conj_bit else input


def resolve_neg(input: Tensor) -> Tensor:
    """``input``'s values in a new tensor without the negative bit (``input`` when unset)."""
    _tensor_arg("resolve_neg", input)
    return OPS["clone"](input) if input._neg_bit else input


def is_conj(input: Tensor) -> bool:
    """Whether ``input`` is a lazy conjugate view (``conj()`` of a complex tensor)."""
    return input._conj_bit


def is_neg(input: Tensor) -> bool:
    """Whether ``input`` is a lazy negative view (``imag`` of a conjugate view)."""
    return input._neg_bit


def is_complex(input: Tensor) -> bool:
    """Whether ``input``'s dtype is complex64 or complex128."""
    return input.is_complex()


def _parts(name: str, first: str, a, second: str, b) -> None:
    for arg, x in ((first, a), (second, b)):
        if not isinstance(x, Tensor):
            raise TypeError(f"{name}(): argument '{arg}' must be Tensor, not {type(x).__name__}")
    if a.dtype not in _PARTS or b.dtype not in _PARTS:
        raise RuntimeError(
            f"{name}(): expected both inputs to be Float or Double tensors but got "
            f"{dt.SCALAR_NAMES[a.dtype]} and {dt.SCALAR_NAMES[b.dtype]}"
        )
    if a.dtype is not b.dtype:
        raise RuntimeError(
            f"{name}(): expected object of scalar type {dt.SCALAR_NAMES[a.dtype]} but got scalar "
            f"type {dt.SCALAR_NAMES[b.dtype]} for second argument"
        )


def complex(real: Tensor, imag: Tensor) -> Tensor:
    """A complex tensor from real and imaginary parts of one float dtype (broadcast).

    Example:
        >>> ember.complex(ember.tensor([1.0]), ember.tensor([2.0]))  # tensor([1.+2.j])
    """
    _parts("complex", "real", real, "imag", imag)
    import ember  # the stacking frontends are bound at the end of ember's import

    real, imag = ember.broadcast_tensors(real, imag)
    return OPS["view_as_complex"](ember.stack([real, imag], -1))


def polar(abs: Tensor, angle: Tensor) -> Tensor:
    """``abs * (cos(angle) + i sin(angle))``, complex of the parts' float dtype."""
    _parts("polar", "abs", abs, "angle", angle)
    return complex(abs * OPS["cos"](angle), abs * OPS["sin"](angle))


def _real_property(self):
    return real(self)


def _set_real(self, value) -> None:
    real(self).copy_(value)


def _imag_property(self):
    return imag(self)


def _set_imag(self, value) -> None:
    imag(self).copy_(value)


FUNCTIONS = {
    "real": real,
    "imag": imag,
    "conj": conj,
    "resolve_conj": resolve_conj,
    "resolve_neg": resolve_neg,
    "is_conj": is_conj,
    "is_neg": is_neg,
    "is_complex": is_complex,
}
METHODS = {
    "conj": conj,
    "resolve_conj": resolve_conj,
    "resolve_neg": resolve_neg,
    "is_conj": is_conj,
    "is_neg": is_neg,
    "real": property(_real_property, _set_real),
    "imag": property(_imag_property, _set_imag),
    "cfloat": _caster(dt.complex64),
    "cdouble": _caster(dt.complex128),
}
