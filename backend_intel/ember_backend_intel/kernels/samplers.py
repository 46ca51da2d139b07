"""Glue for the variable-draw samplers (_standard_gamma, poisson, binomial; docs/random.md). The
OpenCL text comes from the one description in ember_backend_gpu (codegen/samplers.py), which the
CUDA and ROCm kernels are generated from too.

Kernel convention: ``kernel(out, seed, block, *params)``: the runner passes a contiguous ``out``
and contiguous parameters of ``out``'s shape and dtype, and one Philox block number.
"""

from __future__ import annotations

import math

from ember_backend_gpu.codegen import samplers as gen

from ._launch import DTYPE_NAMES, TOKENS, device_of, offset

_U64 = 1 << 64


def _make(runtime, op: str):
    def kernel(out, seed, block, *params):
        dev = device_of(runtime, out)
        token = TOKENS[out._dtype.code]
        # Poisson and binomial compute in double whatever the dtype, so their key names f64: a
        # device without cl_khr_fp64 refuses them with the programs' message.
        key = ("samplers", op, token) + (() if op == "_standard_gamma" else ("f64",))
        fn = dev.programs.get(key, lambda: gen.opencl_source(op, token))
        operands = [out._storage.handle, offset(out)]
        for p in params:
            operands += [p._storage.handle, offset(p)]
        n = math.prod(out._shape)
        dev.launch(fn["sample"], n, *operands, n, int(seed) % _U64, int(block) % _U64)

    kernel.__qualname__ = f"xpu.{op}"
    return kernel


def build(runtime) -> dict:
    names = [name for name, token in zip(DTYPE_NAMES, TOKENS) if token in gen.FLOATS]
    return {op: dict.fromkeys(names, _make(runtime, op)) for op, *_ in gen.SAMPLERS}
