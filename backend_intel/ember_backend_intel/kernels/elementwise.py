"""Elementwise kernels, generated from one description per op (see _shared.py) into
clc/elementwise.cl (the expressions' helpers in clc/ewmath.cl): one program per op with the
kernels of every dtype the device has, compiled on first use. PoCL's compiler costs about
0.4 s per program and a few hundredths per dtype in it, so an op used in several dtypes (the
test suite uses them all) builds once.

Kernel convention (ember's op table): ``kernel(out, x, *params)`` (unary), ``kernel(out, a, b)``
(binary), ``kernel(out, a, b, c, *params)`` (ternary); operands are tensors of the compute dtype
broadcast to ``out``'s shape, or Python scalars.
"""

from __future__ import annotations

import math
import re
import struct

import numpy as np

from ..programs import source
from . import _shared
from ._launch import (
    DTYPE_NAMES,
    SCALARS,
    TOKENS,
    blocks,
    check_status,
    compute_scalar,
    merge_dims,
    offset,
    pack,
)
from ._shared import HALF_CODES, OPMATH_SCALAR

# where(cond, a, b) is not in the CPU's .def files (its loop copies raw storage); its one line:
WHERE = ("where", "ALL", "SAME", "a ? b : c")
# An expression that passes `p` to a helper may report an error (integer division by zero...).
_REPORTS = re.compile(r"\bp\s*\)")
_NO_PARAMS = (0.0, 0.0, 0.0)


def _source(arity: int, lines: dict) -> str:
    """The program of one op: ``lines`` maps each dtype token to its (out kind, expression)."""
    parts = [f"#define ARITY {arity}\n", source("ewmath.cl")]
    for token, (out, expression) in lines.items():
        first = "b" if expression == WHERE[3] else token
        parts += [
            f"#define T {token}\n",
            f"#define A {first}\n",
            f"#define OUT {'b' if out == 'BOOL' else token}\n",
            f"#define EXPR ({expression})\n",
            "#define HAS_STATUS 1\n" if _REPORTS.search(expression) else "",
            source("elementwise.cl"),
        ]
    return "".join(parts)


def _params(name: str, arity: int, operands, extra):
    if arity == 1:
        rule = _shared.UNARY_PARAMS.get(name)
        return rule(operands[0], *extra) if rule is not None else _NO_PARAMS
    if arity == 2:
        rule = _shared.BINARY_PARAMS.get(name)
        return (rule(*extra), 0.0, 0.0) if rule is not None and extra else _NO_PARAMS
    return (float(extra[0]), 0.0, 0.0) if extra else _NO_PARAMS


def _slot(token: str) -> str:
    """struct format of a scalar in an 8-byte slot of the kernel's ``meta`` (clc's em_slot)."""
    if token == "f64":
        return "d"
    return "f4x" if token in _shared.FAMILIES["FLOAT"] else "q"


class _Program:
    """One (device, op, dtype): its two kernels (contiguous operands, any strides), the packer of
    their ``meta`` argument, whether every argument of the contiguous kernel has been set once
    (then a call sets only the five that change), whether the op can report an error."""

    __slots__ = ("flat", "meta", "ready", "reports", "strided")

    def __init__(self, kernels: dict, token: str, meta, reports: bool):
        self.flat = kernels[f"ew_{token}"]
        self.strided = kernels[f"ew_strided_{token}"]
        self.meta = meta
        self.ready = False
        self.reports = reports


