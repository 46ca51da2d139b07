"""The CPU layer_norm kernel (csrc/nn.c) against PyTorch: every float dtype, with and without
weight and bias, one and two normalised dims, empty and one-row inputs, rows with a large mean,
and a weight of another dtype (the runner sends that to the decomposition, which promotes).

The oracle is PyTorch's float64 layer_norm of the inputs rounded to the dtype: with a mean of
1000, PyTorch's own float32 kernel is 4.5e-5 off it (its float32 mean rounds), ember's 4e-7
(it corrects the mean from the centred row)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from ember_backend_cpu._kernels import lib

import ember
from ember.dispatcher.optable import OPS

TOL = {"float32": 1e-5, "float64": 1e-12, "bfloat16": 2e-2, "float16": 2e-3}
CASES = [((4, 7, 33), (33,)), ((3, 5, 6), (5, 6)), ((2, 130), (130,)), ((0, 4), (4,)), ((5,), (5,))]


def test_the_cpu_backend_has_the_kernel():
    assert OPS["layer_norm"].kernel("cpu", ember.float32) is not None
    # no integer kernels
    assert lib.ember_layer_norm(ember.int32.code, 0, 0, 0, 0, 1, 1, 0, 0, 1e-5) != 0
    assert OPS["native_layer_norm_backward"].kernel("cpu", ember.float32) is not None
    assert lib.ember_layer_norm_backward(ember.int32.code, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1) != 0


@pytest.mark.parametrize("dtype", list(TOL))
@pytest.mark.parametrize("affine", ["none", "weight", "bias", "both"])
@pytest.mark.parametrize("shape,normalized", CASES, ids=str)
def test_layer_norm_matches_pytorch(dtype, affine, shape, normalized):
    rng = np.random.default_rng(7)
    x = rng.standard_normal(shape) * 3 + 1000  # a large mean: a one-pass variance cancels
    w, b = rng.standard_normal(normalized), rng.standard_normal(normalized)
    w = w if affine in ("weight", "both") else None
    b = b if affine in ("bias", "both") else None

    args = [None if t is None else ember.tensor(t).to(getattr(ember, dtype)) for t in (x, w, b)]
    ours = ember.nn.functional.layer_norm(args[0], normalized, args[1], args[2])
    exact = [None if t is None else torch.from_numpy(t.double().numpy()) for t in args]
    theirs = torch.nn.functional.layer_norm(exact[0], normalized, exact[1], exact[2])
    assert ours.dtype == getattr(ember, dtype) and tuple(ours.shape) == tuple(theirs.shape)
    tol = TOL[dtype]
    np.testing.assert_allclose(ours.double().numpy(), theirs.numpy(), rtol=tol, atol=4 * tol)


def test_weight_of_another_dtype_promotes_as_before():
    x, w = ember.randn(3, 8), ember.randn(8, dtype=ember.float64)
    got = ember.nn.functional.layer_norm(x, (8,), w)
    want = torch.nn.functional.layer_norm(torch.from_numpy(x.numpy()), (8,))
    want = want.double() * torch.from_numpy(w.numpy())
    np.testing.assert_allclose(got.double().numpy(), want.numpy(), rtol=1e-5, atol=1e-5)
