"""The xpu kernel table: ``{op name: {dtype name: kernel}}``, merged from one module per family.

Each family module has ``build(runtime) -> dict``; the list below is the whole registry. Building
the table compiles nothing: programs are compiled per device on a kernel's first call.
"""

from __future__ import annotations

from . import amp, copy, elementwise, index, linalg, nn, random, reduce, samplers, sort

FAMILIES = (elementwise, copy, reduce, linalg, index, sort, random, samplers, nn, amp)


def build_table(runtime) -> dict:
    table: dict = {}
    for family in FAMILIES:
        for name, kernels in family.build(runtime).items():
            if name in table:
                raise RuntimeError(f"xpu kernel table: '{name}' defined by two families")
            table[name] = kernels
    return table
