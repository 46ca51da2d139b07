"""``_scaled_mm``: the float8 matmul of PyTorch (``torch._scaled_mm``), as its CPU build runs it.

PyTorch's CPU kernel (aten/src/ATen/native/Blas.cpp, ``_scaled_mm_out_cpu_emulated``) is itself
an emulation: both float8 operands upcast to float32 and multiplied by their scales, a float32
matmul, the bias added, and, for a float8 ``out_dtype`` given explicitly, the result divided by
``scale_result``; then one cast to the output dtype. This row is that decomposition over ember's
ops, so it runs on every device with float32 matmul. Scales are tensor-wise (one float32 value
each) or row-wise (``scale_a`` of shape (M, 1) and ``scale_b`` of shape (1, N), contiguous).
"""

from __future__ import annotations

import numpy as np

from ember import _dtype as dt

from ..opdef import OUT_EXACT, Kind, OpDef, Promotion

_SCALED_OUT = (dt.float8_e4m3fn, dt.float8_e5m2)  # the out dtypes scale_result applies to


def _shape_text(t) -> str:
    return str(list(t.shape))


def _scaling_error(mat_a, mat_b, scale_a, scale_b) -> ValueError:
    m, n = mat_a.shape[0], mat_b.shape[1]
    names = dt.SCALAR_NAMES
    return ValueError(
        "Invalid scaling configuration.\n"
        "- For TensorWise scaling, a and b should be float8, scales should be float and "
        "singletons.\n"
        "- For RowWise scaling, a and b should be float8, scales should be float, scale_a "
        f"should be ({m}, 1) and scale_b should be (1, {n}), and both should be contiguous.\n"
        f"Got mat_a.dtype()={names[mat_a.dtype]}, scale_a.dtype()={names[scale_a.dtype]}, "
        f"scale_a.size()={_shape_text(scale_a)}, scale_a.stride()={list(scale_a.stride())}, "
        f"mat_b.dtype()={names[mat_b.dtype]}, scale_b.dtype()={names[scale_b.dtype]}, "
        f"scale_b.size()={_shape_text(scale_b)} and scale_b.stride()={list(scale_b.stride())}"
    )


def _check(mat_a, mat_b, scale_a, scale_b, bias) -> None:
    if mat_a.dim() != 2:
        raise RuntimeError("mat1 must be a matrix")
    if mat_b.dim() != 2:
        raise RuntimeError("mat2 must be a matrix")
    if mat_a.shape[1] != mat_b.shape[0]:
        raise RuntimeError(
            f"mat_a and mat_b shapes cannot be multiplied ({mat_a.shape[0]}x{mat_a.shape[1]} "
            f"and {mat_b.shape[0]}x{mat_b.shape[1]})"
        )
    float8 = mat_a.dtype in dt.FLOAT8 and mat_b.dtype in dt.FLOAT8
    floats = scale_a.dtype is dt.float32 and scale_b.dtype is dt.float32
    tensor_wise = scale_a.numel() == 1 and scale_b.numel() == 1
    row_wise = (
        tuple(scale_a.shape) == (mat_a.shape[0], 1)
        and tuple(scale_b.shape) == (1, mat_b.shape[1])
        and scale_a.is_contiguous()
        and scale_b.is_contiguous()
    )
    if not (float8 and floats and (tensor_wise or row_wise)):
        raise _scaling_error(mat_a, mat_b, scale_a, scale_b)
    if bias is not None and bias.numel() != mat_b.shape[1]:
        raise RuntimeError(f"Bias must be size {mat_b.shape[1]} but got {bias.numel()}")


def _scaled_mm(
    mat_a, mat_b, scale_a, scale_b, bias=None, scale_result=None, out_dtype=None, fast=False
):
    _check(mat_a, mat_b, scale_a, scale_b, bias)
    out = (mat_a.float() * scale_a) @ (mat_b.float() * scale_b)
    if bias is not None:
        out = out + bias.float()
    if scale_result is not None and out_dtype in _SCALED_OUT:  # PyTorch ignores it otherwise
        out = out * (1.0 / scale_result.float())
    return out.to(out_dtype or mat_a.dtype)


def _np_scaled_mm(
    mat_a, mat_b, scale_a, scale_b, bias=None, scale_result=None, out_dtype=None, fast=False
):
    f32 = np.float32
    out = (mat_a.astype(f32) * scale_a.astype(f32)) @ (mat_b.astype(f32) * scale_b.astype(f32))
    if bias is not None:
        out = out + bias.astype(f32)
    if scale_result is not None and out_dtype in _SCALED_OUT:
        out = out * (f32(1) / scale_result.astype(f32))
    return out.astype((out_dtype or dt.from_numpy_dtype(mat_a.dtype)).np)


ROWS = [
    OpDef(
        "_scaled_mm(Tensor input, Tensor mat2, Tensor scale_a, Tensor scale_b, Tensor? bias=None, "
        "Tensor? scale_result=None, ScalarType? out_dtype=None, bool use_fast_accum=False) "
        "-> Tensor",
        Kind.MATMUL,
        _np_scaled_mm,
        promotion=Promotion.KEEP,
        dtypes=frozenset(dt.FLOAT8 + dt.FLOATS),
        differentiable=False,
        decomposition=_scaled_mm,
        method=False,
        samples="scaled_mm",
        out=OUT_EXACT,  # out's dtype must be the result's ("out_dtype must match output...")
        notes="float8 matmul: float32 upcast times tensor-wise or row-wise scales, float32 "
        "matmul, bias, 1/scale_result for a float8 out_dtype, one cast (PyTorch's CPU way)",
    ),
]
