"""``ember._scaled_mm`` against ``torch._scaled_mm`` on the CPU: results (both are a float32
matmul of the upcast, scaled operands; the BLAS sums in its own order, so a result may differ by
an ulp of its dtype), output dtypes, and PyTorch's errors."""

from __future__ import annotations

import numpy as np
import pytest

import ember

from .test_limited import to_ember

torch = pytest.importorskip("torch")

# One ulp of each output dtype, relative (float8 results may round the other way at a tie).
RTOL = {"float32": 1e-5, "float16": 1e-3, "bfloat16": 8e-3, "float8_e4m3fn": 0.125}
RTOL["float8_e5m2"] = 0.25
OUT = [None, "float32", "bfloat16", "float16", "float8_e4m3fn", "float8_e5m2"]


def operands(gen, m=16, k=32, n=8, a="float8_e4m3fn", b="float8_e5m2"):
    mat_a = (torch.randn(m, k, generator=gen) * 2).to(getattr(torch, a))
    mat_b = (torch.randn(n, k, generator=gen) * 2).to(getattr(torch, b)).t()  # column-major
    return mat_a, mat_b


def call_both(*args, **kwargs):
    want = torch._scaled_mm(*args, **kwargs)
    converted = {
        key: to_ember(v) if isinstance(v, torch.Tensor) else getattr(ember, str(v).split(".")[1])
        for key, v in kwargs.items()
    }
    got = ember._scaled_mm(*[to_ember(a) for a in args], **converted)
    name = str(want.dtype).split(".")[1]
    assert got.dtype is getattr(ember, name)
    np.testing.assert_allclose(
        got.float().numpy(), want.float().numpy(), rtol=RTOL[name], atol=1e-5
    )


@pytest.mark.parametrize("out_dtype", OUT)
@pytest.mark.parametrize("row_wise", [False, True])
def test_scaled_mm_matches_torch(out_dtype, row_wise):
    gen = torch.Generator().manual_seed(0)
    mat_a, mat_b = operands(gen)
    if row_wise:
        scale_a, scale_b = torch.rand(16, 1, generator=gen) + 0.5, torch.rand(1, 8, generator=gen)
    else:
        scale_a, scale_b = torch.tensor(0.5), torch.tensor(1.75)
    kwargs = {} if out_dtype is None else {"out_dtype": getattr(torch, out_dtype)}
    call_both(mat_a, mat_b, scale_a, scale_b, **kwargs)


@pytest.mark.parametrize("out_dtype", [None, "float8_e4m3fn", "float8_e5m2", "float32"])
def test_scale_result_and_bias(out_dtype):
    gen = torch.Generator().manual_seed(1)
    mat_a, mat_b = operands(gen, a="float8_e5m2", b="float8_e4m3fn")
    kwargs = {"bias": torch.randn(8, generator=gen), "scale_result": torch.tensor(4.0)}
    if out_dtype is not None:
        kwargs["out_dtype"] = getattr(torch, out_dtype)
    call_both(mat_a, mat_b, torch.tensor(0.25), torch.tensor(2.0), **kwargs)
    bf16 = {"bias": torch.randn(8, generator=gen).bfloat16(), "out_dtype": torch.bfloat16}
    call_both(mat_a, mat_b, torch.tensor(0.25), torch.tensor(2.0), **bf16)


def _errors(mat_a, mat_b, scale_a, scale_b, **kwargs):
    with pytest.raises(Exception) as want:
        torch._scaled_mm(mat_a, mat_b, scale_a, scale_b, **kwargs)
    with pytest.raises(Exception) as got:
        ember._scaled_mm(to_ember(mat_a), to_ember(mat_b), to_ember(scale_a), to_ember(scale_b))
    return want.value, got.value


@pytest.mark.parametrize(
    "case", ["scale shape", "scale dtype", "float32 operand", "inner sizes", "transposed rows"]
)
def test_errors_match_torch(case):
    gen = torch.Generator().manual_seed(2)
    mat_a, mat_b = operands(gen)
    one = torch.tensor(1.0)
    args = {
        "scale shape": (mat_a, mat_b, torch.ones(2), one),
        "scale dtype": (mat_a, mat_b, one.half(), one),
        "float32 operand": (mat_a.float(), mat_b, one, one),
        "inner sizes": (mat_a, mat_b[:16], one, one),
        "transposed rows": (mat_a, mat_b, torch.ones(1, 16), torch.ones(1, 8)),
    }[case]
    want, got = _errors(*args)
    assert type(got) is type(want)
    assert str(got) == str(want)


def test_bias_size_error():
    gen = torch.Generator().manual_seed(3)
    mat_a, mat_b = operands(gen)
    one, bias = torch.tensor(1.0), torch.ones(7)
    with pytest.raises(RuntimeError, match="Bias must be size 8 but got 7"):
        torch._scaled_mm(mat_a, mat_b, one, one, bias=bias)
    with pytest.raises(RuntimeError, match="Bias must be size 8 but got 7"):
        ember._scaled_mm(
            to_ember(mat_a), to_ember(mat_b), to_ember(one), to_ember(one), bias=to_ember(bias)
        )
