"""What differs between the CUDA C++ (CUDA, HIP) and OpenCL C text of a fused kernel.

A ``Dialect`` holds the words of one target (kernel and function qualifiers, address space, the
work-item indices, how a pointer argument travels) and its per-op expression table: the very
expressions its eager elementwise kernels are built from, so a fused step computes what the
eager kernel computes. CUDA/HIP take codegen/elementwise.py's ``OPS`` (``CUDA`` below); the xpu
plugin builds its OpenCL dialect from its own table (the CPU plugin's .def lines,
backend_intel's kernels/_shared.py) with ``opencl``. No op is written here.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass, field

from ..codegen.elementwise import OPS

C_TYPES = {"float32": "float", "float64": "double", "bool": "em_u8"}
TOKENS = {"float32": "f32", "float64": "f64"}


@dataclass(frozen=True)
class Dialect:
    name: str
    # op -> {dtype token: expression over x (unary) or a, b, c, of compute type ``ct``}
    expressions: dict = field(repr=False)
    # a step function's first line: binds the expression's parameters (p0 p1 p2; the status
    # word of integer ops is not bound: fusion takes floating chains only)
    params: str
    fn: str  # a device function's qualifier
    kernel: str  # a kernel's qualifier
    space: str  # the address space of a pointer argument ("" or "global ")
    i64: str  # the 64-bit integer type
    u8: str  # the bool storage type
    acc: str  # what a row sum accumulates in
    gid: str  # this work-item's index in the grid (dimension 0)
    gsize: str  # work-items in the grid (dimension 0)
    group: tuple  # this work-group's index in grid dimensions 0 and 1
    groups: str  # work-groups in the grid (dimension 0)
    lid: str  # the work-item's index in its group (dimension 0)
    lsize: str  # work-items per group (dimension 0)
    shared: str  # the qualifier of an array a work-group shares
    barrier: str  # a work-group barrier over that memory
    gbarrier: str  # a work-group barrier that also orders the group's global memory writes
    table: str  # a constant table at file scope: format with type, name, size, values
    offsets: bool  # a pointer argument is (buffer, element offset): OpenCL has no addresses
    status: str  # the parameter of the device's status word (the eager index kernels' own)
    fail: str  # a statement reporting index ``{0}`` out of range into it
    bits: dict = field(repr=False)  # dtype -> format of a value from its bits (inf, NaN)

    def pointer(self, ctype: str, name: str, const: bool) -> list:
        """The parameter declarations of one tensor argument ``name``."""
        qual = "const " if const else ""
        if self.offsets:
            return [f"{self.space}{qual}{ctype} *{name}_", f"{self.i64} {name}_o"]
        return [f"{qual}{ctype} *{name}"]

    def base(self, ctype: str, name: str, const: bool) -> str:
        """A line making ``name`` the tensor's first element (OpenCL adds its offset)."""
        qual = "const " if const else ""
        if self.offsets:
            return f"    {self.space}{qual}{ctype} *{name} = {name}_ + {name}_o;"
        return ""

    def ctype(self, dtype: str) -> str:
        """The C type a tensor of ``dtype`` is stored as (a bool as bytes)."""
        return {"bool": self.u8, "int64": self.i64}.get(dtype) or C_TYPES[dtype]

    def literal(self, value, dtype: str) -> str:
        """A scalar operand in the compute type, rounded as the eager glue rounds it."""
        ct = C_TYPES[dtype]
        value = float(value)
        if math.isfinite(value):
            if dtype == "float32":
                return f"(({ct}){float(struct.unpack('<f', struct.pack('<f', value))[0]).hex()}f)"
            return f"(({ct}){value.hex()})"
        pack, fmt = ("<f", "<I") if dtype == "float32" else ("<d", "<Q")
        raw = struct.unpack(fmt, struct.pack(pack, value))[0]
        return self.bits[dtype].format(raw)


def _cuda_expressions() -> dict:
    found = {name: {t: loop.expr for t, loop in op.dtypes().items()} for name, op in OPS.items()}
    # the eager where copies storage bits (no expression); in registers it is a select
    found["where"] = dict.fromkeys(TOKENS.values(), "a ? b : c")
    return found


def _cuda(name: str) -> Dialect:
    return Dialect(
        name=name,
        expressions=_cuda_expressions(),
        params="const double p0 = {0}, p1 = {1}, p2 = {2}; (void)p0; (void)p1; (void)p2;",
        fn="EM_DEV",
        kernel="EM_KERNEL",
        space="",
        i64="em_i64",
        u8="em_u8",
        acc="double",
        gid="((em_i64)blockIdx.x * blockDim.x + threadIdx.x)",
        gsize="((em_i64)gridDim.x * blockDim.x)",
        group=("blockIdx.x", "blockIdx.y"),
        groups="gridDim.x",
        lid="threadIdx.x",
        lsize="blockDim.x",
        shared="__shared__",
        barrier="__syncthreads()",
        gbarrier="__syncthreads()",
        table="static __device__ const {0} {1}[{2}] = {{{3}}};",
        offsets=False,
        status="int *em_st",
        fail="*em_st = EM_INDEX_OUT_OF_RANGE;",  # the glue finds the value (first_outside)
        bits={"float32": "__uint_as_float({0}u)", "float64": "__longlong_as_double({0}ll)"},
    )


CUDA = _cuda("cuda")
HIP = _cuda("hip")


def opencl(lines) -> Dialect:
    """The xpu dialect from its ``(op, dtype family tokens, expression)`` lines: the
    expressions read ``p->f[0..2]`` and the helpers of backend_intel's clc/ewmath.cl."""
    expressions: dict = {}
    for op, tokens, expression in lines:
        for token in tokens:
            expressions.setdefault(op, {})[token] = expression
    return Dialect(
        name="opencl",
        expressions=expressions,
        params="em_params P = {{{{{0}, {1}, {2}, 0}}, {{0, 0, 0, 0}}, 0}}; em_params *p = &P; "
        "(void)p;",
        fn="inline",
        kernel="kernel void",
        space="global ",
        i64="long",
        u8="uchar",
        acc="EM_ACC",
        gid="get_global_id(0)",
        gsize="get_global_size(0)",
        group=("get_group_id(0)", "get_group_id(1)"),
        groups="get_num_groups(0)",
        lid="get_local_id(0)",
        lsize="get_local_size(0)",
        shared="local",
        barrier="barrier(CLK_LOCAL_MEM_FENCE)",
        gbarrier="barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE)",
        table="constant {0} {1}[{2}] = {{{3}}};",
        offsets=True,
        status="global long *em_st",
        fail="em_fail(em_st, EM_INDEX_OUT_OF_RANGE, {0});",
        bits={"float32": "as_float({0}u)", "float64": "as_double({0}ul)"},
    )


# The OpenCL source's head after ember.h: a row sum's accumulator (double where the device has it)
OPENCL_HEAD = "#ifdef EM_FP64\n#define EM_ACC double\n#else\n#define EM_ACC float\n#endif\n"
