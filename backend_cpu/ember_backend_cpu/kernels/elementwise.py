"""Glue for the elementwise C kernels: one Python closure per op, for every dtype C has a loop.

Kernel convention (ember docs/plugins.md): ``kernel(out, *operands, *params)``. Operands are
tensors of the compute dtype already broadcast to ``out``'s shape, or Python scalars.
"""

from __future__ import annotations

import math

import numpy as np

from .. import held
from ._args import DTYPE_NAMES, SCALARS, raise_status, scalar_parts


def _names(ffi, fn) -> list[str]:
    return [name for name in ffi.string(fn()).decode().split(",") if name]


# Largest finite value by dtype code (float16, bfloat16, float32, float64).
FLOAT_MAX = {
    6: 65504.0,
    7: 3.3895313892515355e38,
    8: 3.4028234663852886e38,
    9: np.finfo(np.float64).max,
}


def _nan_to_num(x, nan=0.0, posinf=None, neginf=None):
    high = float(FLOAT_MAX.get(x._dtype.code, 0.0))
    low = -high
    return (
        0.0 if nan is None else float(nan),
        high if posinf is None else float(posinf),
        low if neginf is None else float(neginf),
    )


# Unary ops with parameters: params(x, *op args) -> (p0, p1, p2) for the C loop.
UNARY_PARAMS = {
    "nan_to_num": _nan_to_num,
    "elu": lambda x, alpha=1.0: (float(alpha), 0.0, 0.0),
    "celu": lambda x, alpha=1.0: (float(alpha), 0.0, 0.0),
    "leaky_relu": lambda x, negative_slope=0.01: (float(negative_slope), 0.0, 0.0),
    "softplus": lambda x, beta=1.0, threshold=20.0: (float(beta), float(threshold), 0.0),
    "hardtanh": lambda x, min_val=-1.0, max_val=1.0: (float(min_val), float(max_val), 0.0),
    "polygamma": lambda x, n: (float(n), 0.0, 0.0),
}


# Binary ops with a parameter: param(*op args) -> the C loop's p->f[0].
BINARY_PARAMS = {
    "threshold_backward": float,
}
# Variant loops: C names the tanh form of gelu and gelu_backward ``<op>__tanh`` (unary.def), so
# that each loop carries one form; the op's ``approximate`` picks the loop here.
FORM = "__"


def _form(codes: dict, name: str, code: int):
    """approximate -> the C op code, for an op with a tanh-form loop; None for the others."""
    tanh = codes.get(f"{name}{FORM}tanh")
    if tanh is None:
        return None
    return lambda approximate="none": tanh if approximate == "tanh" else code


def _contiguous(lib, call, arity: int, code: int):
    """The kernel's ``contiguous(dtype) -> (call, key) | None`` (ember's docs/plugins.md): the
    five-argument C entry ``call(key, out, *operands, n)`` for operands contiguous with the
    output's shape, in ``dtype``, with integer addresses; ``key`` names the (op, dtype) loop,
    resolved here once (the dispatcher keeps it with the op's fast-path entry). ``call`` is
    held.py's: a small loop runs without releasing the GIL."""

    def contiguous(dtype):
        key = lib.ember_contig_key(arity, code, dtype.code)
        return None if key < 0 else (call, key)

    return contiguous


def make_unary(ffi, lib, code: int, name: str, codes: dict):
    call = lib.ember_unary
    null = ffi.NULL
    params = UNARY_PARAMS.get(name)
    form = _form(codes, name, code)
    base = code

    def kernel(out, x, *args):
        p0, p1, p2 = params(x, *args) if params is not None else (0.0, 0.0, 0.0)
        code = form(*args) if form is not None else base
        po = out._storage.ptr + out._offset * out._dtype.itemsize
        px = x._storage.ptr + x._offset * x._dtype.itemsize
        if out._contig and x._contig:
            n = math.prod(out._shape)
            status = call(code, x._dtype.code, n, 0, null, po, null, px, null, p0, p1, p2)
        else:
            shape = out._shape
            status = call(
                code,
                x._dtype.code,
                0,
                len(shape),
                shape,
                po,
                out._stride,
                px,
                x._stride,
                p0,
                p1,
                p2,
            )
        if status:
            raise_status(status, name, x._dtype.code)

    kernel.__qualname__ = f"cpu.{name}"
    if params is None and form is None:  # a parameter goes through ember_unary's p0..p2
        kernel.contiguous = _contiguous(lib, held.lib.ember_held_unary_contig, 1, code)
    return kernel


