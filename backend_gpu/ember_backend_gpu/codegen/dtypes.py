"""The dtype vocabulary of the generated kernels: one row per ember dtype.

Codes are ``ember.dtype.code`` (the CPU backend's C enum uses the same numbers). Every kernel is
instantiated per dtype *token* (``f32``, ``i64``...) through a traits struct ``em_<token>`` in
the prelude: storage type ``st``, compute type ``ct``, ``ld`` (storage -> compute) and ``sv``
(any value -> storage). Half types compute in float, integers in their own width, bool as int:
the CPU backend's rules (backend_cpu's ember_cpu.h), so results agree bit for bit where the
arithmetic is exact.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Dtype:
    token: str  # short name in kernel names: em_unary_exp_f32
    code: int  # ember.dtype.code
    name: str  # ember dtype name, the key of kernel tables
    itemsize: int
    storage: str  # C type of one stored element
    compute: str  # C type arithmetic happens in
    floating: bool


DTYPES = (
    Dtype("b", 0, "bool", 1, "em_u8", "int", False),
    Dtype("u8", 1, "uint8", 1, "em_u8", "em_u8", False),
    Dtype("i8", 2, "int8", 1, "em_i8", "em_i8", False),
    Dtype("i16", 3, "int16", 2, "em_i16", "em_i16", False),
    Dtype("i32", 4, "int32", 4, "em_i32", "em_i32", False),
    Dtype("i64", 5, "int64", 8, "em_i64", "em_i64", False),
    Dtype("f16", 6, "float16", 2, "em_u16", "float", True),
    Dtype("bf16", 7, "bfloat16", 2, "em_u16", "float", True),
    Dtype("f32", 8, "float32", 4, "float", "float", True),
    Dtype("f64", 9, "float64", 8, "double", "double", True),
)
BY_TOKEN = {d.token: d for d in DTYPES}
BY_NAME = {d.name: d for d in DTYPES}
BY_CODE = {d.code: d for d in DTYPES}

# Dtype families, by the names the CPU backend's .def files use (EM_FOR_FLOAT...).
FAMILIES = {
    "b": ("b",),
    "FLOAT": ("f16", "bf16", "f32", "f64"),
    "SINT": ("i8", "i16", "i32", "i64"),
    "INT": ("u8", "i8", "i16", "i32", "i64"),
    "INTB": ("b", "u8", "i8", "i16", "i32", "i64"),
    "NUM": ("u8", "i8", "i16", "i32", "i64", "f16", "bf16", "f32", "f64"),
    "SNUM": ("i8", "i16", "i32", "i64", "f16", "bf16", "f32", "f64"),
    "ALL": ("b", "u8", "i8", "i16", "i32", "i64", "f16", "bf16", "f32", "f64"),
}


def family(name: str) -> tuple[Dtype, ...]:
    return tuple(BY_TOKEN[t] for t in FAMILIES[name])
