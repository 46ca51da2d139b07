"""F.scaled_mm / F.scaled_grouped_mm and the ScalingType / SwizzleType enums against torch 2.13
on the CPU: tensor-wise and row-wise float8 products (bias, output dtypes) equal within one ulp
of the output dtype, and the recipes PyTorch's CPU refuses refused with its error."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember

F = ember.nn.functional
TF = torch.nn.functional


def test_the_enums_have_torch_names_and_values():
    for ours, theirs in ((F.ScalingType, TF.ScalingType), (F.SwizzleType, TF.SwizzleType)):
        names = [n for n in dir(theirs) if not n.startswith("_") and n not in ("name", "value")]
        assert {n: getattr(theirs, n).value for n in names} == {m.name: m.value for m in ours}


def _operands(lib, recipe):
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((16, 32)), rng.standard_normal((8, 32))
    mat_a = lib.tensor(a, dtype=lib.float32).to(lib.float8_e4m3fn)
    mat_b = lib.tensor(b, dtype=lib.float32).to(lib.float8_e4m3fn).t()  # column-major
    if recipe == "TensorWise":
        scales = lib.tensor(0.5), lib.tensor(2.0)
    else:
        scales = (
            lib.tensor(rng.random((16, 1)), dtype=lib.float32),
            lib.tensor(rng.random((1, 8)), dtype=lib.float32),
        )
    return mat_a, mat_b, scales


@pytest.mark.parametrize("recipe", ["TensorWise", "RowWise"])
@pytest.mark.parametrize("output_dtype", ["bfloat16", "float32"])
@pytest.mark.parametrize("bias", [False, True])
def test_scaled_mm_matches_torch(recipe, output_dtype, bias):
    results = []
    for lib, functional in ((ember, F), (torch, TF)):
        mat_a, mat_b, (scale_a, scale_b) = _operands(lib, recipe)
        kind = getattr(functional.ScalingType, recipe)
        extra = {"bias": lib.ones(8, dtype=getattr(lib, output_dtype))} if bias else {}
        out = functional.scaled_mm(
            mat_a, mat_b, scale_a, kind, [scale_b], [kind],
            output_dtype=getattr(lib, output_dtype), **extra,
        )  # fmt: skip
        assert str(out.dtype).split(".")[1] == output_dtype
        results.append(out.float().numpy())
    ulp = 2.0**-7 if output_dtype == "bfloat16" else 2.0**-20
    np.testing.assert_allclose(results[0], results[1], rtol=ulp, atol=ulp)


@pytest.mark.parametrize(
    "recipes", [("TensorWise", "RowWise"), ("BlockWise1x32", "BlockWise1x32")], ids=str
)
def test_recipes_the_cpu_does_not_run_are_refused_as_torch_refuses_them(recipes):
    errors = []
    for lib, functional in ((ember, F), (torch, TF)):
        mat_a, mat_b, _ = _operands(lib, "RowWise")
        scale_a, scale_b = lib.ones(16, 1), lib.ones(1, 8)
        kinds = [getattr(functional.ScalingType, r) for r in recipes]
        with pytest.raises(ValueError) as error:
            functional.scaled_mm(mat_a, mat_b, scale_a, kinds[0], scale_b, kinds[1])
        errors.append(str(error.value).split("\nGot")[0])
    assert errors[0] == errors[1]


def test_scaled_grouped_mm_has_no_cpu_kernel_in_either_library():
    for lib, functional in ((ember, F), (torch, TF)):
        mat_a = lib.ones(32, 16).to(lib.float8_e4m3fn)
        mat_b = lib.ones(2, 8, 16).to(lib.float8_e4m3fn).transpose(-2, -1)
        offs = lib.tensor([16, 32], dtype=lib.int32)
        kind = functional.ScalingType.RowWise
        with pytest.raises(NotImplementedError, match="_scaled_grouped_mm_v2"):
            functional.scaled_grouped_mm(
                mat_a, mat_b, lib.ones(32), kind, lib.ones(2, 8), kind, offs=offs
            )
