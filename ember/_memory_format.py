"""PyTorch's memory format constants (``torch.contiguous_format``, ``torch.preserve_format``,
``torch.channels_last``...) as ember objects, so programs can pass them where PyTorch takes
``memory_format=``. Ember tensors are strided and made contiguous by every copy, so the
contiguous and preserving formats give the same values; the channels-last formats are named
for programs that test for them, taken as a layout hint by casts, ``to()``, ``contiguous()``
and ``clone()`` (same values, row-major strides), and refused by factories."""

from __future__ import annotations


class memory_format:  # noqa: N801 - PyTorch's name for the type
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"ember.{self.name}"

    def __reduce__(self):  # pickles as the module constant, so identity survives
        return self.name


contiguous_format = memory_format("contiguous_format")
preserve_format = memory_format("preserve_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")

# What a copy of an ember tensor can honour: its values in contiguous strides.
KEPT = (None, contiguous_format, preserve_format)


def check_hint(op: str, value) -> None:
    """Casts and ``to()``: any memory format is a layout hint for the copy, whose values are
    the same in every layout; ember's copies are contiguous. Only a non-format is refused."""
    if value is not None and not isinstance(value, memory_format):
        _refuse_type(op, value)


def check(op: str, value) -> None:
    """Refuse what ember cannot give (channels-last strides) or what is no memory format."""
    if value in KEPT:
        return
    if isinstance(value, memory_format):
        raise TypeError(
            f"{op}(): ember tensors are strided and contiguous; memory_format={value!r} is not "
            "supported (leave it out)"
        )
    _refuse_type(op, value)


def _refuse_type(op: str, value) -> None:
    raise TypeError(
        f"{op}(): argument 'memory_format' must be torch.memory_format, not {type(value).__name__}"
    )
