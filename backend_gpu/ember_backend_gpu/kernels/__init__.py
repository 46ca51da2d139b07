"""The CUDA kernel table: ``{op name: {dtype name: kernel}}``, merged from one module per family.

Each family module has ``build(runtime) -> dict``; the list below is the whole registry.
"""

from __future__ import annotations

from . import amp, copy, elementwise, fft, index, lapack, linalg, nn, random, reduce, samplers, sort

FAMILIES = (elementwise, copy, reduce, linalg, lapack, fft, index, sort, random, samplers, nn, amp)


def build_table(runtime) -> dict:
    table: dict = {}
    for family in FAMILIES:
        for name, kernels in family.build(runtime).items():
            if name in table:
                raise RuntimeError(f"CUDA kernel table: '{name}' defined by two families")
            table[name] = kernels
    return table
