"""PyTorch's legacy tensor types: ``ember.FloatTensor``, ``ember.LongTensor``... and their
``ember.cuda.*`` / ``ember.xpu.*`` forms, as older scripts use them::

    x = torch.FloatTensor(batch, hidden).zero_()     # sizes: uninitialised
    y = torch.LongTensor([1, 2, 3])                  # data
    dtype = torch.cuda.FloatTensor if use_cuda else torch.FloatTensor
    isinstance(x, torch.FloatTensor); x.type(torch.DoubleTensor)

Each is a class whose call constructs on its dtype and device type (sizes, a ``Size``, data, or
a tensor of the same type, which is returned as an alias, as torch does), whose ``isinstance``
tests dtype and device type, and which ``x.type(...)``, ``x.new(...)``'s relatives and
``set_default_tensor_type`` accept, also by name (``"torch.FloatTensor"``,
``"ember.cuda.LongTensor"``).
"""

from __future__ import annotations

import builtins
import sys
import warnings

from . import _dtype as dt
from ._size import Size
from ._tensor import Tensor

# torch's legacy type names: the name before "Tensor", and its dtype
KINDS = {
    "Float": dt.float32, "Double": dt.float64, "Half": dt.float16, "BFloat16": dt.bfloat16,
    "Long": dt.int64, "Int": dt.int32, "Short": dt.int16, "Char": dt.int8, "Byte": dt.uint8,
    "Bool": dt.bool_,
}  # fmt: skip


def _ember():
    return sys.modules["ember"]


def construct(dtype, device, args: tuple):
    """A legacy constructor's tensor: ``()`` no elements; integers or a ``Size`` are sizes
    (uninitialised); one sequence is data; one tensor of this dtype and device is aliased."""
    ember = _ember()
    if not args:
        return ember.empty((0,), dtype=dtype, device=device)
    if len(args) == 1 and isinstance(args[0], Tensor):
        other = args[0]
        if other.dtype != dtype or other.device.type != ember.device(device).type:
            raise TypeError(
                f"expected {dtype} on {ember.device(device).type} (got {other.dtype} on "
                f"{other.device.type})"
            )
        return other.detach()  # an alias, as torch's
    if len(args) == 1 and isinstance(args[0], Size):
        return ember.empty(tuple(args[0]), dtype=dtype, device=device)
    if all(isinstance(a, int) and not isinstance(a, builtins.bool) for a in args):
        return ember.empty(args, dtype=dtype, device=device)
    if len(args) == 1:
        return ember.tensor(args[0], dtype=dtype, device=device)
    kinds = [type(a).__name__ for a in args]
    raise TypeError(f"new(): sizes must be integers (a tuple of ints), got {kinds}")


def new(self: Tensor, *args, device=None) -> Tensor:
    """``x.new(...)``: the legacy constructor with x's dtype and device."""
    return construct(self.dtype, self.device if device is None else device, args)


class LegacyType(type):
    """The metaclass of the legacy types: calling one constructs, ``isinstance`` compares dtype
    and device type."""

    dtype: dt.dtype
    device_type: str

    def __call__(cls, *args, device=None):
        if device is not None and _ember().device(device).type != cls.device_type:
            raise RuntimeError(
                f"legacy constructor expects device type: {cls.device_type} but device type: "
                f"{_ember().device(device).type} was passed"
            )
        return construct(cls.dtype, device or cls.device_type, args)

    def __instancecheck__(cls, obj) -> bool:
        return (
            isinstance(obj, Tensor)
            and obj.dtype is cls.dtype
            and obj.device.type == cls.device_type
        )

    def __repr__(cls) -> str:
        return f"<class '{cls.__module__}.{cls.__name__}'>"

    @property
    def is_cuda(cls) -> bool:
        return cls.device_type == "cuda"

    @property
    def is_sparse(cls) -> bool:
        return False


_TYPES: dict = {}  # (device type, name) -> class


def legacy_type(device_type: str, name: str):
    """``ember.<name>`` (cpu) or ``ember.<device type>.<name>``, made on first use; None when
    ``name`` is not a legacy type name."""
    kind = name[: -len("Tensor")] if name.endswith("Tensor") else None
    if kind not in KINDS:
        return None
    found = _TYPES.get((device_type, name))
    if found is None:
        module = "ember" if device_type == "cpu" else f"ember.{device_type}"
        attributes = {"dtype": KINDS[kind], "device_type": device_type, "__module__": module}
        found = _TYPES[(device_type, name)] = LegacyType(name, (), attributes)
    return found


def from_name(text: str):
    """The legacy type a string names (``"torch.FloatTensor"``, ``"ember.cuda.LongTensor"``),
    or None."""
    parts = text.split(".")
    if len(parts) not in (2, 3) or parts[0] not in ("torch", "ember"):
        return None
    return legacy_type(parts[1] if len(parts) == 3 else "cpu", parts[-1])


def resolve(value):
    """A legacy type, given as itself or by name; None for anything else."""
    if isinstance(value, LegacyType):
        return value
    return from_name(value) if isinstance(value, str) else None


def set_default_tensor_type(t, /) -> None:
    """Deprecated in torch 2.1: the default dtype (a floating type) and, for a device's type,
    the default device."""
    warnings.warn(
        "torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
        "torch.set_default_dtype() and torch.set_default_device() as alternatives.",
        UserWarning,
        stacklevel=2,
    )
    found = resolve(t)
    if found is None:
        raise TypeError(f"invalid type: '{t}'")
    if not found.dtype.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    ember = _ember()
    ember.set_default_dtype(found.dtype)
    ember.set_default_device(None if found.device_type == "cpu" else found.device_type)


FUNCTIONS = {"set_default_tensor_type": set_default_tensor_type}
FUNCTIONS.update({f"{kind}Tensor": legacy_type("cpu", f"{kind}Tensor") for kind in KINDS})
