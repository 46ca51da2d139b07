"""softmax on float16/bfloat16 (csrc/nn.c widens each row to float32 first): against PyTorch on
rows a causal mask fills with -inf, scores whose exponentials underflow to subnormals, an
all -inf row, NaN, and a softmax dim that is not the last."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember

F = ember.nn.functional
DTYPES = [(ember.bfloat16, torch.bfloat16), (ember.float16, torch.float16)]


def scores() -> np.ndarray:
    rng = np.random.default_rng(7)
    x = rng.standard_normal((3, 2, 40, 40)).astype(np.float32) * 4
    x[..., np.triu_indices(40, 1)[0], np.triu_indices(40, 1)[1]] = -np.inf  # causal mask
    x[0, 0, 5, :] = -np.inf  # every score masked: PyTorch gives NaN
    x[0, 1, 7, 3] = np.nan
    x[1, 0, 9, :10] = -100.0  # exp underflows to float32 subnormals
    return x


@pytest.mark.parametrize("dim", [-1, 2])
@pytest.mark.parametrize(("ours", "theirs"), DTYPES, ids=["bfloat16", "float16"])
def test_half_softmax_matches_pytorch(ours, theirs, dim):
    x = scores()
    got = F.softmax(ember.from_numpy(x).to(ours), dim)
    want = torch.softmax(torch.from_numpy(x).to(theirs), dim)
    assert got.dtype == ours
    np.testing.assert_allclose(
        got.float().numpy(), want.float().numpy(), rtol=2**-7, atol=1e-6, equal_nan=True
    )
