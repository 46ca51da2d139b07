"""PyTorch's memory format constants (``torch.contiguous_format``, ``torch.preserve_format``,
``torch.channels_last``...) as ember objects, so programs can pass them where PyTorch takes
``memory_format=``. Ember tensors are strided and made contiguous by every copy, so the
contiguous and preserving formats give the same values. The channels-last formats give
PyTorch's strides where a program asks for them explicitly (``to()``, ``contiguous()``,
``clone()`` and casts with ``memory_format=``; ``is_contiguous(memory_format=...)`` tests them
with PyTorch's rule); an op's output is row-major whatever its inputs' layout (PyTorch's keep
channels-last: same values, other strides), and factories refuse them."""

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

# format -> (rank, the order of the dims from the outermost stride to the innermost)
CHANNELS_LAST = {channels_last: (4, (0, 2, 3, 1)), channels_last_3d: (5, (0, 2, 3, 4, 1))}


def is_contiguous_as(shape, strides, value) -> bool:
    """PyTorch's ``is_contiguous(memory_format=...)`` for the channels-last formats: the
    strides of ``order`` from the innermost out, size-1 dims skipped (any stride fits them);
    False for another rank."""
    rank, order = CHANNELS_LAST[value]
    if len(shape) != rank:
        return False
    expected = 1
    for d in reversed(order):
        if shape[d] != 1:
            if strides[d] != expected:
                return False
            expected *= shape[d]
    return True


def _strides_like(shape, strides, value) -> bool:
    """PyTorch's ``is_channels_last_strides_2d``/``_3d``: whether the strides order the dims as
    ``value`` does (what ``suggest_memory_format`` reads); an ambiguous layout (C's stride equal
    to N's) counts as row-major."""
    rank, order = CHANNELS_LAST[value]
    if len(shape) != rank or strides[1] == 0:
        return False
    least = 0
    for d in reversed(order):
        if shape[d] == 0 or strides[d] < least:
            return False
        if d == 0 and least == strides[1]:
            return False
        least = strides[d] * (shape[d] if shape[d] > 1 else 1)
    return True


def suggested(tensor):
    """PyTorch's ``suggest_memory_format``: the channels-last format the strides follow, else
    ``contiguous_format``."""
    for value in CHANNELS_LAST:
        if _strides_like(tensor.shape, tensor.stride(), value):
            return value
    return contiguous_format


def contiguous_in(tensor, value):
    """``contiguous(memory_format=value)`` for a channels-last ``value``: itself when
    contiguous in that format, else a copy in it."""
    order, inverse = orders(value, tensor.ndim)
    if is_contiguous_as(tensor.shape, tensor.stride(), value):
        return tensor
    return _laid_out(tensor, order, inverse)


def to_format(tensor, value):
    """``to(memory_format=value)`` and casts: itself when its strides already follow the format
    (PyTorch's ``suggest_memory_format``), else a copy in it with PyTorch's strides (for a
    channels-last format, those of the dims in memory order, even where a size-1 dim would let
    the old strides pass ``is_contiguous``)."""
    if value in (None, preserve_format) or suggested(tensor) is value:
        return tensor
    if value is contiguous_format:  # a copy with row-major strides, size-1 dims' included
        return tensor.clone()
    order, inverse = orders(value, tensor.ndim)
    return _laid_out(tensor, order, inverse)


def _laid_out(tensor, order, inverse):
    """A copy of ``tensor`` whose memory holds the dims in ``order`` with row-major strides
    there (a clone, not ``contiguous()``: that keeps a size-1 dim's odd stride), seen in the
    original dim order."""
    return tensor.permute(order).clone().permute(inverse)


def orders(value, ndim: int) -> tuple:
    """(memory order, its inverse) of a channels-last format for a tensor of ``ndim`` dims;
    PyTorch's error for another rank."""
    rank, order = CHANNELS_LAST[value]
    if ndim != rank:
        raise RuntimeError(f"required rank {rank} tensor to use {value.name} format")
    return order, tuple(sorted(range(rank), key=order.__getitem__))


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
