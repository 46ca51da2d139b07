"""The variable-draw samplers (``_standard_gamma``, ``poisson``, ``binomial``) for every GPU
target, from the one description every device shares: the CPU plugin's ``csrc/samplers.h`` and
``csrc/philox.h`` (docs/random.md, "Samplers with a variable number of draws"). Element ``i`` of a
call owns the Philox counters ``(blk, i, k)``, k = 1, 2, ..., so rejection loops of any length
stay reproducible and independent of the launch, and a device's streams are the CPU's.

Those headers are written in the C that CUDA C++ (nvcc, hiprtc, the emulator's g++) and OpenCL C
also accept; a target adds a few lines of ``SHIMS`` (integer names, the function qualifier, NaN)
and its kernel loop (loads and stores):

    >>> modules()["samplers"]()             # the CUDA/HIP module: (text, [(kernel, format)])
    >>> opencl_source("poisson", "f32")     # one OpenCL program (backend_intel compiles it)

The kernels take a contiguous ``out`` and contiguous parameters of its shape and dtype (the
runner, dispatcher/kinds/factory.py ``_sample``, makes them so).
"""

from __future__ import annotations

import functools
import re
from importlib import resources

FLOATS = ("f16", "bf16", "f32", "f64")
SOURCES = ("philox.h", "samplers.h")  # in the CPU plugin's csrc, read as text

# What the CPU's C gets from <stdint.h> and <tgmath.h>, per target. CUDA's names are macros, not
# typedefs: the emulator's g++ already has the system's uint64_t (unsigned long, not em_u64).
SHIMS = {
    "cuda": r"""
#define uint32_t em_u32
#define uint64_t em_u64
#define int64_t em_i64
#define EM_DEVICE_FN EM_DEV
#define EM_NAN_f __int_as_float(0x7fc00000)
#define EM_NAN_d __longlong_as_double(0x7ff8000000000000LL)
#define EM_SAMPLER_F64 1
""",
    "opencl": r"""
#define EM_DEVICE_FN inline
#define EM_NAN_f as_float(0x7fc00000u)
#ifdef EM_FP64
#define EM_NAN_d as_double(0x7ff8000000000000UL)
#define EM_SAMPLER_F64 1
#endif
""",
}


@functools.cache
def algorithms() -> str:
    """philox.h and samplers.h of the CPU plugin, their #include lines dropped (the shims and
    the targets' preludes stand for them)."""
    csrc = resources.files("ember_backend_cpu").joinpath("csrc")
    text = "".join(csrc.joinpath(name).read_text() for name in SOURCES)
    return re.sub(r"^#include .*$", "", text, flags=re.M)


# (op, kernel stem, parameters, the value of element i from its parameters x0, x1... and stream
# s; {P} is the gamma compute path: f for float16/bfloat16/float32, d for float64)
SAMPLERS = (
    ("_standard_gamma", "gamma", 1, "gamma_{P}(x0, &s)"),
    ("poisson", "poisson", 1, "poisson_d((double)x0, &s)"),
    ("binomial", "binomial", 2, "binomial_d((double)x0, (double)x1, &s)"),
)
BY_OP = {row[0]: row for row in SAMPLERS}


def _path(token: str) -> str:
    return "d" if token == "f64" else "f"


def kernel_name(op: str, token: str) -> str:
    return f"em_sample_{BY_OP[op][1]}_{token}"


def arg_format(op: str) -> str:
    """pycuda's format of a CUDA sampler kernel: out, the parameters, seed, blk, n."""
    return "P" * (1 + BY_OP[op][2]) + "QQq"


def _cuda_kernel(op: str, token: str) -> str:
    _, _, arity, expr = BY_OP[op]
    t = f"em_{token}_t"
    params = "".join(f"const char *p{k}, " for k in range(arity))
    loads = "".join(
        f"        {t}::ct x{k} = {t}::ld((({t}::st const *)p{k})[i]);\n" for k in range(arity)
    )
    return (
        f"EM_KERNEL {kernel_name(op, token)}(char *out, {params}em_u64 seed, em_u64 blk, "
        f"em_i64 n) {{\n    EM_FOR_EACH(i, n) {{\n{loads}"
        f"        em_stream s = stream_at(seed, blk, i);\n"
        f"        (({t}::st *)out)[i] = {t}::sv({expr.replace('{P}', _path(token))});\n    }}\n}}\n"
    )


def _cuda_module() -> tuple[str, list]:
    parts, kernels = [SHIMS["cuda"], algorithms()], []
    for op, *_ in SAMPLERS:
        for token in FLOATS:
            parts.append(_cuda_kernel(op, token))
            kernels.append((kernel_name(op, token), arg_format(op)))
    return "".join(parts), kernels


def modules() -> dict:
    return {"samplers": _cuda_module}


def opencl_source(op: str, token: str) -> str:
    """One OpenCL program, kernel ``sample(o, oo, p0, po0, [p1, po1,] n, seed, blk)``: buffers
    with element offsets, then the element count, the seed and the Philox block. It needs
    clc/ember.h before it (backend_intel's programs prepend it)."""
    _, _, arity, expr = BY_OP[op]
    params = "".join(f"global const ST(T) *p{k}, long po{k}, " for k in range(arity))
    loads = "".join(f"        CT(T) x{k} = LD(T, p{k}, po{k} + i);\n" for k in range(arity))
    kernel = (
        f"kernel void sample(global ST(T) *o, long oo, {params}long n, ulong seed, ulong blk) {{\n"
        f"    for (long i = get_global_id(0); i < n; i += get_global_size(0)) {{\n{loads}"
        f"        em_stream s = stream_at(seed, blk, i);\n"
        f"        SV(T, o, oo + i, {expr.replace('{P}', _path(token))});\n    }}\n}}\n"
    )
    return f"#define T {token}\n" + SHIMS["opencl"] + algorithms() + kernel
