"""The GIL-keeping entries of ``_gil_held`` (csrc/gil_held/gil_held.c), bound to the loops of
``_kernels`` when first imported: the elementwise glue's contiguous calls and the runtime's
address of a small buffer go through them."""

from __future__ import annotations

from . import _gil_held, _kernels


def _address(name: str) -> int:
    ffi = _kernels.ffi
    return int(ffi.cast("intptr_t", ffi.addressof(_kernels.lib, name)))


lib = _gil_held.lib
lib.ember_held_bind(_address("ember_binary_contig"), _address("ember_unary_contig"))
