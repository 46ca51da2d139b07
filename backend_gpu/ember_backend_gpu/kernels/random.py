"""Glue for the Philox fills (uniform_, normal_, random_); the contract is docs/random.md.

Kernel convention: ``kernel(out, seed, offset, a, b)``. Element ``i`` of ``out``'s row-major order
gets the ``i``-th number of the stream wherever it lives, so strided outputs need no buffer.
"""

from __future__ import annotations

import numpy as np

from ..codegen import random as gen
from ._args import DTYPE_NAMES, TOKENS, operand, run_strided

U64 = 1 << 64
FLOAT64 = 9
NUMPY = {"f16": np.float16, "f32": np.float32, "f64": np.float64}
LARGEST = {
    "f16": 65504.0,
    "bf16": 3.3895313892515355e38,
    "f32": 3.4028234663852886e38,
    "f64": 1.7976931348623157e308,
}
BF16_ULP = 1 << 16  # one bfloat16 step, in float32 bits


def _bf16(bits: int) -> float:
    return float(np.uint32(bits & 0xFFFFFFFF).view(np.float32))


def below(high: float, token: str) -> float:
    """The largest value of a float dtype strictly below ``high`` (docs/random.md's H): the
    value nearest to ``high``, or the one under it when that is not below ``high``."""
    if high > LARGEST[token]:
        return LARGEST[token]
    if token == "bf16":
        bits = int(np.float32(high).view(np.uint32))
        bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
        if _bf16(bits) < high:
            return _bf16(bits)
        if _bf16(bits) == 0:
            return _bf16(0x80000000 | BF16_ULP)
        return _bf16(bits - BF16_ULP if _bf16(bits) > 0 else bits + BF16_ULP)
    near = NUMPY[token](high)
    if float(near) < high:
        return float(near)
    return float(np.nextafter(near, NUMPY[token](-np.inf)))


def _make(rt, kind: str):
    def kernel(out, seed, offset, a, b):
        code = out._dtype.code
        token = TOKENS[code]
        if kind == "random":
            a, b = int(a), (int(b) - int(a)) % U64
            per = 2 if code == FLOAT64 or b == 0 or b > (1 << 32) else 4
            tail = (a, b)
        else:
            per = 2 if code == FLOAT64 else 4
            tail = (float(a), float(b))
            if kind == "uniform":
                tail += (below(float(b), token) if a < b else float("inf"),)
        shape = out._shape or (1,)
        dev = out._storage.device.index or 0
        name = gen.fill_name(kind, per, token)
        run_strided(
            rt,
            dev,
            name,
            shape,
            [operand(out, code, shape)],
            tail=(seed % U64, offset % U64, *tail),
        )

    kernel.__qualname__ = f"cuda.{kind}_"
    return kernel


def build(rt) -> dict:
    floats = DTYPE_NAMES[6:]
    return {
        "uniform_": dict.fromkeys(floats, _make(rt, "uniform")),
        "normal_": dict.fromkeys(floats, _make(rt, "normal")),
        "random_": dict.fromkeys(DTYPE_NAMES, _make(rt, "random")),
    }