def make_kernel(runtime, name: str, arity: int, lines: dict):
    """The glue of op ``name``; ``lines`` maps a dtype token to its (out kind, expression)."""
    devices = runtime.devices
    programs: dict = {}  # (device index, dtype code) -> _Program
    missing = 7 & ~((1 << arity) - 1)  # operands the op does not have read as scalars
    where = name == "where"
    opmath = arity == 2 and name in OPMATH_SCALAR

    def program(dev, code: int) -> _Program:
        token = TOKENS[code]
        dev.programs.check_dtypes((token,), name)
        expression = lines[token][1]
        usable = {t: lines[t] for t in dev.programs.usable(lines)}
        kernels = dev.programs.get(("ew", name), lambda: _source(arity, usable))
        first = "b" if expression == WHERE[3] else token
        real = "d" if dev.fp64 else "f4x"
        meta = struct.Struct(f"<7q{_slot(first)}{_slot(token) * 2}{real * 3}24x").pack
        found = _Program(kernels, token, meta, bool(_REPORTS.search(expression)))
        programs[dev.index, code] = found
        return found

    def kernel(out, *args):
        if arity == 2 and len(args) == 2 and out._contig:
            a, b = args
            tensors = a.__class__ not in SCALARS and b.__class__ not in SCALARS
            if tensors and a._contig and b._contig:
                return tensors_contiguous(out, a, b)
        return general(out, args)

    def launch_flat(dev, prog: _Program, n: int, o, a, b, c, meta: bytes) -> None:
        """The contiguous kernel over ``n`` elements of buffers ``o a b c``."""
        if prog.ready:
            dev.relaunch(prog.flat, n, o, a, b, c, meta)
        else:
            dev.launch(prog.flat, n, o, a, b, c, meta, dev.status)
            prog.ready = True  # every argument has a value now

    def tensors_contiguous(out, a, b):
        """The hot case of a binary op: two contiguous tensors, no scalars, no parameters."""
        so, sa, sb = out._storage, a._storage, b._storage
        code = a._dtype.code
        dev = devices[so.device.index]
        prog = programs.get((dev.index, code)) or program(dev, code)
        n = math.prod(out._shape)
        if not n:
            return
        meta = prog.meta(
            so.byte_offset // out._dtype.itemsize + out._offset,
            sa.byte_offset // a._dtype.itemsize + a._offset,
            sb.byte_offset // b._dtype.itemsize + b._offset,
            0, n, 0, 4, 0, 0, 0, 0.0, 0.0, 0.0,
        )  # fmt: skip
        launch_flat(dev, prog, n, so.handle, sa.handle, sb.handle, dev.dummy, meta)
        if prog.reports:
            check_status(dev, name, DTYPE_NAMES[code])

    def general(out, args):
        operands = args[:arity]
        if arity == 2:
            ref = operands[1] if operands[0].__class__ in SCALARS else operands[0]
            code = ref._dtype.code
        else:
            code = operands[0]._dtype.code if arity == 1 else out._dtype.code
        dev = devices[out._storage.device.index]
        prog = programs.get((dev.index, code)) or program(dev, code)
        extra = args[arity:]
        params = _params(name, arity, operands, extra) if extra or arity == 1 else _NO_PARAMS
        contig = out._contig
        dummy = dev.dummy
        buffers, offsets, values = [dummy, dummy, dummy], [0, 0, 0], [0, 0, 0]
        scalars = missing
        for k, t in enumerate(operands):
            if t.__class__ in SCALARS:
                if opmath and k == 1 and code in HALF_CODES:  # float32, unrounded
                    values[k] = float(np.float32(t))
                else:
                    values[k] = compute_scalar(0 if k == 0 and where else code, t)
                scalars |= 1 << k
            else:
                buffers[k] = t._storage.handle
                offsets[k] = offset(t)
                contig = contig and t._contig
        target = out._storage.handle
        if contig:
            n = math.prod(out._shape)
            if not n:
                return
            meta = prog.meta(offset(out), *offsets, n, 0, scalars, *values, *params)
            launch_flat(dev, prog, n, target, *buffers, meta)
        else:
            zeros = (0,) * len(out._shape)
            layouts = [out._stride] + [
                zeros if scalars >> k & 1 else operands[k]._stride for k in range(3)
            ]
            shape, layouts = merge_dims(out._shape, layouts)
            starts = [offset(out), *offsets]
            for deltas, sub_shape, sub in blocks(shape, layouts):
                n = math.prod(sub_shape)
                at = [start + delta for start, delta in zip(starts, deltas)]
                meta = prog.meta(*at, n, len(sub_shape), scalars, *values, *params)
                if n:
                    dev.launch(
                        prog.strided, n, target, *buffers, meta, pack(sub_shape),
                        *map(pack, sub), dev.status,
                    )  # fmt: skip
        if prog.reports:
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
