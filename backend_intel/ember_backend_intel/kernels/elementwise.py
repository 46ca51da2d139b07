"""Elementwise kernels, generated from one description per op (see _shared.py) into
clc/elementwise.cl: one program per (op, dtype), compiled on first use.

Kernel convention (ember's op table): ``kernel(out, x, *params)`` (unary), ``kernel(out, a, b)``
(binary), ``kernel(out, a, b, c, *params)`` (ternary); operands are tensors of the compute dtype
broadcast to ``out``'s shape, or Python scalars.
"""

from __future__ import annotations

import math
import re

from ..programs import source
from . import _shared
from ._launch import (
    DTYPE_NAMES,
    NO_DIMS,
    SCALARS,
    TOKENS,
    check_status,
    compute_scalar,
    offset,
    run_strided,
)

# where(cond, a, b) is not in the CPU's .def files (its loop copies raw storage); its one line:
WHERE = ("where", "ALL", "SAME", "a ? b : c")
# An expression that passes `p` to a helper may report an error (integer division by zero...).
_REPORTS = re.compile(r"\bp\s*\)")
_NO_PARAMS = (0.0, 0.0, 0.0)


def _source(arity: int, token: str, out: str, expression: str) -> str:
    first = "b" if expression == WHERE[3] else token
    lines = [
        f"#define T {token}",
        f"#define A {first}",
        f"#define OUT {'b' if out == 'BOOL' else token}",
        f"#define ARITY {arity}",
        f"#define EXPR ({expression})",
    ]
    if _REPORTS.search(expression):
        lines.append("#define HAS_STATUS 1")
    return "\n".join(lines) + "\n" + source("elementwise.cl")


def _params(name: str, arity: int, operands, extra):
    if arity == 1:
        rule = _shared.UNARY_PARAMS.get(name)
        return rule(operands[0], *extra) if rule is not None else _NO_PARAMS
    return (float(extra[0]), 0.0, 0.0) if extra else _NO_PARAMS


def make_kernel(runtime, name: str, arity: int, lines: dict):
    """The glue of op ``name``; ``lines`` maps a dtype token to its (out kind, expression)."""
    devices = runtime.devices
    reports = {tok: bool(_REPORTS.search(expr)) for tok, (_out, expr) in lines.items()}

    def kernel(out, *args):
        operands, extra = args[:arity], args[arity:]
        if arity == 2:
            ref = operands[1] if operands[0].__class__ in SCALARS else operands[0]
            code = ref._dtype.code
        else:
            code = operands[0]._dtype.code if arity == 1 else out._dtype.code
        token = TOKENS[code]
        dev = devices[out._storage.device.index]
        fn = dev.programs.get(("ew", name, token), lambda: _source(arity, token, *lines[token]))[
            "ew"
        ]
        p0, p1, p2 = _params(name, arity, operands, extra)
        contig = out._contig
        slots, values, scalars = [], [], 0
        for k, t in enumerate(operands):
            if t.__class__ in SCALARS:
                first_bool = k == 0 and name == "where"
                slots.append((dev.dummy, 0))
                values.append(compute_scalar(0 if first_bool else code, t))
                scalars |= 1 << k
            else:
                slots.append((t._storage.handle, offset(t)))
                values.append(0)
                contig = contig and t._contig
        while len(slots) < 3:
            scalars |= 1 << len(slots)
            slots.append((dev.dummy, 0))
            values.append(0)
        tail = (*values, scalars, p0, p1, p2, dev.status)
        if contig:  # nd = 0: every operand contiguous, no index arithmetic
            n = math.prod(out._shape)
            dev.launch(
                fn, n, out._storage.handle, offset(out), NO_DIMS, *slots[0], NO_DIMS, *slots[1],
                NO_DIMS, *slots[2], NO_DIMS, NO_DIMS, 0, n, *tail,
            )  # fmt: skip
        else:
            zeros = (0,) * len(out._shape)
            layouts = [(out._storage.handle, offset(out), out._stride)]
            for k, (buffer, at) in enumerate(slots):
                strided = not scalars >> k & 1
                layouts.append((buffer, at, operands[k]._stride if strided else zeros))
            run_strided(dev, fn, out._shape, layouts, *tail)
        if reports[token]:
            check_status(dev, name, DTYPE_NAMES[code])

    kernel.__qualname__ = f"xpu.{name}"
    return kernel


def build(runtime) -> dict:
    table: dict = {}
    for arity in (1, 2, 3):
        descriptions = _shared.op_descriptions(arity) + ([WHERE] if arity == 3 else [])
        by_op: dict = {}
        for name, family, out, expression in descriptions:
            for token in _shared.FAMILIES[family]:
                by_op.setdefault(name, {})[token] = (out, expression)
        for name, lines in by_op.items():
            kernel = make_kernel(runtime, name, arity, lines)
            table[name] = {DTYPE_NAMES[TOKENS.index(tok)]: kernel for tok in lines}
    return table
