"""Glue for the Philox random fills (clc/random.cl); the contract is docs/random.md.

Kernel convention: ``kernel(out, seed, offset, a, b)``. ``out`` may have any strides: element ``i``
is the ``i``-th in row-major logical order, wherever it lives. The transform's constants are
converted on the host exactly as the CPU plugin converts them (float32 arithmetic for the float
path), so uniform and integer streams match the CPU's bit for bit.
"""

from __future__ import annotations

import math

import numpy as np

from ..programs import source
from . import _shared
from ._launch import DTYPE_NAMES, TOKENS, device_of, merge_dims, offset, pack

FLOAT64 = 9
_U64 = 1 << 64


def _uniform_args(code: int, low, high) -> tuple:
    bound = _shared.below(high, code) if low < high else math.inf
    if code == FLOAT64:
        return float(low), float(high) - float(low), float(bound)
    a = np.float32(low)
    return float(a), float(np.float32(high) - a), float(np.float32(bound))


def _normal_args(code: int, mean, std) -> tuple:
    if code == FLOAT64:
        return float(mean), float(std), 0.0
    return float(np.float32(mean)), float(np.float32(std)), 0.0


def _random_args(code: int, low, high) -> tuple:
    return int(low), (int(high) - int(low)) % _U64


def _per_block(fill: str, code: int, args: tuple) -> int:
    if code == FLOAT64:
        return 2
    if fill == "RANDOM":
        span = args[1]
        return 2 if span == 0 or span > (1 << 32) else 4
    return 4


def _make(runtime, name: str, fill: str, convert):
    def kernel(out, seed, offset_blocks, a, b):
        dev = device_of(runtime, out)
        code = out._dtype.code
        args = convert(code, a, b)
        per = _per_block(fill, code, args)
        token = TOKENS[code]
        fn = dev.programs.get(
            ("random", fill, token, per),
            lambda: (
                f"#define T {token}\n#define FILL {fill}\n#define PER {per}\n" + source("random.cl")
            ),
        )["fill"]
        if out._contig:
            shape, strides = (), ()
        else:
            shape, (strides,) = merge_dims(out._shape, [out._stride])
        n = math.prod(out._shape)
        seed = int(seed) % _U64
        dev.launch(
            fn, -(-n // per), out._storage.handle, offset(out), pack(strides), pack(shape),
            len(shape), n, seed & 0xFFFFFFFF, seed >> 32, int(offset_blocks) % _U64, *args,
        )  # fmt: skip

    kernel.__qualname__ = f"xpu.{name}"
    return kernel


def build(runtime) -> dict:
    floats = DTYPE_NAMES[6:]
    return {
        "uniform_": dict.fromkeys(floats, _make(runtime, "uniform_", "UNIFORM", _uniform_args)),
        "normal_": dict.fromkeys(floats, _make(runtime, "normal_", "NORMAL", _normal_args)),
        "random_": dict.fromkeys(DTYPE_NAMES, _make(runtime, "random_", "RANDOM", _random_args)),
    }
