"""The CPU kernel table: ``{op name: {dtype name: kernel}}``, merged from one module per family.

Each family module has ``build(ffi, lib) -> dict``; the list below is the whole registry.
"""

from __future__ import annotations

from . import (
    amp,
    copy,
    elementwise,
    fft,
    foreach,
    grid,
    index,
    lapack,
    linalg,
    loss,
    nn,
    optim,
    random,
    reduce,
    samplers,
    sort,
)

FAMILIES = (
    elementwise, copy, reduce, linalg, lapack, index, sort, random, samplers, nn, loss, grid, amp,
    fft, optim, foreach,
)  # fmt: skip


def build_table(ffi, lib) -> dict:
    table: dict = {}
    for family in FAMILIES:
        for name, kernels in family.build(ffi, lib).items():
            if name in table:
                raise RuntimeError(f"CPU kernel table: '{name}' defined by two families")
            table[name] = kernels
    return table