# Ops that take a Python scalar second operand unrounded in float16/bfloat16, in float32, as
# PyTorch's opmath kernels do; add, sub, remainder and the rest round it to the dtype first, as
# PyTorch does. The xpu and GPU backends read this set too.
OPMATH_SCALAR = frozenset({"mul", "div", "div_trunc", "floor_divide"})
HALF_CODES = frozenset(code for code, n in enumerate(DTYPE_NAMES) if n in ("float16", "bfloat16"))


def make_binary(ffi, lib, code: int, name: str, codes: dict):
    call = lib.ember_binary
    null = ffi.NULL
    opmath = name in OPMATH_SCALAR
    param_of = BINARY_PARAMS.get(name)
    form = _form(codes, name, code)
    base = code

    def kernel(out, a, b, *args):
        param = param_of(*args) if param_of is not None else 0.0
        code = form(*args) if form is not None else base
        sf, si = 0.0, 0
        if a.__class__ in SCALARS:
            dcode = b._dtype.code
            sf, si = scalar_parts(dcode, a)
            pa, sa, ca = 0, null, True
        else:
            dcode = a._dtype.code
            pa, sa, ca = a._storage.ptr + a._offset * a._dtype.itemsize, a._stride, a._contig
        if b.__class__ in SCALARS:
            sf, si = scalar_parts(dcode, b)
            if opmath and dcode in HALF_CODES:
                si = 1  # read unrounded (ember_binary)
            pb, sb, cb = 0, null, True
        else:
            pb, sb, cb = b._storage.ptr + b._offset * b._dtype.itemsize, b._stride, b._contig
        po = out._storage.ptr + out._offset * out._dtype.itemsize
        if out._contig and ca and cb:
            n = math.prod(out._shape)
            status = call(code, dcode, n, 0, null, po, null, pa, null, pb, null, sf, si, param)
        else:
            shape = out._shape
            status = call(
                code, dcode, 0, len(shape), shape, po, out._stride, pa, sa, pb, sb, sf, si, param
            )
        if status:
            raise_status(status, name, dcode)

    kernel.__qualname__ = f"cpu.{name}"
    if param_of is None and form is None:  # threshold_backward's threshold, gelu's form
        kernel.contiguous = _contiguous(lib, held.lib.ember_held_binary_contig, 2, code)
    return kernel


def make_ternary(ffi, lib, code: int, name: str, codes: dict):
    call = lib.ember_ternary
    null = ffi.NULL

    def kernel(out, a, b, c, param=0.0):
        operands = (a, b, c)
        dcode = out._dtype.code
        fs, is_, ptrs, strides, contig = [0.0] * 3, [0] * 3, [0] * 3, [null] * 3, out._contig
        for k, t in enumerate(operands):
            if t.__class__ in SCALARS:
                fs[k], is_[k] = scalar_parts(0 if (k == 0 and name == "where") else dcode, t)
            else:
                ptrs[k] = t._storage.ptr + t._offset * t._dtype.itemsize
                strides[k] = t._stride
                contig = contig and t._contig
        po = out._storage.ptr + out._offset * out._dtype.itemsize
        if contig:
            n = math.prod(out._shape)
            status = call(
                code,
                dcode,
                n,
                0,
                null,
                po,
                null,
                ptrs[0],
                null,
                ptrs[1],
                null,
                ptrs[2],
                null,
                fs,
                is_,
                float(param),
            )
        else:
            shape = out._shape
            status = call(
                code,
                dcode,
                0,
                len(shape),
                shape,
                po,
                out._stride,
                ptrs[0],
                strides[0],
                ptrs[1],
                strides[1],
                ptrs[2],
                strides[2],
                fs,
                is_,
                float(param),
            )
        if status:
            raise_status(status, name, dcode)

    kernel.__qualname__ = f"cpu.{name}"
    return kernel


FAMILIES = (
    (1, "ember_unary_names", make_unary),
    (2, "ember_binary_names", make_binary),
    (3, "ember_ternary_names", make_ternary),
)


def build(ffi, lib) -> dict:
    table = {}
    for arity, names_fn, make in FAMILIES:
        codes = {name: code for code, name in enumerate(_names(ffi, getattr(lib, names_fn)))}
        for name, code in codes.items():
            if FORM in name:
                continue  # a variant loop, reached through its op's kernel
            kernel = make(ffi, lib, code, name, codes)
            dtypes = [
                dname
                for dcode, dname in enumerate(DTYPE_NAMES)
                if lib.ember_elementwise_supports(arity, code, dcode)
            ]
            table[name] = dict.fromkeys(dtypes, kernel)
    return table
