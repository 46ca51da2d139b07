"""The kernel generator (ember_backend_gpu.codegen), checked without a GPU or a compiler: every
op and dtype has its kernel, the glue's table matches the CPU backend's coverage, argument
formats agree with the C signatures, and the HIP target differs only in its prelude."""

from __future__ import annotations

import re
import struct

import pytest
from ember_backend_gpu import codegen
from ember_backend_gpu.codegen import elementwise as ew
from ember_backend_gpu.codegen.dtypes import BY_TOKEN, DTYPES
from ember_backend_gpu.codegen.prelude import TARGETS

# The primitive ops of docs (backend contract) plus the fused composites this backend serves.
PRIMITIVE_NAMES = """
abs acos acosh add addcdiv addcmul all amax amin any arange argmax argmin asin asinh atan atan2
atanh bitwise_and bitwise_left_shift bitwise_not bitwise_or bitwise_right_shift bitwise_xor bmm
ceil celu clamp copy_ copysign cos cosh cumprod cumsum div div_trunc elu eq erf erfc exp exp2
expm1 fill_ floor floor_divide fmax fmin fmod frac gather ge gelu gt hardsigmoid hardswish
hardtanh hypot index_add index_select isfinite isinf isnan le leaky_relu lerp linspace log log10
log1p log2 logaddexp logical_and logical_not logical_or logical_xor logsigmoid lt max maximum
min minimum mish mm mul nan_to_num ne neg nextafter nonzero normal_ pow prod put_ random_
reciprocal relu relu6 remainder round rsqrt scatter scatter_add searchsorted selu sigmoid sign
silu sin sinh softplus softsign sort sqrt square sub sum take tan tanh trunc uniform_ where
xlogy
"""
PRIMITIVES = PRIMITIVE_NAMES.split()
FUSED = ["softmax", "log_softmax", "im2col", "col2im", "max_pool2d_with_indices",
         "_amp_foreach_non_finite_check_and_unscale_", "_amp_update_scale_"]  # fmt: skip

# C type of each pycuda format character, for checking formats against signatures.
FORMAT_SIZES = {"P": 8, "q": 8, "Q": 8, "d": 8, "i": 4}
STRUCT_SIZES = {"em_nd": 688, "em_red": 680, "em_rows": 424, "em_ix": 672, "em_lines": 560,
                "em_search": 552, "em_conv": 160, "em_mm": 80, "em_amp_list": 520}  # fmt: skip
PARAM_SIZES = {"double": 8, "em_i64": 8, "em_u64": 8, "int": 4, **STRUCT_SIZES}


class _Table:
    """The CUDA glue's kernel table, built over a runtime that is never called."""

    def make_blas(self):
        return None


@pytest.fixture(scope="module")
def table():
    from ember_backend_gpu.kernels import build_table

    return build_table(_Table())


def test_every_primitive_and_fused_op_has_kernels(table):
    missing = [op for op in PRIMITIVES + FUSED if op not in table]
    assert not missing, f"no CUDA kernels for {missing}"


def test_dtype_coverage_matches_the_cpu_backend(table):
    pytest.importorskip("ember_backend_cpu")
    from ember_backend_cpu import _kernels
    from ember_backend_cpu.kernels import build_table as cpu_table

    from ember import _dtype as ember_dtypes

    # float8 and uint16/32/64 have PyTorch's limited support: their casts run on the CPU, and
    # other devices move their bits (docs/float8.md), so only the CPU has kernels for them.
    limited = {d.name for d in ember_dtypes.LIMITED}
    reference = {
        op: set(kernels) - limited for op, kernels in cpu_table(_kernels.ffi, _kernels.lib).items()
    }
    differ = {
        op: (sorted(reference[op] ^ set(kernels)))
        for op, kernels in table.items()
        if op in reference and reference[op] != set(kernels)
    }
    assert not differ, f"dtypes differ from the CPU backend's: {differ}"


def test_kernel_dtypes_follow_the_op_table(table):
    from ember.dispatcher.optable import OPS

    for op, kernels in table.items():
        allowed = {d.name for d in OPS[op].dtypes}
        assert set(kernels) <= allowed, (op, set(kernels) - allowed)


def test_one_description_per_elementwise_op():
    """Each elementwise op is one table row; its module holds one kernel per dtype it lists."""
    for op in ew.OPS.values():
        names = {k for k, _ in codegen.kernels(f"ew.{op.name}")}
        assert names == {ew.kernel_name(op.name, t) for t in op.dtypes()}
        assert codegen.module_of(ew.kernel_name(op.name, next(iter(op.dtypes())))) == (
            f"ew.{op.name}"
        )


def _signature_size(params: str) -> int:
    size = 0
    for param in (p.strip() for p in params.split(",") if p.strip()):
        kind = "P" if "*" in param else param.rsplit(" ", 1)[0].replace("const ", "")
        width = 8 if kind == "P" else PARAM_SIZES[kind]
        size = -(-size // min(width, 8)) * min(width, 8) + width
    return size


def test_argument_formats_match_signatures():
    """pycuda packs arguments by the format; the bytes must line up with the C parameters."""
    pattern = re.compile(r"EM_KERNEL (\w+)\(([^)]*)\)")
    for module in codegen.module_names():
        body = codegen.body(module)
        signatures = dict(pattern.findall(body))
        for kernel, fmt in codegen.kernels(module):
            assert struct.calcsize(fmt) == _signature_size(signatures[kernel]), (kernel, fmt)


def test_hip_target_shares_the_kernels():
    for module in ("ew.add", "reduce.sum", "sort"):
        cuda, hip = codegen.source(module, "cuda"), codegen.source(module, "hip")
        assert cuda.endswith(codegen.body(module)) and hip.endswith(codegen.body(module))
        assert "hip/hip_runtime.h" in hip and "asm(" not in hip
        assert "#include" not in cuda  # no system header: NVRTC-friendly
    with pytest.raises(ValueError, match="unknown kernel target"):
        codegen.source("ew.add", "opencl")
    assert set(TARGETS) == {"cuda", "hip"}


def test_generator_output_for_every_op():
    """Every module renders for both targets and names each kernel once."""
    seen = set()
    for module in codegen.module_names():
        for target in TARGETS:
            assert "EM_KERNEL" in codegen.source(module, target)
        for kernel, _ in codegen.kernels(module):
            assert kernel not in seen
            seen.add(kernel)
    assert len(seen) > 900


@pytest.mark.parametrize("token", [d.token for d in DTYPES])
def test_traits_exist_for_every_dtype(token):
    assert f"struct em_{token}_t" in codegen.source("ew.add") or f"(em_{token}_t," in (
        codegen.source("ew.add")
    )
    assert BY_TOKEN[token].itemsize in (1, 2, 4, 8)


def test_checked_loops_are_the_integer_divisions():
    checked = {
        (op.name, loop.family) for op in ew.OPS.values() for loop in op.loops if loop.checked
    }
    assert checked == {(name, "INT") for name in
                       ("div_trunc", "floor_divide", "remainder", "fmod", "pow")}  # fmt: skip
