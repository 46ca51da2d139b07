"""Glue for the variable-draw samplers (_standard_gamma, poisson, binomial); the contract is
docs/random.md, "Samplers with a variable number of draws".

Kernel convention: ``kernel(out, seed, block, *params)``: the runner passes a contiguous ``out``
and contiguous parameters of ``out``'s shape and dtype, and one Philox block number it took from
the generator.
"""

from __future__ import annotations

import math

from ._args import DTYPE_NAMES, addr, raise_status

FLOAT16 = 6


def _make(name: str, sample):
    def kernel(out, seed, block, *params):
        code = out._dtype.code
        n = math.prod(out._shape)
        status = sample(code, seed, block, n, addr(out), *(addr(p) for p in params))
        if status:
            raise_status(status, name, code)

    kernel.__qualname__ = f"cpu.{name}"
    return kernel


def build(ffi, lib) -> dict:
    floats = DTYPE_NAMES[FLOAT16:]
    table = {
        "_standard_gamma": lib.ember_standard_gamma,
        "poisson": lib.ember_poisson,
        "binomial": lib.ember_binomial,
    }
    return {name: dict.fromkeys(floats, _make(name, fn)) for name, fn in table.items()}
