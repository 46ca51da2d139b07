"""Glue for the variable-draw samplers (_standard_gamma, poisson, binomial; codegen/samplers.py,
docs/random.md).

Kernel convention: ``kernel(out, seed, block, *params)``: the runner passes a contiguous ``out``
and contiguous parameters of ``out``'s shape and dtype, and one Philox block number it took from
the generator (as the CPU backend's samplers).
"""

from __future__ import annotations

import math

from ..codegen import samplers as gen
from ._args import DTYPE_NAMES, TOKENS, addr, device

U64 = 1 << 64


def _make(rt, op: str):
    def kernel(out, seed, block, *params):
        n = math.prod(out._shape)
        name = gen.kernel_name(op, TOKENS[out._dtype.code])
        ptrs = [addr(out), *(addr(p) for p in params)]
        rt.launch_1d(device(out), name, n, *ptrs, int(seed) % U64, int(block) % U64, n)

    kernel.__qualname__ = f"cuda.{op}"
    return kernel


def build(rt) -> dict:
    names = [name for name, token in zip(DTYPE_NAMES, TOKENS) if token in gen.FLOATS]
    return {op: dict.fromkeys(names, _make(rt, op)) for op, *_ in gen.SAMPLERS}
