"""Glue for the elementwise kernels: one closure per (op, dtype), built from codegen's table.

Kernel convention (the op rows' ``kernel_args``): ``kernel(out, *operands, *params)``; operands
are tensors of the compute dtype broadcast to ``out``'s shape, or Python scalars (passed to the
kernel as their storage bits). Integer division by zero and negative integer powers are reported
through the status word, read after the launch for the loops marked ``checked``.
"""

from __future__ import annotations

import math

from ..codegen import elementwise as ew
from ..codegen.dtypes import BY_TOKEN
from ..launch import nd_args
from ._args import SCALARS, addr, operand, raise_status, run_strided

# Largest finite values (nan_to_num's defaults for infinities).
FLOAT_MAX = {
    "f16": 65504.0,
    "bf16": 3.3895313892515355e38,
    "f32": 3.4028234663852886e38,
    "f64": 1.7976931348623157e308,
}


def _nan_to_num(token, nan=0.0, posinf=None, neginf=None):
    high = FLOAT_MAX.get(token, 0.0)
    return (
        0.0 if nan is None else float(nan),
        high if posinf is None else float(posinf),
        -high if neginf is None else float(neginf),
    )


# Ops whose extra arguments become the kernel's (p0, p1, p2): f(dtype token, *args).
PARAMS = {
    "gelu": lambda t, approximate="none": (0.0 if approximate == "none" else 1.0, 0.0, 0.0),
    "nan_to_num": _nan_to_num,
    "elu": lambda t, alpha=1.0: (float(alpha), 0.0, 0.0),
    "celu": lambda t, alpha=1.0: (float(alpha), 0.0, 0.0),
    "leaky_relu": lambda t, negative_slope=0.01: (float(negative_slope), 0.0, 0.0),
    "softplus": lambda t, beta=1.0, threshold=20.0: (float(beta), float(threshold), 0.0),
    "hardtanh": lambda t, min_val=-1.0, max_val=1.0: (float(min_val), float(max_val), 0.0),
}
NO_PARAMS = (0.0, 0.0, 0.0)
# Binary ops with a parameter: f(dtype token, *args) -> the kernel's p0.
BINARY_PARAMS = {
    "gelu_backward": lambda t, approximate="none": 0.0 if approximate == "none" else 1.0,
    "threshold_backward": lambda t, threshold: float(threshold),
}
# Ops that take a Python scalar second operand unrounded in float16/bfloat16 (as PyTorch's opmath
# kernels do): the same set as the CPU backend's kernels/elementwise.py OPMATH_SCALAR.
OPMATH_SCALAR = frozenset({"mul", "div", "div_trunc", "floor_divide"})


def make(rt, op: ew.Ew, token: str, loop: ew.Loop):
    name = ew.kernel_name(op.name, token)
    code = BY_TOKEN[token].code
    params = (BINARY_PARAMS if op.arity == 2 else PARAMS).get(op.name)
    where = op.name == "where"
    codes = (code, 0, code, code) if where else (code,) * 4  # where's condition is bool
    arity = op.arity
    opmath = op.name in OPMATH_SCALAR  # the binary loops read their second operand with em_load_c

    def kernel(out, *args):
        values, rest = args[:arity], args[arity:]
        dev = out._storage.device.index or 0
        unrounded = opmath if arity == 2 else None  # the second operand's, when a scalar
        if arity == 1:
            tail = params(token, *rest) if params is not None else NO_PARAMS
        elif arity == 2:
            tail = (params(token, *rest) if params is not None else 0.0,)
        elif not where:
            tail = (float(rest[0]) if rest else 0.0,)
        else:
            tail = ()
        if where or not _launch_flat(rt, dev, name, out, values, codes, unrounded, tail):
            shape = out._shape or (1,)
            operands = [operand(out, code, shape)]
            operands += [
                operand(v, codes[k + 1], shape, unrounded if k == 1 else None)
                for k, v in enumerate(values)
            ]
            status = () if where else (rt.status_word(dev),)
            run_strided(rt, dev, name, shape, operands, status, tail)
        if loop.checked:
            found = rt.read_status(dev)
            if found:
                raise_status(found, op.name, BY_TOKEN[token].name)

    kernel.__qualname__ = f"cuda.{op.name}"
    if arity in (1, 2) and not loop.checked:
        default = NO_PARAMS if arity == 1 else (0.0,)
        try:
            tail = default if params is None else params(token)
        except TypeError:  # a parameter without default: the entry would never be asked
            return kernel
        if arity == 2 and params is not None:
            tail = (tail,)
        size = BY_TOKEN[token].itemsize
        strides = ((1 if loop.output == "BOOL" else size,), *((size,),) * arity)
        kernel.contiguous = _contiguous(rt, name, strides, tail)
    return kernel


def _launch_flat(rt, dev: int, name: str, out, values, codes, unrounded, tail) -> bool:
    """Launch the one-dim loop when ``out`` is contiguous and each operand is a Python scalar or
    a contiguous tensor of its shape (in-place and scalar calls: ``p.mul_(0.9)``, ``x * 2.5``),
    without the glue's coalescing and launch levels; False when the call is not that (nothing
    launched). ``unrounded``: the second operand's, as ``operand`` takes it."""
    if not out._contig:
        return False
    shape = out._shape
    pointers, strides, bits = [addr(out)], [(out._dtype.itemsize,)], [0]
    for k, value in enumerate(values):
        if value.__class__ in SCALARS:
            pointers.append(0)
            strides.append((0,))
            bits.append(operand(value, codes[k + 1], (1,), unrounded if k == 1 else None)[2])
        elif value._contig and value._shape == shape:
            pointers.append(addr(value))
            strides.append((value._dtype.itemsize,))
            bits.append(0)
        else:
            return False
    n = math.prod(shape)
    if n:
        rt.launch_flat(dev, name, n, tuple(pointers), nd_args((n,), strides, bits), tail)
    return True


def _contiguous(rt, name: str, strides: tuple, tail: tuple):
    """The kernel's contiguous entry (docs/plugins.md): ``call(key, out, *operands, n)`` for
    operands contiguous with the output, which launches the one-dim loop straight from the
    addresses, without the glue's operand tuples, coalescing and launch levels (half of the
    host work of a 16-element add under the emulated driver: benchmarks/cuda_call_steps.py).
    Offered on a single device only: the call gets addresses, not the device they are on.
    ``strides``: each operand's one byte stride (the output's is a bool's for comparisons)."""
    zeros = (0,) * len(strides)

    def call1(key, out, x, n):
        if n:
            rt.launch_flat(0, name, n, (out, x), nd_args((n,), strides, zeros), tail)
        return 0

    def call2(key, out, a, b, n):
        if n:
            rt.launch_flat(0, name, n, (out, a, b), nd_args((n,), strides, zeros), tail)
        return 0

    call = call1 if len(strides) == 2 else call2

    def contiguous(dtype):
        return (call, None) if rt.device_count() == 1 else None

    return contiguous


def build(rt) -> dict:
    table = {}
    for op in ew.OPS.values():
        table[op.name] = {
            BY_TOKEN[token].name: make(rt, op, token, loop) for token, loop in op.dtypes().items()
        }
    return table
