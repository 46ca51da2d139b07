"""``ember.types``: the annotation aliases programs import from ``torch.types`` (``Number``,
``Device``, ``_size``...). ember has no symbolic ints, so the Sym types are the plain ones."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import IO

from ember import Size, Tensor
from ember._device import device as _device

_bool = bool
_int = int
_float = float
_complex = complex
_str = str
_bytes = bytes
_size = Size | list[int] | tuple[int, ...]
_symsize = _size
_TensorOrTensors = Tensor | Sequence[Tensor]
_TensorOrOptionalTensors = Tensor | None | Sequence[Tensor | None]
_Number = (bool, int, float)
Number = int | float | bool
IntLikeType = int
FloatLikeType = float
BoolLikeType = bool
Device = _device | str | int | None
FileLike = str | os.PathLike | IO[bytes]

__all__ = ["Number", "Device", "FileLike"]
